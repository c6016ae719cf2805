"""The decider: an observe → orient → decide loop over the managed tables; state in Redis.

* **Observe** — poll the catalog (PyIceberg, no JVM) for each managed table's current
  snapshot, and read commit events from the Redis Stream (``icefloe.state.events``); bring each
  changed table's rolling stats up to date (``icefloe.state.rolling``).
* **Orient** — the table's policy (``cfg.policy_for``): target, tolerance, class, weight,
  actions; size the actor pool to the backlog (:func:`desired_actors`).
* **Decide** — every touched partition whose verdict (``icefloe.optimizer.verdict``: ``MSE >=
  tolerance²``, ``min_input_files`` small files or ``max_wait_hours`` waited for them;
  ``icefloe.service.decider.needs``) is to act becomes one item (coalesced by id); then the fair
  scheduler (fixed priority across classes, DWRR in bytes across tables, from
  ``icefloe.optimizer.fairqueue``) moves pending items to the actors' ready set, a few at a time, so
  one noisy table never starves the others. A table with a layout (sort or z-order) also
  gets one item per touched partition clustered deeper than its ``clustering_tolerance``
  (``icefloe.service.decider.layout``); each table's record is kept
  (``icefloe.service.decider.records``).

Several deciders may run against one Redis and share the warehouse. The tables are split
into ``decider.shards`` shards, and each live decider holds leases on its fair share of
them (``icefloe.state.shards``): it observes, and reads the commit events of, only the tables of
its shards, so no table is observed by two at once. A decider that joins gets its share
at the next claims; one that dies stops renewing and its shards pass to the others within
``leader_ttl_seconds``. The warehouse-wide duties (reaping expired leases, sweeping
abandoned files, fair dispatch, sizing the actor pool) belong to the one decider holding
the leader lease (``SET NX PX``; renewed by a compare-and-extend Lua script). Even two
observers or two leaders at once (a paused process whose lease lapsed) do no harm: stats
updates are compare-and-set on the last applied snapshot and queue items are idempotent.

A step waiting on the event stream handles the evented tables at once. A poll of all the
decider's tables starts when nothing arrived within ``poll_seconds`` (or the last poll is
that old, or the decider gained shards), so a commit without an event is still found; it is
worked through ``poll_budget_seconds`` per step, between the event batches, so an event
never waits behind a poll of every table (a one-shot pass polls everything at once).

The decider talks to Redis only through its adapters (a :class:`icefloe.state.open.State`,
given: :func:`~icefloe.state.open.open_state`'s or, in tests, ``memory_state``'s); every
failure of a backing service reaches it as :class:`ServiceUnavailable`. The leader's duties
are :class:`icefloe.service.decider.duties.LeaderDuties`, called by :meth:`Decider.step`.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from icefloe.base.catalog import managed_tables
from icefloe.base.config import Config, DeciderSettings, parse_table_identifier
from icefloe.base.errors import IcefloeError, ServiceUnavailable, describe
from icefloe.base.keys import shard_of
from icefloe.base.verdicts import rules_of
from icefloe.jobs.history.flush import flush
from icefloe.optimizer.maintenance_rules import MetadataHealth
from icefloe.service.decider.catchup import catch_up_table
from icefloe.service.decider.duties import LeaderDuties
from icefloe.service.decider.layout import new_layout, ordered_of, table_layout
from icefloe.service.decider.light import Light, Seen
from icefloe.service.decider.needs import Waits, check_table, enqueue_overdue, enqueue_touched
from icefloe.service.decider.pool import Launcher, LogLauncher
from icefloe.service.decider.records import Records
from icefloe.service.decider.report import StepReport
from icefloe.service.decider.scores import Scores
from icefloe.service.observe.reads import fold_reads
from icefloe.state.events import CommitEvent
from icefloe.state.intents import Intent
from icefloe.state.open import State
from icefloe.state.shards import Claim

log = logging.getLogger("icefloe.decider")


class Decider:
    """One decider instance. ``step(now)`` is one pass; ``run`` loops with backoff. The
    leader's warehouse-wide duties are :attr:`duties`."""

    def __init__(
        self,
        cfg: Config,
        catalog: Any,
        adapters: State,
        settings: DeciderSettings | None = None,
        *,
        launcher: Launcher | None = None,
        clean: Callable[[Intent], int] | None = None,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
        tables: Callable[[], list[str]] | None = None,
    ):
        """``clean``: deletes an abandoned attempt's files (needed with ``adapters.intents``);
        ``tables``: the managed tables (by default, those of ``cfg`` in ``catalog``)."""
        self.cfg = cfg
        self.s = settings or DeciderSettings()
        self.catalog = catalog
        self.queue, self.stats, self.events = adapters.queue, adapters.stats, adapters.events
        self.leader, self.shards, self.health = adapters.leader, adapters.shards, adapters.health
        self.ledger, self.layouts = adapters.ledger, adapters.layouts
        self.reads = adapters.reads  # readers' scan reports: the leader folds them in
        self._managed: set[str] = set()  # the managed tables as the last step listed them
        self._claim = Claim(frozenset())
        self._claimed_at = 0.0  # time.monotonic() of the last claim
        self._polled: tuple[frozenset[int], float] | None = None  # shards, clock() of last poll
        self._to_poll: deque[str] = deque()  # tables of the poll under way, not yet refreshed
        self.clock, self.sleep = clock, sleep
        self._standing_by_for: str | None = None  # the holder last logged while standing by
        self._tables = tables or (lambda: managed_tables(cfg, catalog))
        self._weights: dict[str, int] = {}  # each table's, from its policy: read by the duties
        self.duties = LeaderDuties(
            cfg,
            self.s,
            self.queue,
            self.ledger,
            launcher or LogLauncher(),
            self._weights,
            adapters.intents,
            clean,
            history=(lambda: flush(cfg, catalog, self.ledger, self.leader.token))
            if catalog
            else None,
        )
        self.healths: dict[str, MetadataHealth] = {}  # of the tables this decider observes
        self.layouts_seen: dict[str, str] = {}  # each table's layout signature, known stored
        self.formats_known: set[str] = set()  # tables whose stats this process knows current
        self.records = Records(adapters.stats, adapters.health, adapters.layouts)
        self.light = Light(catalog, self.stats)  # polls skip the tables nothing changed
        self.scores = Scores(adapters.stats)  # and their health scores

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

    def _mine(self, name: str) -> bool:
        return shard_of(name, self.shards.count) in self._claim.owned

    def _claim_shards(self) -> None:
        """Renew this decider's shard leases and take or hand back its fair share."""
        before, started = self._claim.owned, time.monotonic()
        # the leases run from before the call: a reply that came back late (a starved
        # thread, a slow link) leaves less of them, never more
        self._claim, self._claimed_at = self.shards.claim(), started
        if self._claim.owned != before:
            log.info("observing shards %s of %d", sorted(self._claim.owned), self.shards.count)

    def _still_mine(self, name: str) -> bool:
        """Renew the leases during a long pass (every third of their TTL); False once the
        table's shard passed to another decider, or while the last renewal took more than a
        third of the TTL to come back (then another decider may hold the shard before this
        one is done with the table: it waits for the next claim)."""
        third = self.s.leader_ttl_seconds / 3
        if time.monotonic() - self._claimed_at > third:
            self._claim_shards()
        return self._mine(name) and time.monotonic() - self._claimed_at <= third

    def _poll_due(self, one_shot: bool, events: list[CommitEvent]) -> bool:
        """Start polling every table of this decider's shards?"""
        if one_shot:
            return True
        if self._to_poll:
            return False  # a poll is under way
        if not events or self._polled is None:
            return True  # the wait ended without an event, or the first pass
        shards, at = self._polled
        return not self._claim.owned <= shards or self.clock() - at >= self.s.poll_seconds

    def observe(
        self, block_ms: int | None = None
    ) -> tuple[set[str], list[CommitEvent], StepReport]:
        """The evented tables of this decider's shards to refresh, and the commit events to
        ack after processing; starts a poll of all of its shards' tables when one is due
        (:attr:`_to_poll`, worked through by :meth:`step` a budget at a time)."""
        lapse = self._claim.next_lapse
        try:
            managed = self._managed = self.records.listed(self._tables())
        except IcefloeError:
            raise
        except Exception as e:  # the catalog's own errors vary by backend; text may hold URIs
            raise ServiceUnavailable(f"catalog unreachable ({type(e).__name__})") from e
        one_shot = block_ms is None
        if self._to_poll:
            block_ms = None  # a poll is under way: take the events there are, do not wait
        elif block_ms is not None and lapse is not None:  # wake when another's lease lapses
            block_ms = min(block_ms, int(lapse * 1000) + 50)
        events = self.events.read(block_ms=block_ms, shards=self._claim.owned)
        if lapse is not None and time.monotonic() - self._claimed_at >= lapse:
            self._claim_shards()  # a dead decider's shards: take them now, not a step later
        owned = self._claim.owned
        report = StepReport(shards=sorted(owned), next_lapse=self._claim.next_lapse)
        mine = {t for t in managed if self._mine(t)}
        report.tables = len(mine)
        report.events = len(events)
        changed = set()
        for ev in events:
            reason = self._validate(ev, managed)
            if reason:
                log.warning("rejected commit event %s: %s", ev.id, reason)
                report.rejected.append(ev.id)
            elif ev.table in mine:  # else the shard count changed: its owner polls it
                changed.add(ev.table)
        report.polled = self._poll_due(one_shot, events)
        if report.polled:
            self._polled = (owned, self.clock())
            self._to_poll = deque(sorted(mine))
            self.light.poll_started(mine)
        return changed, events, report

    def _refresh_safely(
        self, name: str, now: float, report: StepReport, polled: bool = False
    ) -> None:
        if not self._still_mine(name):
            report.deferred.add(name)  # its shard may have passed to another decider
            return
        try:
            self.refresh(name, now, report, polled)
        except ServiceUnavailable:
            raise  # the loop backs off; events stay pending
        except Exception as e:  # one broken or dropped table must not stop the others
            report.failed[name] = describe(e)  # SQLAlchemy's and Java's span lines: one
            log.warning("skipped %s this pass: %s", name, report.failed[name])
            self.records.failed(name, report.failed[name], now)
            self.light.forget(name)

    # ---- orient + decide ----------------------------------------------------------------
    def refresh(self, name: str, now: float, report: StepReport, polled: bool = False) -> None:
        """Catch one table up and enqueue what its touched partitions need, and what its
        partitions that waited long enough for more small files need. ``polled``: found by
        a poll, not an event (unchanged since its last refresh: no catalog call)."""
        seen = self.light.unchanged(name, now) if polled else None
        if seen is not None:
            last, waiting = self.light.kept(name, now, self._to_poll)
            if last == seen.snapshot:
                return self._refresh_unchanged(name, seen, now, report, waiting)
        table, before = self.light.load(name, polled), report.enqueued
        inputs = self.cfg.plan_inputs(name, table.properties)
        policy = inputs.policy
        self._weights[name] = policy.weight
        outcomes, self.healths[name] = check_table(
            name, table, policy, now, self.queue, self.health, self.healths.get(name)
        )
        report.count(outcomes)
        current = table.current_snapshot()
        current_id = current.snapshot_id if current is not None else None
        layout = table_layout(name, table, policy, self.layouts_seen)
        rules = rules_of(inputs, layout)  # a sort layout: its merges keep the order too
        last, waits = self.stats.last_applied(name), Waits.read(self.stats, name, rules)
        ordered = ordered_of(self.layouts, name, layout)  # a layout merges neighbours only
        # stats an older icefloe kept are rebuilt now, not at the table's next commit (read
        # once per table and process: this one writes only the current format)
        stale = current_id == last and name not in self.formats_known and self.stats.stale(name)
        again = current_id == last and not stale and self.stats.decided(name) != last
        if again:
            # applied, but the pass that applied it stopped before enqueueing: decide again
            # from the stored stats of every partition (enqueue coalesces; no table scan)
            log.info("deciding %s again from stored stats: not enqueued after its update", name)
            touched = self.stats.partitions(name)
            stored = (self.queue, waits, rules, policy.priority, touched, now, ordered)
            report.count(enqueue_touched(*stored))
        elif current_id != last or stale:
            stores = (self.stats, self.layouts, self.queue, self.ledger)
            catch_up_table(stores, waits, table, policy, rules, layout, now, report)
            self.stats.mark_decided(name, current_id)
        self.formats_known.add(name)  # not before: a rebuild that failed is tried again
        if current_id == last and layout is not None:  # deciding again, or a new layout
            fresh = (self.queue, self.layouts, name, table, rules, policy.priority, layout, now)
            report.count(new_layout(*fresh, self.layouts_seen, everything=again))
        if again:
            self.stats.mark_decided(name, current_id)
        report.count(enqueue_overdue(self.queue, waits, rules, policy.priority, now, ordered))
        self.scores.update(name, policy, self.healths[name], now)
        self.records.update(name, inputs, layout, self.healths[name], now, report.enqueued > before)
        self.light.remember(name, table, inputs, layout, rules, now)

    def _refresh_unchanged(
        self, name: str, seen: Seen, now: float, report: StepReport, waiting: dict[str, float]
    ) -> None:
        """``name``'s metadata is as :meth:`refresh` last read it
        (``icefloe.service.decider.light``): what time alone changes -- overdue waits, snapshot
        expiry -- from what is held."""
        before, policy, health = report.enqueued, seen.inputs.policy, self.healths[name]
        outcomes, _ = check_table(name, None, policy, now, self.queue, self.health, health)
        report.count(outcomes)
        waits = Waits.of(self.stats, name, seen.rules, waiting)
        ordered = ordered_of(self.layouts, name, seen.layout)
        report.count(enqueue_overdue(self.queue, waits, seen.rules, policy.priority, now, ordered))
        self.scores.update(name, policy, health, now)
        enqueued = report.enqueued > before
        self.records.update(name, seen.inputs, seen.layout, health, now, enqueued)
        report.unchanged += 1

    # ---- the loop -----------------------------------------------------------------------
    def step(self, block_ms: int | None = None, dispatch_all: bool = False) -> StepReport:
        self._claim_shards()
        leader = self.leader.acquire()
        if not leader and not self._claim.owned:
            holder = self.leader.holder()
            if holder != self._standing_by_for:
                log.info("standing by: no shard free; decider %s holds the leader lease", holder)
                self._standing_by_for = holder
            return StepReport(leader=False, holder=holder, next_lapse=self._claim.next_lapse)
        self._standing_by_for = None
        tables, events, report = self.observe(block_ms)
        report.leader = leader
        now = self.clock()
        for name in sorted(tables):  # the evented tables first
            self._refresh_safely(name, now, report)
        # then the poll, a budget at a time (all of it in a one-shot pass), so an event
        # waits for at most one budget, however many tables a poll has
        budget_end = None if block_ms is None else time.monotonic() + self.s.poll_budget_seconds
        while self._to_poll and (budget_end is None or time.monotonic() < budget_end):
            name = self._to_poll.popleft()
            if name not in tables:
                self._refresh_safely(name, now, report, polled=True)
        # ack only now, and not for tables that failed or were deferred: a crash before this
        # leaves them pending, and pending events are claimed again (by the shard's owner)
        self.events.ack(
            [e for e in events if e.table not in report.failed and e.table not in report.deferred]
        )
        if not leader:
            report.holder = self.leader.holder()
            return report
        report.reaped = len(self.queue.reap(now))
        report.orphans_deleted = self.duties.sweep()
        report.dispatched = self.duties.dispatch(now, everything=dispatch_all)
        report.desired_actors = self.duties.scale(now)
        report.history = self.duties.flush_history(now)
        folded = fold_reads(self.cfg, self.reads, self._managed, self.cfg.reads.max_per_step)
        report.reads = folded.reports
        return report

    def run(
        self,
        once: bool = False,
        on_step: Callable[[StepReport], None] | None = None,
        max_steps: int | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> None:
        """Loop (or one pass); a step with shards blocks on their events, one without waits a
        poll (or until another decider's shard lease lapses). An unreachable Redis or catalog
        → exponential backoff with one clear log line per attempt: no crash loop, no busy
        spin. The adapters and
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
                wait = 0.0 if report.shards else self.s.poll_seconds  # it blocked on events
                if not report.leader and report.next_lapse is not None:
                    wait = min(wait, report.next_lapse + 0.05)  # a dead decider's shards
            except ServiceUnavailable as e:  # the Redis URL only when Redis is what failed
                where = f" (redis {self.cfg.redis.redacted_url()})" if "redis" in str(e) else ""
                log.error("decider: %s%s; retrying in %.1fs", e, where, delay)
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
