"""The decider: an observe → orient → decide loop over the managed tables; state in Redis.

* **Observe** — poll the catalog (PyIceberg, no JVM) for each managed table's current
  snapshot, and read commit events from the Redis Stream (``service.events``); bring each
  changed table's rolling stats up to date (``service.rolling``).
* **Orient** — the table's policy (``cfg.policy_for``): target, tolerance, class, weight,
  actions; size the actor pool to the backlog (:func:`desired_actors`).
* **Decide** — every touched partition with ``MSE >= tolerance²`` and at least two
  undersized files becomes one action item (coalesced by id in the queue); then the fair
  scheduler (fixed priority across classes, DWRR in bytes across tables, from
  ``optimizer.fairqueue``) moves pending items to the actors' ready set, a few at a time, so
  one noisy table never starves the others.

Only the leader decides. Several deciders may run against one Redis: the leader holds a
lease (``SET NX PX``; renewed by a compare-and-extend Lua script) and the others stand by;
if the leader dies its lease lapses within ``leader_ttl_seconds`` and another takes over.
Even two leaders at once (a paused process whose lease lapsed) do no harm: stats updates
are compare-and-set on the last applied snapshot and queue items are idempotent.

The decider talks to Redis only through its four adapters, injected (``queue``, ``stats``,
``events``, ``leader``; by default the Redis ones on ``client``): behaviour tests run it on
the in-memory ones, and every failure of a backing service reaches it as
:class:`ServiceUnavailable` (the adapters translate library errors at their boundary).
"""

from __future__ import annotations

import logging
import math
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from optimizer import FlowView, PartitionStats, fair_priority_scheduler, output_sse
from service.config import Config, DeciderSettings, parse_table_identifier
from service.errors import IcefloeError, ServiceUnavailable
from service.events import CommitEvent, CommitEvents, RedisEvents
from service.intents import Intent, Intents, RedisIntents, sweep
from service.keys import Keys
from service.leader import Leader, RedisLeader
from service.pool import Launcher, LogLauncher, desired_actors
from service.queue import ActionItem, PriorityQueue, RedisQueue
from service.rolling import ApplyResult, RollingStats, StatsStore, catch_up

log = logging.getLogger("icefloe.decider")


def estimate(stats: PartitionStats, target: int) -> tuple[int, float]:
    """(bytes to rewrite, expected MSE reduction) if the partition's small files are merged.

    The rolling stats hold N, SSE, bytes and the count ``k`` of undersized files, not their
    sizes, so the undersized bytes are estimated: by Cauchy–Schwarz ``Σe <= sqrt(k·SSE)``,
    exact when the small files are equal, so ``bytes ≈ k·T - sqrt(k·SSE)``. The merged
    output is ``optimizer.predict_output_sizes`` of those bytes. The ordering value of an
    item is ``reduction / bytes``: entropy removed per byte rewritten. The partition scan of
    the actor (``optimizer.plan_partition``) then finds the exact minimum replacement.
    """
    k = stats.undersized
    if k < 2 or stats.n == 0:
        return 0, 0.0
    under_bytes = max(0, min(stats.total_bytes, k * target - math.isqrt(k * stats.sse)))
    n_after = stats.n - k + max(1, -(-under_bytes // target))
    mse_after = output_sse(under_bytes, target) / n_after
    return under_bytes, max(0.0, stats.mse - mse_after)


@dataclass
class StepReport:
    leader: bool = False
    tables: int = 0
    events: int = 0
    rejected: list[str] = field(default_factory=list)
    applied: list[ApplyResult] = field(default_factory=list)
    enqueued: int = 0
    coalesced: int = 0
    dispatched: int = 0
    reaped: int = 0
    orphans_deleted: int = 0  # files of abandoned attempts (service.intents)
    desired_actors: int = 0
    holder: str | None = None  # who holds the leader lease, when it is not this decider


class Decider:
    """One decider instance. ``step(now)`` is one pass; ``run`` loops with backoff."""

    def __init__(
        self,
        cfg: Config,
        client: Any,
        catalog: Any,
        settings: DeciderSettings | None = None,
        queue: PriorityQueue | None = None,
        launcher: Launcher | None = None,
        consumer: str | None = None,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
        tables: Callable[[], list[str]] | None = None,
        *,
        stats: StatsStore | None = None,
        events: CommitEvents | None = None,
        leader: Leader | None = None,
        intents: Intents | None = None,
        clean: Callable[[Intent], int] | None = None,
    ):
        """``client`` may be None when all four adapters are given."""
        from service.catalog import managed_tables

        self.cfg = cfg
        self.s = settings or DeciderSettings()
        self.r = client
        self.catalog = catalog
        self.k = Keys.for_config(cfg)
        self.consumer = consumer or f"decider-{uuid.uuid4().hex[:8]}"
        s = self.s
        self.queue: PriorityQueue = (
            queue
            if queue is not None
            else RedisQueue(client, self.k, s.max_attempts, s.aging_seconds)
        )
        self.stats: StatsStore = stats if stats is not None else RollingStats(client, self.k)
        self.events: CommitEvents = (
            events
            if events is not None
            else RedisEvents(client, self.k, self.consumer, s.claim_idle_ms)
        )
        self.leader: Leader = (
            leader
            if leader is not None
            else RedisLeader(client, self.k, s.leader_ttl_seconds, token=self.consumer)
        )
        self.intents: Intents | None = (
            intents if intents is not None or client is None else RedisIntents(client, self.k)
        )
        self._clean = clean
        self.launcher = launcher or LogLauncher()
        self.clock, self.sleep = clock, sleep
        self._standing_by_for: str | None = None  # the holder last logged while standing by
        self._tables = tables or (lambda: managed_tables(cfg, catalog))
        self._weights: dict[str, int] = {}

    # ---- observe ------------------------------------------------------------------------
    def _validate(self, ev: CommitEvent, managed: set[str]) -> str | None:
        """The reason to reject an event, or None when it names a managed table."""
        try:
            parse_table_identifier(ev.table)
        except IcefloeError as e:
            return str(e)
        if ev.snapshot_id and not ev.snapshot_id.lstrip("-").isdigit():
            return f"bad snapshot id {ev.snapshot_id!r}"
        if ev.table not in managed:
            return f"table {ev.table!r} is not managed (or does not exist)"
        return None

    def observe(
        self, block_ms: int | None = None
    ) -> tuple[set[str], list[CommitEvent], StepReport]:
        """Managed tables (all are polled) and the commit events to ack after processing."""
        report = StepReport(leader=True)
        try:
            managed = set(self._tables())
        except IcefloeError:
            raise
        except Exception as e:  # the catalog's own errors vary by backend; text may hold URIs
            raise ServiceUnavailable(f"catalog unreachable ({type(e).__name__})") from e
        report.tables = len(managed)
        events = self.events.read(block_ms=block_ms)
        report.events = len(events)
        changed = set()
        for ev in events:
            reason = self._validate(ev, managed)
            if reason:
                log.warning("rejected commit event %s: %s", ev.id, reason)
                report.rejected.append(ev.id)
            else:
                changed.add(ev.table)
        return changed | managed, events, report

    # ---- orient + decide ----------------------------------------------------------------
    def refresh(self, name: str, now: float, report: StepReport) -> None:
        """Catch one table up and enqueue what its touched partitions need."""
        from service.catalog import load_table

        table = load_table(self.catalog, name)
        policy = self.cfg.policy_for(name, table.properties)
        self._weights[name] = policy.weight
        current = table.current_snapshot()
        current_id = current.snapshot_id if current is not None else None
        last = self.stats.last_applied(name)
        if current_id == last and self.stats.decided(name) == last:
            return  # unchanged (or still empty), and its actions were enqueued
        target = int(policy.target_file_size_bytes or 1)
        if current_id == last:
            # applied, but the pass that applied it stopped before enqueueing: decide again
            # from the stored stats of every partition (enqueue coalesces; no table scan)
            log.info(
                "deciding %s again from stored stats: actions not enqueued after the last update",
                name,
            )
            self._enqueue(name, policy, self.stats.partitions(name), target, now, report)
        else:
            result = catch_up(self.stats, name, table, target, now)
            report.applied.append(result)
            if result.full_scan:
                log.info(
                    "full scan of %s (%s): %d partitions", name, result.reason, len(result.touched)
                )
            candidates = self._enqueue(name, policy, result.touched, target, now, report)
            if not result.full_scan:
                self.stats.count(
                    {
                        "partitions_changed": len(result.touched),
                        "partition_scans": candidates,
                        "file_events": result.file_events,
                    }
                )
        self.stats.mark_decided(name, current_id)

    def _enqueue(
        self,
        name: str,
        policy: Any,
        touched: Mapping[str, PartitionStats],
        target: int,
        now: float,
        report: StepReport,
    ) -> int:
        """One action item per touched partition that needs work; the number of them."""
        if not policy.enabled:
            return 0
        action = "sort" if "sort" in policy.actions and policy.sort_order else "merge"
        if action not in policy.actions:
            return 0
        candidates = 0
        for key, stats in sorted(touched.items()):
            if not stats.needs_work(policy.tolerance_bytes):
                continue
            cost, benefit = estimate(stats, target)
            if benefit <= 0:
                continue
            candidates += 1
            item = ActionItem.new(
                name,
                key or None,
                action,
                policy.priority,
                cost,
                benefit,
                now,
                reason=f"mse {stats.mse:.4g} >= tolerance² over {stats.n} files",
            )
            outcome = self.queue.enqueue(item, now)
            report.enqueued += outcome == 1
            report.coalesced += outcome == 0
        return candidates

    def dispatch(self, now: float, everything: bool = False) -> int:
        """Fill the ready set up to ``ready_depth`` in fair order; persist scheduler state.

        ``everything``: move the whole backlog, still in fair order (the ready set is FIFO).
        A one-shot pass (``decide --once``, the Airflow DAG) does this, since no later pass
        will top the ready set up while its actors run.
        """
        depth = self.queue.depth()
        room = depth["pending"] if everything else self.s.ready_depth - depth["ready"]
        if room <= 0:
            return 0
        sched = fair_priority_scheduler(
            self.s.quantum_bytes, self.s.aging_seconds, state=self.stats.scheduler_state()
        )
        sent = 0
        while sent < room:
            heads = self.queue.heads()
            views = {
                t: FlowView(
                    max(0, it.cost_bytes), it.enqueued_at, max(0, it.priority), self._weight(t)
                )
                for t, it in heads.items()
            }
            chosen = sched.choose(views, now)
            if chosen is None or self.queue.dispatch(chosen) is None:
                break
            sent += 1
        self.stats.save_scheduler_state(sched.to_state())
        self.stats.count({"dispatches": sent})
        return sent

    def _weight(self, table: str) -> int:
        if table not in self._weights:
            self._weights[table] = self.cfg.policy_for(table).weight
        return self._weights[table]

    def live_actors(self, now: float) -> int:
        beats = self.stats.actors()
        return sum(v >= now - 3 * self.s.lease_seconds for v in beats.values())

    def scale(self, now: float) -> int:
        d = self.queue.depth()
        want = desired_actors(
            d["pending"] + d["ready"] + d["inflight"],
            self.s.actors_min,
            self.s.actors_max,
            self.s.backlog_per_actor,
        )
        live = self.live_actors(now)
        # one launch per lease period at most: new actors need time to show a heartbeat
        if want > live and self.stats.claim_launch(now, self.s.lease_seconds):
            self.launcher.launch(want - live)
        return want

    # ---- the loop -----------------------------------------------------------------------
    def sweep(self) -> int:
        """Delete the files of abandoned attempts (an actor killed, a lease expired) that
        no snapshot references; returns how many (:func:`service.intents.sweep`)."""
        if self.intents is None:
            return 0
        if self._clean is None:
            from jobs.orphans import cleaner

            self._clean = cleaner(self.catalog)
        deleted = sweep(self.intents, self._clean)
        if deleted:
            log.info("deleted %d file(s) left by abandoned attempts", deleted)
            self.stats.count({"orphans_deleted": deleted})
        return deleted

    def step(self, block_ms: int | None = None, dispatch_all: bool = False) -> StepReport:
        if not self.leader.acquire():
            holder = self.leader.holder()
            if holder != self._standing_by_for:
                log.info("standing by: decider %s holds the leader lease", holder)
                self._standing_by_for = holder
            return StepReport(leader=False, holder=holder)
        self._standing_by_for = None
        tables, events, report = self.observe(block_ms)
        now = self.clock()
        failed = set()
        for name in sorted(tables):
            try:
                self.refresh(name, now, report)
            except ServiceUnavailable:
                raise  # the loop backs off; events stay pending
            except Exception as e:  # one broken or dropped table must not stop the others
                failed.add(name)
                log.warning("skipped %s this pass: %s: %s", name, type(e).__name__, e)
        # ack only now, and not for tables that failed: a crash before this leaves them pending
        self.events.ack([e.id for e in events if e.table not in failed])
        report.reaped = len(self.queue.reap(now))
        report.orphans_deleted = self.sweep()
        report.dispatched = self.dispatch(now, everything=dispatch_all)
        report.desired_actors = self.scale(now)
        return report

    def run(
        self,
        once: bool = False,
        on_step: Callable[[StepReport], None] | None = None,
        max_steps: int | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> None:
        """Loop (or one pass). An unreachable Redis or catalog → exponential backoff with one
        clear log line per attempt: no crash loop, no busy spin. The adapters and
        :meth:`observe` say in the error which service failed ("redis unreachable during
        leader acquire", "catalog unreachable"): the loop never inspects an exception."""
        delay = self.s.backoff_initial_seconds
        steps = 0
        while True:
            try:
                # the leader blocks on the event stream for up to one poll interval, so a
                # notified commit is handled at once and a silent one within poll_seconds
                report = self.step(
                    block_ms=None if once else int(self.s.poll_seconds * 1000), dispatch_all=once
                )
                delay = self.s.backoff_initial_seconds
                if on_step:
                    on_step(report)
                wait = 0.0 if report.leader else self.s.poll_seconds
            except ServiceUnavailable as e:
                log.error(
                    "decider: %s (redis %s); retrying in %.1fs",
                    e,
                    self.cfg.redis.redacted_url(),
                    delay,
                )
                if once:
                    raise
                wait = delay
                delay = min(delay * 2, self.s.backoff_max_seconds)
            steps += 1
            if once or (max_steps is not None and steps >= max_steps):
                return
            if should_stop is not None and should_stop():
                return
            if wait > 0:
                self.sleep(wait)
