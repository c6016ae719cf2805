"""The actor loop: lease an action from the queue, run it, ack or nack it.

While the action runs, a background thread renews the lease every third of its length, so a
long rewrite keeps its item and a dead actor (no renewals) loses it to the reaper after one
lease. Delivery is at-least-once: a crash after the commit but before the ack makes another
actor run the same action again, which is safe because the rewrite replans from the table's
current files (a partition already fixed has nothing left to do).

The work itself is a *runner* (``(item, guard) -> report dict``), injected: tests pass a fake, the
real one (:func:`spark_runner`) calls ``icefloe.jobs.data.optimize.optimize_table`` on one
SparkSession.

Each attempt records the files it is about to write under its lease (:class:`LeaseGuard`,
:mod:`icefloe.state.intents`); an abandoned attempt's files are deleted before its retry runs.
A Redis outage is waited out: no dequeue while it lasts, and an ack or nack is retried
while the lease would hold. The pool's size and launchers: :mod:`icefloe.service.decider.pool`.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

from icefloe.base.catalog import load_catalog
from icefloe.base.config import Config
from icefloe.base.errors import ServiceUnavailable
from icefloe.base.partition_key import display_key
from icefloe.base.redact import service_logging
from icefloe.base.redis_client import connect
from icefloe.base.signals import on_sigterm
from icefloe.jobs.history.flush import flush
from icefloe.jobs.maintenance.orphans import cleaner
from icefloe.jobs.rewrite.guard import NO_GUARD, WriteGuard
from icefloe.service.actor.leases import LeaseGuard, Renewer
from icefloe.service.actor.outcomes import ack_outcome, one_line, outcomes_text, stop_reason
from icefloe.service.actor.runners import (
    BatchRunner,
    Runner,
    batch_figures,
    spark_runners,
    summary,
)
from icefloe.state.intents import Intent, Intents, sweep
from icefloe.state.open import open_state
from icefloe.state.queue import Budget, Lease, PriorityQueue, budget_of

log = logging.getLogger("icefloe.actor")

Recorder = Callable[[dict[str, Any]], None]


@dataclass
class ActorReport:
    done: int = 0
    failed: int = 0
    lost: int = 0  # leases that expired under us (ack refused)
    idle_exit: bool = False
    stopped: str | None = None  # why it stopped before running out of work, if it did


class Actor:
    """Takes items off the queue and runs them. With ``intents`` and ``clean`` (Redis and
    :func:`icefloe.jobs.maintenance.orphans.cleaner`), each attempt records its new files before
    writing them, and the files of an abandoned attempt of the same item are deleted before a retry
    starts and right after a failure; without them the runner gets :data:`NO_GUARD`."""

    def __init__(
        self,
        queue: PriorityQueue,
        runner: Runner,
        lease_seconds: float = 300.0,
        poll_seconds: float = 1.0,
        recorder: Recorder | None = None,
        heartbeat: Callable[[str, float], None] | None = None,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
        actor_id: str | None = None,
        intents: Intents | None = None,
        clean: Callable[[Intent], int] | None = None,
        batch_runner: BatchRunner | None = None,
        budget: Callable[[str], Budget] | None = None,
    ):
        self.queue, self.runner = queue, runner
        self.batch_runner, self.budget = batch_runner, budget
        self.lease_seconds, self.poll_seconds = lease_seconds, poll_seconds
        self.recorder = recorder or (lambda entry: None)
        self.heartbeat = heartbeat or (lambda actor, now: None)
        self.clock, self.sleep = clock, sleep
        self.id = actor_id or f"actor-{uuid.uuid4().hex[:8]}"
        self.intents, self.clean = intents, clean
        self._redis_away = False

    def _sweep(self, items: Collection[str]) -> int:
        """Delete what earlier attempts of ``items`` (one item, or a batch's: its intent is
        recorded under its first item) left behind; how many files (never raises: a failed
        clean-up keeps the record for the next sweep)."""
        if self.intents is None or self.clean is None:
            return 0
        try:
            return sweep(self.intents, self.clean, items=items)
        except Exception as e:  # Redis away: the records wait for the next sweep
            log.warning("could not clean up after an earlier attempt: %s", type(e).__name__)
            return 0

    def _guard(self, lease: Lease | Sequence[Lease]) -> WriteGuard:
        if self.intents is None:
            return NO_GUARD
        return LeaseGuard(self.queue, self.intents, lease, self.lease_seconds, self.clock)

    def _renewer(self, leases: Sequence[Lease]) -> Renewer:
        renewer = Renewer(
            self.queue,
            leases,
            self.lease_seconds,
            self.clock,
            lambda now: self.heartbeat(self.id, now),
        )
        renewer.start()
        return renewer

    def run_one(self, lease: Lease, report: ActorReport) -> None:
        item = lease.item
        renewer = self._renewer([lease])
        started = self.clock()
        entry: dict[str, Any] = {
            "id": item.id,
            "table": item.table,
            "partition": display_key(item.partition) if item.partition else None,
            "key": item.partition,
            "action": item.action,
            "actor": self.id,
            "attempt": item.attempts + 1,
        }
        entry["orphans_deleted"] = self._sweep({item.id})
        try:
            result = self.runner(item, self._guard(lease))
        except Exception as e:
            renewer.finish()
            error = one_line(e)
            log.error("action %s failed: %s", item.id, error)  # one line; the trace at debug
            log.debug("action %s failed", item.id, exc_info=True)
            outcome = self._settle(
                "nack", lambda: self.queue.nack(item.id, lease.token, error, self.clock())
            )
            entry["orphans_deleted"] += self._sweep({item.id})  # this attempt's files
            report.failed += 1
            entry.update(ok=False, error=error, outcome=outcome or "lease lost")
        else:
            renewer.finish()
            acked = self._settle("ack", lambda: self.queue.ack(item.id, lease.token))
            if acked:
                report.done += 1
            else:  # someone else has it now (or will, once its lease expires): that run
                report.lost += 1  # finds nothing left to do
            entry["outcome"] = ack_outcome(acked)
            if self.intents is not None:  # committed or deleted: nothing left to clean
                _best_effort("forget the attempt's files", self.intents.forget, lease.token)
            entry.update(ok=True, **summary(result))
        self._record(entry, started, renewer)

    def _record(self, entry: dict[str, Any], started: float, renewer: Renewer) -> None:
        entry.update(
            seconds=round(self.clock() - started, 3),
            finished_at=self.clock(),
            renewals=renewer.renewals,
        )
        recorded = self._settle(
            "record the action",
            lambda: self.recorder(entry) or True,
            errors=(Exception,),  # the recorder talks to Redis directly (its own errors)
            then="it is not in the recent actions",
        )
        if recorded is None:
            log.info("unrecorded action: %s", json.dumps(entry, sort_keys=True, default=str))

    def _settle(
        self,
        what: str,
        call: Callable[[], Any],
        errors: tuple[type[Exception], ...] = (ServiceUnavailable,),
        then: str = "the item returns after its lease",
    ) -> Any:
        """Ack, nack or record through a Redis outage: retried with back-off while the
        lease would still hold; None when Redis stayed away (after an ack or a nack the
        lease then expires and the item comes back: after an ack, its retry finds the work
        done)."""
        give_up = self.clock() + self.lease_seconds
        delay = min(1.0, self.lease_seconds / 10)
        while True:
            try:
                return call()
            except errors as e:
                reason = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                if self.clock() + delay > give_up:
                    log.error("could not %s (%s); %s", what, reason, then)
                    return None
                log.warning("could not %s (%s); retrying in %.1f s", what, reason, delay)
                self.sleep(delay)
                delay = min(delay * 2, 10.0)

    def _dequeue(self, now: float) -> list[Lease]:
        """The next lease, or a batch's (with a batch runner); [] when there is none or Redis
        is away (logged once an outage)."""
        try:
            if self.batch_runner is not None and self.budget is not None:
                leases = self.queue.dequeue_batch(now, self.lease_seconds, self.budget)
            else:
                lease = self.queue.dequeue(now, self.lease_seconds)
                leases = [] if lease is None else [lease]
        except ServiceUnavailable as e:
            if not self._redis_away:
                log.warning("queue unreachable (%s); waiting for it", e)
            self._redis_away = True
            return []
        if self._redis_away:
            log.info("queue reachable again")
            self._redis_away = False
        return leases

    def run_batch(self, leases: Sequence[Lease], report: ActorReport) -> None:
        """Several items of one table and action, run together (one plan, one commit): each
        item is acked once the batch is done, except those the run could not do (a
        partition whose commit kept conflicting), which are nacked and retried alone; a
        batch that fails as a whole nacks every item. The write intent is recorded under
        the first lease and covers the whole batch."""
        assert self.batch_runner is not None
        items = [x.item for x in leases]
        ids = {it.id for it in items}
        renewer = self._renewer(leases)
        started = self.clock()
        entry: dict[str, Any] = {
            "id": items[0].id,
            "table": items[0].table,
            "partition": f"{len(items)} partitions",
            "key": None,
            "action": items[0].action,
            "actor": self.id,
            "attempt": max(it.attempts for it in items) + 1,
            "orphans_deleted": self._sweep(ids),
        }
        try:
            result = self.batch_runner(items, self._guard(leases))
        except Exception as e:
            renewer.finish()
            error = one_line(e)
            log.error("batch of %d from %s failed: %s", len(items), items[0].id, error)
            log.debug("batch of %s failed", items[0].id, exc_info=True)
            outcomes = self._nack_each(leases, dict.fromkeys(ids, error))
            entry["orphans_deleted"] += self._sweep(ids)  # this attempt's files
            report.failed += len(items)
            entry.update(ok=False, error=error, outcome=outcomes_text(outcomes))
            entry["batch"] = {"items": len(items), "committed": 0}
            self._record(entry, started, renewer)
            return
        renewer.finish()
        failed = {i: why for i, why in result.failed.items() if i in ids}
        done = [x for x in leases if x.item.id not in failed]
        acked = self._settle(
            "ack", lambda: self.queue.ack_many([(x.item.id, x.token) for x in done])
        )
        acked = acked if acked is not None else [None] * len(done)
        report.done += sum(1 for a in acked if a)
        report.lost += sum(1 for a in acked if a == 0)
        outcomes = self._nack_each([x for x in leases if x.item.id in failed], failed)
        report.failed += len(failed)
        if failed:  # the failed partitions' files: whatever no snapshot references goes
            entry["orphans_deleted"] += self._sweep(ids)
        elif self.intents is not None:  # committed or deleted: nothing left to clean
            _best_effort("forget the attempt's files", self.intents.forget, leases[0].token)
        outcomes |= {x.item.id: ack_outcome(a) for x, a in zip(done, acked, strict=True)}
        entry.update(ok=not failed, outcome=outcomes_text(outcomes), **summary(result.report))
        if failed:
            entry["error"] = "; ".join(sorted(set(failed.values())))[:500]
        entry["batch"] = batch_figures(result.report, len(items), self.clock() - started)
        upkeep = result.report.get("maintenance")
        if upkeep:  # what ran in the same lease after the batch
            entry["maintenance"] = {
                k: upkeep[k] for k in ("action", "error", "verified", "seconds") if k in upkeep
            }
        self._record(entry, started, renewer)

    def _nack_each(self, leases: Sequence[Lease], why: dict[str, str]) -> dict[str, str]:
        """Nack each lease with its reason; item id → 'pending', 'dead' or 'lease lost'."""
        out = {}
        for x in leases:

            def nack(x: Lease = x) -> str | None:
                return self.queue.nack(x.item.id, x.token, why[x.item.id], self.clock())

            out[x.item.id] = self._settle("nack", nack) or "lease lost"
        return out

    def run(
        self,
        max_actions: int | None = None,
        idle_exit: float | None = None,
        max_seconds: float | None = None,
        stop: Callable[[], bool] | None = None,
    ) -> ActorReport:
        """Work until ``max_actions`` were taken, nothing came for ``idle_exit`` seconds,
        ``max_seconds`` passed since the start, or ``stop()`` says so (SIGTERM): each is
        checked between actions, so the one running is finished and settled first."""
        report = ActorReport()
        started = idle_since = self.clock()
        taken = 0
        while max_actions is None or taken < max_actions:
            now = self.clock()
            report.stopped = stop_reason(now - started, max_seconds, stop)
            if report.stopped:
                log.info("actor %s: stopping (%s)", self.id, report.stopped)
                break
            _best_effort("send a heartbeat", self.heartbeat, self.id, now)
            leases = self._dequeue(now)
            if not leases:
                if idle_exit is not None and now - idle_since >= idle_exit:
                    report.idle_exit = True
                    break
                self.sleep(self.poll_seconds)
                continue
            taken += 1
            if len(leases) == 1:
                self.run_one(leases[0], report)
            else:
                self.run_batch(leases, report)
            idle_since = self.clock()
        return report


def _best_effort(what: str, func: Callable[..., object], *args: Any) -> None:
    """Bookkeeping (recent list, heartbeat) must never kill an actor: log and go on."""
    try:
        func(*args)
    except Exception as e:  # a Redis blip: the queue itself retries on the next call
        log.warning("could not %s: %s", what, type(e).__name__)


def run_actor(
    cfg: Config,
    max_actions: int | None,
    idle_exit: float | None,
    spark: Any = None,
    runner: Runner | None = None,
    batch_runner: BatchRunner | None = None,
    max_seconds: float | None = None,
) -> ActorReport:
    """Wire an :class:`Actor` to Redis (queue, heartbeat, recent list) and run it. Without
    ``runner``, the production runners (batches on); a given ``runner`` runs one item at
    a time unless ``batch_runner`` is given too. SIGTERM (Airflow's kill, systemd's stop)
    stops it after the action under way; before it exits, the records of what it ran are
    appended to the history table (:func:`icefloe.jobs.history.flush.flush`), so they do not wait
    in Redis for the next leader pass."""
    service_logging()
    settings = cfg.decider
    state = open_state(cfg, connect(cfg))
    ledger = state.ledger
    catalog = load_catalog(cfg)

    if runner is None:
        runner, batch_runner = spark_runners(cfg, spark)
    stop = threading.Event()
    a = Actor(
        state.queue,
        runner,
        batch_runner=batch_runner,
        budget=budget_of(cfg),
        lease_seconds=settings.lease_seconds,
        intents=state.intents,
        clean=cleaner(catalog),
        recorder=lambda entry: ledger.record_action(
            entry, settings.recent_cap, history=cfg.history.enabled
        ),
        heartbeat=ledger.heartbeat,
        sleep=lambda seconds: None if stop.wait(seconds) else None,  # SIGTERM wakes it
    )
    try:
        with on_sigterm(stop.set):
            return a.run(max_actions, idle_exit, max_seconds, stop.is_set)
    finally:  # never raised over the loop's own error (Redis may be what failed)
        _best_effort("append the history", flush, cfg, catalog, ledger, a.id)
        _best_effort("remove the actor's heartbeat", ledger.forget_actor, a.id)
