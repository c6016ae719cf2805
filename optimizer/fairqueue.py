"""Fair queueing across tables: which flow's head action is dispatched next.

Scheduling logic only, deterministic and clock-injected: callers pass ``now`` (seconds
on their own clock) and a snapshot of the backlogged flows; nothing here reads a clock,
sleeps or talks to Redis. A *flow* is one table's queue of pending actions; a
``FlowView`` describes its head item. Each scheduler keeps its state (deficits, round
pointer) as plain data: ``to_state()`` returns a JSON-ready dict and the constructor's
``state=`` restores it, so the decider can keep the state in Redis between calls.

``choose(flows, now)`` returns the flow whose head item to dispatch, or None when no
flow is backlogged, and *commits*: it updates its state as if that item was dispatched.
Flows absent from ``flows`` are idle; ties in the ring are broken by flow id order.

* ``WeightedRoundRobin`` -- each flow dispatches ``weight`` items per turn. Fair in
  item counts; right when actions cost about the same.
* ``DeficitWeightedRoundRobin`` -- fair in bytes to rewrite. Each visit adds
  ``quantum · weight`` to a flow's deficit; the flow dispatches while its head fits in
  the deficit. An idle flow forfeits its deficit. Over any run of rounds a backlogged
  flow gets ``quantum · weight`` per round, within one maximum item cost.
  Burst bound: when flow B becomes backlogged with a head of cost ``c_B``, at most
  ``(ceil(c_B / (quantum · w_B)) + 1) · Σ_{f≠B} floor((quantum · w_f + M_f) / m_f)``
  other dispatches happen before B's head, where ``M_f``/``m_f`` are the largest and
  smallest item costs of flow f: B needs ``ceil(c_B / (quantum · w_B))`` visits, other
  flows get at most one visit per round plus the one in progress, and a visit sends at
  most ``quantum · w_f`` plus a carried deficit below ``M_f``. One table's burst of
  10,000 actions therefore delays another table by a bounded number of dispatches,
  whatever the burst's length.
* ``PriorityScheduler`` -- Fixed Priority Preemptive across classes (0 is the highest):
  only flows of the best class present compete, so a newly queued higher-class action
  goes before every waiting lower-class one at the next dispatch (running actions are
  never interrupted). Inside the class an inner scheduler (DWRR by default) shares
  fairly. Aging: a head item's effective class is ``class - floor(age / aging_seconds)``
  (never above class 0), so an item of class c competes in class 0 after at most
  ``c · aging_seconds`` and from then on the inner scheduler's bound applies. Without
  aging a steady stream of class-0 work starves lower classes, by design.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True, slots=True)
class FlowView:
    """What a scheduler may know about a backlogged flow: its head item and its share."""

    head_cost: int
    enqueued_at: float
    priority: int = 0
    weight: int = 1

    def __post_init__(self) -> None:
        if self.head_cost < 0:
            raise ValueError(f"head_cost must be >= 0 bytes, got {self.head_cost}")
        if self.weight < 1:
            raise ValueError(f"weight must be >= 1, got {self.weight}")
        if self.priority < 0:
            raise ValueError(f"priority must be >= 0 (0 is the highest), got {self.priority}")


class Scheduler(Protocol):
    """What the Redis-backed queue needs from a scheduling policy."""

    def choose(self, flows: Mapping[str, FlowView], now: float) -> str | None: ...

    def to_state(self) -> dict[str, Any]: ...


def _visit_order(flows: Mapping[str, FlowView], after: str | None) -> list[str]:
    """Backlogged flow ids in ring (id) order, starting after ``after``."""
    ring = sorted(flows)
    cut = 0 if after is None else bisect_right(ring, after)
    return ring[cut:] + ring[:cut]


class WeightedRoundRobin:
    """Each backlogged flow dispatches ``weight`` items per turn, in flow id order."""

    def __init__(self, state: Mapping[str, Any] | None = None) -> None:
        state = state or {}
        self.current: str | None = state.get("current")
        self.credit: int = int(state.get("credit", 0))

    def choose(self, flows: Mapping[str, FlowView], now: float) -> str | None:
        if self.current is not None and self.current in flows and self.credit > 0:
            self.credit -= 1
            return self.current
        if not flows:
            self.current, self.credit = None, 0
            return None
        nxt = _visit_order(flows, self.current)[0]
        self.current, self.credit = nxt, flows[nxt].weight - 1
        return nxt

    def to_state(self) -> dict[str, Any]:
        return {"current": self.current, "credit": self.credit}


class DeficitWeightedRoundRobin:
    """Deficit Weighted Round Robin in bytes: ``quantum · weight`` per flow per round."""

    def __init__(self, quantum: int, state: Mapping[str, Any] | None = None) -> None:
        if quantum <= 0:
            raise ValueError(f"quantum must be > 0 bytes, got {quantum}")
        self.quantum = quantum
        state = state or {}
        self.current: str | None = state.get("current")
        self.deficits: dict[str, int] = {
            str(k): int(v) for k, v in state.get("deficits", {}).items()
        }

    def choose(self, flows: Mapping[str, FlowView], now: float) -> str | None:
        for idle in [f for f in self.deficits if f not in flows]:
            del self.deficits[idle]  # an idle flow forfeits its deficit
        if not flows:
            self.current = None
            return None
        cur = self.current
        if cur is not None and cur in flows and self.deficits.get(cur, 0) >= flows[cur].head_cost:
            self.deficits[cur] -= flows[cur].head_cost  # the visit in progress goes on
            return cur
        # Advance: find the first visit, in ring order over as many rounds as needed, at
        # which a flow's deficit covers its head; credit every visit up to it at once.
        order = _visit_order(flows, cur)
        k = len(order)
        best_key, best_pos, best_rounds = -1, 0, 0
        for pos, f in enumerate(order):
            view = flows[f]
            share = self.quantum * view.weight
            need = view.head_cost - self.deficits.get(f, 0)
            rounds = 1 if need <= share else -(-need // share)
            key = (rounds - 1) * k + pos
            if best_key < 0 or key < best_key:
                best_key, best_pos, best_rounds = key, pos, rounds
        for pos, f in enumerate(order):
            visits = best_rounds if pos <= best_pos else best_rounds - 1
            if visits:
                share = self.quantum * flows[f].weight
                self.deficits[f] = self.deficits.get(f, 0) + visits * share
        winner = order[best_pos]
        self.deficits[winner] -= flows[winner].head_cost
        self.current = winner
        return winner

    def to_state(self) -> dict[str, Any]:
        return {"current": self.current, "deficits": dict(self.deficits)}


InnerFactory = Callable[[Mapping[str, Any] | None], Scheduler]


class PriorityScheduler:
    """Fixed priority across classes with aging; an inner fair scheduler per class."""

    def __init__(
        self,
        inner: InnerFactory,
        aging_seconds: float | None = None,
        state: Mapping[str, Any] | None = None,
    ) -> None:
        if aging_seconds is not None and aging_seconds <= 0:
            raise ValueError(f"aging_seconds must be > 0 or None, got {aging_seconds}")
        self.aging_seconds = aging_seconds
        self._inner = inner
        classes = (state or {}).get("classes", {})
        self.classes: dict[int, Scheduler] = {int(c): inner(s) for c, s in classes.items()}

    def effective_class(self, view: FlowView, now: float) -> int:
        """The head item's class after aging: one class better per ``aging_seconds``."""
        if self.aging_seconds is None:
            return view.priority
        age = max(0.0, now - view.enqueued_at)
        return max(0, view.priority - int(age // self.aging_seconds))

    def choose(self, flows: Mapping[str, FlowView], now: float) -> str | None:
        if not flows:
            return None
        eff = {f: self.effective_class(v, now) for f, v in flows.items()}
        best = min(eff.values())
        members = {f: v for f, v in flows.items() if eff[f] == best}
        sched = self.classes.get(best)
        if sched is None:
            sched = self.classes[best] = self._inner(None)
        return sched.choose(members, now)

    def to_state(self) -> dict[str, Any]:
        return {"classes": {str(c): s.to_state() for c, s in sorted(self.classes.items())}}


def fair_priority_scheduler(
    quantum: int,
    aging_seconds: float | None = None,
    state: Mapping[str, Any] | None = None,
) -> PriorityScheduler:
    """The default composition: fixed priority across classes, DWRR across tables."""

    def inner(s: Mapping[str, Any] | None) -> Scheduler:
        return DeficitWeightedRoundRobin(quantum, state=s)

    return PriorityScheduler(inner, aging_seconds=aging_seconds, state=state)
