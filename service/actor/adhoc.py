"""Write intents for ad-hoc runs (``icefloe optimize``): no orphan after a crash there either.

An actor records its new files under its queue lease (:mod:`icefloe.state.intents`); an ad-hoc
run has no queue item, so it takes a lease of its own: a deadline in Redis that a
background thread renews while the run is alive. Before any byte is written, the new files
(or the one prefix Spark's writer writes under) are recorded under that lease; a commit
needs the lease renewed a moment before. The run ends one of three ways:

* **well** (committed, or every file deleted by the rewrite itself): the record is
  forgotten;
* **with an error**: the lease ends and the run's record is swept at once — the files that
  no snapshot references are deleted after reading the table (a commit whose reply was
  lost is read as committed there, and its files stay); a catalog still down keeps the
  record for the decider's sweep;
* **killed** (``kill -9``, a lost machine): the lease expires and the decider's leader
  sweeps the record like an abandoned actor's.

Redis unreachable at the start: the run goes on without a record (one warning line), as
before this module; its files would then be left for ``remove_orphan_files`` on a crash.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from icefloe.base.catalog import load_catalog
from icefloe.base.config import Config
from icefloe.base.errors import OperationFailed, ServiceUnavailable
from icefloe.base.redis_client import connect
from icefloe.jobs.maintenance.orphans import cleaner
from icefloe.jobs.rewrite.guard import NO_GUARD, WriteGuard
from icefloe.state.intents import ADHOC, AdhocLeases, Intent, sweep
from icefloe.state.open import open_state

log = logging.getLogger("icefloe.adhoc")

LEASE_SECONDS = 60.0
"""An ad-hoc run's lease: renewed every third of it; a killed run's files are swept once
it has passed."""


class AdhocLeaseLost(OperationFailed):
    """The run's lease expired (a paused process, Redis away): it must not write or commit."""


class AdhocGuard:
    """The write guard of one ad-hoc run on one table
    (:class:`icefloe.jobs.rewrite.guard.WriteGuard`)."""

    def __init__(
        self,
        leases: AdhocLeases,
        table: str,
        seconds: float = LEASE_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.leases, self.table, self.seconds, self.clock = leases, table, seconds, clock
        self.token = f"adhoc-{uuid.uuid4().hex}"
        self.item = ADHOC + self.token
        self._stop = threading.Event()
        self._renewer = threading.Thread(target=self._renew, daemon=True, name="adhoc-lease")

    def start(self) -> None:
        self.leases.begin_adhoc(self.token, self.clock(), self.seconds)
        self._renewer.start()

    def _renew(self) -> None:
        while not self._stop.wait(self.seconds / 3):
            try:
                if not self.leases.renew_adhoc(self.token, self.clock(), self.seconds):
                    return  # expired: before_write / before_commit refuse from now on
            except Exception as e:  # Redis away a moment: the next renewal may succeed
                log.warning("could not renew the ad-hoc run's lease: %s", type(e).__name__)

    def stop(self) -> None:
        self._stop.set()
        if self._renewer.is_alive():
            self._renewer.join(timeout=5)

    def before_write(self, paths: Sequence[str], prefixes: Sequence[str]) -> None:
        if not self.leases.record_adhoc(self.token, self.table, self.clock(), paths, prefixes):
            raise AdhocLeaseLost(f"the lease of this run on {self.table} expired; nothing written")

    def before_commit(self) -> None:
        if not self.leases.renew_adhoc(self.token, self.clock(), self.seconds):
            raise AdhocLeaseLost(
                f"the lease of this run on {self.table} expired before the commit; "
                "nothing committed"
            )


@dataclass(frozen=True)
class AdhocIntents:
    """Where ad-hoc runs record their intents, how their abandoned files are cleaned, and
    their lease (the decider's ``lease_seconds``, as an actor's)."""

    leases: AdhocLeases
    clean: Callable[[Intent], int]
    seconds: float = LEASE_SECONDS


@contextmanager
def adhoc_run(adhoc: AdhocIntents | None, table: str) -> Iterator[WriteGuard]:
    """The write guard of one ad-hoc run on ``table`` (see the module); :data:`NO_GUARD`
    when ``adhoc`` is None or Redis cannot be reached."""
    if adhoc is None:
        yield NO_GUARD
        return
    guard = AdhocGuard(adhoc.leases, table, adhoc.seconds)
    try:
        guard.start()
    except ServiceUnavailable as e:
        log.warning(
            "%s: write intents not recorded (%s); a crash would leave its new files to "
            "remove_orphan_files",
            table,
            e,
        )
        yield NO_GUARD
        return
    try:
        yield guard
    except BaseException:
        guard.stop()
        _settle(adhoc, guard)
        raise
    guard.stop()
    try:
        adhoc.leases.forget(guard.token)  # ended well: nothing of it to clean
    except ServiceUnavailable as e:  # left for the sweep, which finds every file referenced
        log.warning("%s: could not forget the run's write intent: %s", table, e)


def _settle(adhoc: AdhocIntents, guard: AdhocGuard) -> None:
    """After a failed run: its lease ends, and its files that no snapshot references are
    deleted now, the table read first (kept for the decider's sweep when that fails)."""
    try:
        adhoc.leases.end_adhoc(guard.token)
        sweep(adhoc.leases, adhoc.clean, guard.item)
    except ServiceUnavailable as e:
        log.warning("%s: the run's write intent waits for the decider's sweep: %s", guard.table, e)


def open_adhoc(cfg: Config) -> AdhocIntents | None:
    """The Redis intents and the cleaner an ``icefloe optimize`` run records under; None
    when Redis cannot be reached (the run goes on without a record)."""
    try:
        client = connect(cfg)
    except ServiceUnavailable as e:
        log.warning("write intents not recorded (%s)", e)
        return None
    leases = open_state(cfg, client).intents
    assert leases is not None  # Redis keeps them
    return AdhocIntents(leases, cleaner(load_catalog(cfg)), cfg.decider.lease_seconds)
