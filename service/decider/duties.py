"""The leader's warehouse-wide duties, owned and called by
:class:`icefloe.service.decider.loop.Decider`.

Whatever concerns the whole queue rather than one table is done by the one decider holding
the leader lease, once per step: fair dispatch from the pending sets to the actors' ready
set, sizing the actor pool, and sweeping the files of abandoned attempts (reaping expired
leases is one queue call in the step itself).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from icefloe.base.config import Config, DeciderSettings
from icefloe.base.errors import ServiceUnavailable, describe
from icefloe.optimizer import FlowView, fair_priority_scheduler
from icefloe.service.decider.pool import Launcher, desired_actors
from icefloe.state.intents import Intent, Intents, sweep
from icefloe.state.ledger import Ledger
from icefloe.state.queue import PriorityQueue, budget_of

log = logging.getLogger("icefloe.decider")


class LeaderDuties:
    """Dispatch, pool sizing and the sweep, on what they are given.

    ``weights``: each table's weight as the decider last read it from its policy (table
    properties included), shared with the decider; a table not in it weighs what its
    configured policy says. ``intents`` and ``clean``
    (:func:`icefloe.jobs.maintenance.orphans.cleaner`): the records of abandoned attempts and what
    deletes their files; without ``intents`` there is no sweep."""

    def __init__(
        self,
        cfg: Config,
        settings: DeciderSettings,
        queue: PriorityQueue,
        ledger: Ledger,
        launcher: Launcher,
        weights: dict[str, int],
        intents: Intents | None = None,
        clean: Callable[[Intent], int] | None = None,
        history: Callable[[], int] | None = None,
    ):
        if intents is not None and clean is None:
            raise ValueError("intents without clean: nothing would delete abandoned files")
        self.cfg, self.s = cfg, settings
        self.queue, self.ledger, self.launcher = queue, ledger, launcher
        self.weights = weights
        self.intents, self.clean = intents, clean
        self.history = history  # appends the actors' records to the history table
        self._next_flush = float("-inf")
        self.budget = budget_of(cfg)  # each table's batch (icefloe.state.queue.budget_of)

    def dispatch(self, now: float, everything: bool = False) -> int:
        """Fill the ready set up to ``ready_depth`` items in fair order, a table's batch at a
        time (its next items that one actor takes together, ``icefloe.state.queue.take_batch``:
        the scheduler charges the batch's bytes to the table's share, so shares stay fair
        in bytes and the budget caps how much one pick can take); persist the scheduler's
        state. Returns the items moved.

        ``everything``: move the whole backlog, still in fair order (the ready set is FIFO).
        A one-shot pass (``decide --once``, the Airflow DAG) does this, since no later pass
        will top the ready set up while its actors run.
        """
        depth = self.queue.depth()
        room = depth["pending"] if everything else self.s.ready_depth - depth["ready"]
        if room <= 0:
            return 0
        sched = fair_priority_scheduler(
            self.s.quantum_bytes, self.s.aging_seconds, state=self.ledger.scheduler_state()
        )
        budget = self.budget
        batches = self.queue.batches(budget)
        sent = 0
        while sent < room and batches:
            views = {
                t: FlowView(
                    sum(max(0, it.cost_bytes) for it in batch),
                    batch[0].enqueued_at,
                    max(0, batch[0].priority),
                    self._weight(t),
                )
                for t, batch in batches.items()
            }
            chosen = sched.choose(views, now)
            if chosen is None:
                break
            moved = [m for m in self.queue.dispatch_many([chosen] * len(batches[chosen])) if m]
            sent += len(moved)
            batches.pop(chosen)
            batches |= self.queue.batches(budget, [chosen])  # its next batch, if any
            if not moved:
                break
        self.ledger.save_scheduler_state(sched.to_state())
        self.ledger.count({"dispatches": sent})
        return sent

    def _weight(self, table: str) -> int:
        if table not in self.weights:
            self.weights[table] = self.cfg.policy_for(table).weight
        return self.weights[table]

    def live_actors(self, now: float) -> int:
        beats = self.ledger.actors()
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
        if want > live and self.ledger.claim_launch(now, self.s.lease_seconds):
            self.launcher.launch(want - live)
        return want

    def sweep(self) -> int:
        """Delete the files of abandoned attempts (an actor killed, a lease expired) that
        no snapshot references; returns how many (:func:`icefloe.state.intents.sweep`)."""
        if self.intents is None or self.clean is None:
            return 0
        deleted = sweep(self.intents, self.clean)
        if deleted:
            log.info("deleted %d file(s) left by abandoned attempts", deleted)
            self.ledger.count({"orphans_deleted": deleted})
        return deleted

    def flush_history(self, now: float, due_only: bool = True) -> int:
        """Every ``history.flush_seconds`` (at once with ``due_only`` False: a leader that
        stops): the actors' records appended to the history table
        (:func:`icefloe.jobs.history.flush.flush`, one commit); how many. A failure (the catalog
        away, a commit conflict) waits for the next time: the records stay in Redis until
        the table holds them."""
        if self.history is None or (due_only and now < self._next_flush):
            return 0
        self._next_flush = now + self.cfg.history.flush_seconds
        try:
            return self.history()
        except ServiceUnavailable:
            raise  # Redis: the loop backs off
        except Exception as e:
            log.warning("history not appended this time: %s", describe(e))
            return 0
