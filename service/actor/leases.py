"""Holding the leases of one actor run (one item, or a batch's items): a thread that renews
them all every third of their length, and the write guard that records the run's new
files under its first lease and refuses a commit once any lease is lost.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence

from icefloe.base.errors import OperationFailed
from icefloe.state.intents import Intents
from icefloe.state.queue import Lease, PriorityQueue

log = logging.getLogger("icefloe.actor")


class Renewer(threading.Thread):
    """Renews the leases of one run (one item, or a batch's: one pipelined call) until
    stopped; notes when a lease was lost."""

    def __init__(
        self,
        queue: PriorityQueue,
        leases: Sequence[Lease],
        lease_seconds: float,
        clock: Callable[[], float],
        on_renew: Callable[[float], None],
    ):
        super().__init__(daemon=True, name=f"renew-{leases[0].item.id}")
        self.queue, self.leases, self.clock = queue, leases, clock
        self.lease_seconds = lease_seconds
        self.on_renew = on_renew
        self.stop_event = threading.Event()
        self.renewals = 0
        self.lost = False

    def run(self) -> None:
        while not self.stop_event.wait(self.lease_seconds / 3):
            try:
                if all(renew_all(self.queue, self.leases, self.clock(), self.lease_seconds)):
                    self.renewals += 1
                    self.on_renew(self.clock())  # a long action still shows a live actor
                else:
                    self.lost = True
                    log.warning("lease of %s lost", self.leases[0].item.id)
                    return
            except Exception as e:  # Redis blip: try again next period
                log.warning("lease renewal of %s failed: %s", self.leases[0].item.id, e)

    def finish(self) -> None:
        self.stop_event.set()
        self.join()


def renew_all(
    queue: PriorityQueue, leases: Sequence[Lease], now: float, lease_seconds: float
) -> list[bool]:
    """Renew each lease (a batch's in one pipelined call); which still hold."""
    if len(leases) == 1:
        lease = leases[0]
        return [queue.renew(lease.item.id, lease.token, now, lease_seconds)]
    return queue.renew_many([(x.item.id, x.token) for x in leases], now, lease_seconds)


class LeaseLost(OperationFailed):
    """The attempt no longer holds its item's lease: it must not write or commit."""


class LeaseGuard:
    """The write guard of one leased attempt (one item, or a batch: every lease of it): new
    files are recorded under the first lease before they are written
    (:mod:`icefloe.state.intents`), and a commit needs every lease renewed a moment before (an
    attempt whose lease expired may have its files deleted as an abandoned attempt's, and
    another actor may be running the same action)."""

    def __init__(
        self,
        queue: PriorityQueue,
        intents: Intents,
        lease: Lease | Sequence[Lease],
        lease_seconds: float,
        clock: Callable[[], float],
    ):
        self.queue, self.intents = queue, intents
        self.leases = [lease] if isinstance(lease, Lease) else list(lease)
        self.lease = self.leases[0]  # the intent's anchor
        self.lease_seconds, self.clock = lease_seconds, clock

    def before_write(self, paths: Sequence[str], prefixes: Sequence[str]) -> None:
        item = self.lease.item
        if not self.intents.record(
            item.id, self.lease.token, item.table, self.clock(), paths, prefixes
        ):
            raise LeaseLost(f"lease of {item.id} lost before writing; nothing written")

    def before_commit(self) -> None:
        held = renew_all(self.queue, self.leases, self.clock(), self.lease_seconds)
        if not all(held):
            lost = next(x.item.id for x, ok in zip(self.leases, held, strict=True) if not ok)
            raise LeaseLost(f"lease of {lost} lost before the commit; nothing committed")
