"""The actor loop: lease an action from the queue, run it, ack or nack it.

While the action runs, a background thread renews the lease every third of its length, so a
long rewrite keeps its item and a dead actor (no renewals) loses it to the reaper after one
lease. Delivery is at-least-once: a crash after the commit but before the ack makes another
actor run the same action again, which is safe because the rewrite replans from the table's
current files (a partition already fixed has nothing left to do).

The work itself is a *runner* (``(item, guard) -> report dict``), injected: tests pass a fake, the
real one (:func:`spark_runner`) calls ``jobs.optimize.optimize_table`` on one SparkSession.

Each attempt records the files it is about to write under its lease (:class:`LeaseGuard`,
:mod:`service.intents`); an abandoned attempt's files are deleted before its retry runs.
A Redis outage is waited out: no dequeue while it lasts, and an ack or nack is retried
while the lease would hold. The pool's size and launchers: :mod:`service.pool`.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from jobs.rewrite.guard import NO_GUARD, WriteGuard
from optimizer.maintenance import TABLE_ACTIONS as TABLE_MAINTENANCE
from service.config import Config
from service.errors import OperationFailed, ServiceUnavailable
from service.intents import Intent, Intents, RedisIntents, sweep
from service.keys import Keys
from service.partition_key import display_key, is_key
from service.queue import ActionItem, Lease, PriorityQueue, open_queue
from service.redact import service_logging
from service.redis_client import connect
from service.status import record_action

log = logging.getLogger("icefloe.actor")

Runner = Callable[[ActionItem, WriteGuard], dict[str, Any]]
"""Runs one item; tells the guard its new files before writing them (``jobs.rewrite.guard``)."""
Recorder = Callable[[dict[str, Any]], None]


@dataclass
class ActorReport:
    done: int = 0
    failed: int = 0
    lost: int = 0  # leases that expired under us (ack refused)
    idle_exit: bool = False


class _Renewer(threading.Thread):
    """Renews one lease until stopped; notes when the lease was lost."""

    def __init__(
        self,
        queue: PriorityQueue,
        lease: Lease,
        lease_seconds: float,
        clock: Callable[[], float],
        on_renew: Callable[[float], None],
    ):
        super().__init__(daemon=True, name=f"renew-{lease.item.id}")
        self.queue, self.lease, self.lease_seconds, self.clock = queue, lease, lease_seconds, clock
        self.on_renew = on_renew
        self.stop_event = threading.Event()
        self.renewals = 0
        self.lost = False

    def run(self) -> None:
        while not self.stop_event.wait(self.lease_seconds / 3):
            try:
                if self.queue.renew(
                    self.lease.item.id, self.lease.token, self.clock(), self.lease_seconds
                ):
                    self.renewals += 1
                    self.on_renew(self.clock())  # a long action still shows a live actor
                else:
                    self.lost = True
                    log.warning("lease of %s lost", self.lease.item.id)
                    return
            except Exception as e:  # Redis blip: try again next period
                log.warning("lease renewal of %s failed: %s", self.lease.item.id, e)


class LeaseLost(OperationFailed):
    """The attempt no longer holds its item's lease: it must not write or commit."""


class LeaseGuard:
    """The write guard of one leased attempt: new files are recorded under the lease
    before they are written (:mod:`service.intents`), and a commit needs the lease renewed
    a moment before (an attempt whose lease expired may have its files deleted as an
    abandoned attempt's, and another actor may be running the same action)."""

    def __init__(
        self,
        queue: PriorityQueue,
        intents: Intents,
        lease: Lease,
        lease_seconds: float,
        clock: Callable[[], float],
    ):
        self.queue, self.intents, self.lease = queue, intents, lease
        self.lease_seconds, self.clock = lease_seconds, clock

    def before_write(self, paths: Sequence[str], prefixes: Sequence[str]) -> None:
        item = self.lease.item
        if not self.intents.record(
            item.id, self.lease.token, item.table, self.clock(), paths, prefixes
        ):
            raise LeaseLost(f"lease of {item.id} lost before writing; nothing written")

    def before_commit(self) -> None:
        item = self.lease.item
        if not self.queue.renew(item.id, self.lease.token, self.clock(), self.lease_seconds):
            raise LeaseLost(f"lease of {item.id} lost before the commit; nothing committed")


class Actor:
    """Takes items off the queue and runs them. With ``intents`` and ``clean`` (Redis and
    :func:`jobs.orphans.cleaner`), each attempt records its new files before writing them,
    and the files of an abandoned attempt of the same item are deleted before a retry
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
    ):
        self.queue, self.runner = queue, runner
        self.lease_seconds, self.poll_seconds = lease_seconds, poll_seconds
        self.recorder = recorder or (lambda entry: None)
        self.heartbeat = heartbeat or (lambda actor, now: None)
        self.clock, self.sleep = clock, sleep
        self.id = actor_id or f"actor-{uuid.uuid4().hex[:8]}"
        self.intents, self.clean = intents, clean
        self._redis_away = False

    def _sweep(self, item_id: str) -> int:
        """Delete what earlier attempts of ``item_id`` left behind; how many files (never
        raises: a failed clean-up keeps the record for the next sweep)."""
        if self.intents is None or self.clean is None:
            return 0
        try:
            return sweep(self.intents, self.clean, item_id)
        except Exception as e:  # Redis away: the records wait for the next sweep
            log.warning("could not clean up after an earlier attempt: %s", type(e).__name__)
            return 0

    def _guard(self, lease: Lease) -> WriteGuard:
        if self.intents is None:
            return NO_GUARD
        return LeaseGuard(self.queue, self.intents, lease, self.lease_seconds, self.clock)

    def run_one(self, lease: Lease, report: ActorReport) -> None:
        item = lease.item
        renewer = _Renewer(
            self.queue,
            lease,
            self.lease_seconds,
            self.clock,
            lambda now: self.heartbeat(self.id, now),
        )
        renewer.start()
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
        entry["orphans_deleted"] = self._sweep(item.id)
        try:
            result = self.runner(item, self._guard(lease))
        except Exception as e:
            renewer.stop_event.set()
            renewer.join()
            error = f"{type(e).__name__}: {e}"[:500]
            log.error("action %s failed: %s", item.id, error)  # one line; the trace at debug
            log.debug("action %s failed", item.id, exc_info=True)
            outcome = self._settle(
                "nack", lambda: self.queue.nack(item.id, lease.token, error, self.clock())
            )
            entry["orphans_deleted"] += self._sweep(item.id)  # this attempt's files
            report.failed += 1
            entry.update(ok=False, error=error, outcome=outcome or "lease lost")
        else:
            renewer.stop_event.set()
            renewer.join()
            acked = self._settle("ack", lambda: self.queue.ack(item.id, lease.token))
            if acked:
                report.done += 1
            else:  # someone else has it now (or will, once its lease expires): that run
                report.lost += 1  # finds nothing left to do
            entry["outcome"] = "done" if acked else ("unacked" if acked is None else "lease lost")
            if self.intents is not None:  # committed or deleted: nothing left to clean
                _best_effort("forget the attempt's files", self.intents.forget, lease.token)
            entry.update(ok=True, **_summary(result))
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

    def _dequeue(self, now: float) -> Lease | None:
        """The next lease; None when there is none or Redis is away (logged once an outage)."""
        try:
            lease = self.queue.dequeue(now, self.lease_seconds)
        except ServiceUnavailable as e:
            if not self._redis_away:
                log.warning("queue unreachable (%s); waiting for it", e)
            self._redis_away = True
            return None
        if self._redis_away:
            log.info("queue reachable again")
            self._redis_away = False
        return lease

    def run(self, max_actions: int | None = None, idle_exit: float | None = None) -> ActorReport:
        """Work until ``max_actions`` were taken or nothing came for ``idle_exit`` seconds."""
        report = ActorReport()
        idle_since = self.clock()
        taken = 0
        while max_actions is None or taken < max_actions:
            now = self.clock()
            _best_effort("send a heartbeat", self.heartbeat, self.id, now)
            lease = self._dequeue(now)
            if lease is None:
                if idle_exit is not None and now - idle_since >= idle_exit:
                    report.idle_exit = True
                    break
                self.sleep(self.poll_seconds)
                continue
            taken += 1
            self.run_one(lease, report)
            idle_since = self.clock()
        return report


def _summary(result: dict[str, Any]) -> dict[str, Any]:
    """Before/after MSE and bytes from an ``OptimizeReport.to_dict()`` (or a fake's dict)."""
    parts = result.get("partitions") or []
    done = [p for p in parts if p.get("status") == "rewritten"]
    before = [p["mse_before"] for p in done]
    after = [p.get("actual_mse_after") for p in done if p.get("actual_mse_after") is not None]
    engines = {e for p in done for e in str(p.get("engine") or "").split("+") if e}
    extra = {}
    if "verified" in result:  # a maintenance action: its counts and what was verified
        counts = {k: v for k, v in (result.get("result") or {}).items() if isinstance(v, int)}
        extra = {"procedure": counts, "verified": result["verified"]}
    return extra | {
        "mse_before": result.get("mse_before", max(before, default=None)),
        "mse_after": result.get("mse_after", max(after, default=None)),
        "bytes_rewritten": int(result.get("bytes_rewritten") or 0),
        "files_rewritten": int(result.get("files_rewritten") or 0),
        "snapshot_ids": list(result.get("snapshot_ids") or []),
        "engine": "+".join(sorted(engines)),  # what wrote the new files: arrow, spark, both
    }


def spark_runner(cfg: Any, spark: Any = None) -> Runner:
    """The production runner: one SparkSession; ``jobs.optimize.optimize_table`` per data
    item, ``jobs.upkeep.run_table_action`` (the procedure, verified) per table-level
    maintenance item."""
    state: dict[str, Any] = {"spark": spark}

    def run(item: ActionItem, guard: WriteGuard = NO_GUARD) -> dict[str, Any]:
        # heavy (Spark, great-expectations): imported only when there is work
        from jobs.optimize import optimize_table
        from jobs.rewrite.exact import Collaborators

        if state["spark"] is None:
            from service.spark import build_spark

            state["spark"] = build_spark(cfg, app_name="icefloe-actor")
        if item.action in TABLE_MAINTENANCE:
            from jobs.upkeep import run_table_action

            return run_table_action(state["spark"], cfg, item.table, item.action)
        if item.partition and not is_key(item.partition):
            # queued before typed keys: its ``day=1`` may name several partitions as one;
            # acked unrun (the decider rebuilds such stats by a full scan and queues anew)
            return {"partitions": [], "skipped": f"older partition text {item.partition!r}"}
        report = optimize_table(
            state["spark"],
            cfg,
            item.table,
            keys=[item.partition] if item.partition else None,
            action=item.action,
            collaborators=Collaborators(guard=guard),
            min_input_files=2,  # the decider's to apply (it merges after max_wait_hours)
        )
        out: dict[str, Any] = report.to_dict()
        if out.get("partitions_failed"):
            # e.g. a commit that kept conflicting: nack, so the action is retried (or dead-
            # lettered with this reason) instead of acked as if the work were done
            failed = [p for p in out.get("partitions", []) if p.get("status") == "failed"]
            reasons = "; ".join(f"{p.get('partition')}: {p.get('reason')}" for p in failed[:3])
            raise OperationFailed(f"{out['partitions_failed']} partition(s) failed: {reasons}")
        return out

    return run


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
) -> ActorReport:
    """Wire an :class:`Actor` to Redis (queue, heartbeat, recent list) and run it."""
    service_logging()
    settings = cfg.decider
    client = connect(cfg)
    keys = Keys.for_config(cfg)
    from jobs.orphans import cleaner
    from service.catalog import load_catalog

    a = Actor(
        open_queue(cfg, client),
        runner or spark_runner(cfg, spark),
        lease_seconds=settings.lease_seconds,
        intents=RedisIntents(client, keys),
        clean=cleaner(load_catalog(cfg)),
        recorder=lambda entry: record_action(client, keys, entry, settings.recent_cap),
        heartbeat=lambda actor_id, now: client.hset(keys.actors, actor_id, now),
    )
    try:
        return a.run(max_actions=max_actions, idle_exit=idle_exit)
    finally:  # never raised over the loop's own error (Redis may be what failed)
        _best_effort("remove the actor's heartbeat", client.hdel, keys.actors, a.id)
