"""Fair queueing by simulation: weighted shares, burst isolation, priority, aging, state."""

from __future__ import annotations

import json
import random
from collections import deque
from collections.abc import Callable

import pytest

from icefloe.optimizer import (
    DeficitWeightedRoundRobin,
    FlowView,
    PriorityScheduler,
    Scheduler,
    WeightedRoundRobin,
    fair_priority_scheduler,
)

pytestmark = pytest.mark.unit

MB = 1 << 20


class Sim:
    """Per-flow FIFO queues of (cost, enqueued_at), a clock, and a dispatch log."""

    def __init__(
        self, weights: dict[str, int] | None = None, classes: dict[str, int] | None = None
    ) -> None:
        self.queues: dict[str, deque[tuple[int, float]]] = {}
        self.weights = weights or {}
        self.classes = classes or {}
        self.now = 0.0
        self.log: list[tuple[str, int]] = []

    def push(self, flow: str, cost: int, count: int = 1) -> None:
        q = self.queues.setdefault(flow, deque())
        q.extend([(cost, self.now)] * count)

    def views(self) -> dict[str, FlowView]:
        return {
            f: FlowView(
                head_cost=q[0][0],
                enqueued_at=q[0][1],
                priority=self.classes.get(f, 0),
                weight=self.weights.get(f, 1),
            )
            for f, q in self.queues.items()
            if q
        }

    def step(self, sched: Scheduler, tick: float = 1.0) -> str | None:
        chosen = sched.choose(self.views(), self.now)
        if chosen is not None:
            cost, _ = self.queues[chosen].popleft()
            self.log.append((chosen, cost))
        self.now += tick
        return chosen


def shares(log: list[tuple[str, int]], by_bytes: bool) -> dict[str, float]:
    totals: dict[str, int] = {}
    for flow, cost in log:
        totals[flow] = totals.get(flow, 0) + (cost if by_bytes else 1)
    grand = sum(totals.values())
    return {f: v / grand for f, v in totals.items()}


def assert_within_5_percent(got: dict[str, float], weights: dict[str, int]) -> None:
    total = sum(weights.values())
    for flow, w in weights.items():
        want = w / total
        assert abs(got[flow] - want) <= 0.05 * want, (flow, got[flow], want)


def test_empty_means_nothing_to_dispatch() -> None:
    for sched in (
        WeightedRoundRobin(),
        DeficitWeightedRoundRobin(MB),
        fair_priority_scheduler(MB, aging_seconds=60),
    ):
        assert sched.choose({}, 0.0) is None


def test_invalid_config() -> None:
    with pytest.raises(ValueError):
        DeficitWeightedRoundRobin(0)
    with pytest.raises(ValueError):
        fair_priority_scheduler(MB, aging_seconds=0)
    with pytest.raises(ValueError):
        FlowView(head_cost=1, enqueued_at=0, weight=0)
    with pytest.raises(ValueError):
        FlowView(head_cost=-1, enqueued_at=0)


def test_wrr_shares_dispatches_by_weight() -> None:
    weights = {"a": 1, "b": 2, "c": 5}
    sim = Sim(weights)
    for f in weights:
        sim.push(f, MB, 20_000)
    sched = WeightedRoundRobin()
    for _ in range(10_000):
        sim.step(sched)
    assert_within_5_percent(shares(sim.log, by_bytes=False), weights)
    assert [f for f, _ in sim.log[:8]] == ["a", "b", "b", "c", "c", "c", "c", "c"]


def test_dwrr_shares_bytes_by_weight_despite_uneven_item_costs() -> None:
    rng = random.Random(7)
    weights = {"small-items": 1, "mixed": 2, "big-items": 3}
    sim = Sim(weights)
    for _ in range(20_000):
        sim.push("small-items", rng.randint(1, 8) * MB)
        sim.push("mixed", rng.randint(1, 512) * MB)
        sim.push("big-items", rng.randint(256, 1024) * MB)
    sched = DeficitWeightedRoundRobin(quantum=256 * MB)
    for _ in range(10_000):
        sim.step(sched)
    assert_within_5_percent(shares(sim.log, by_bytes=True), weights)


def dwrr_burst_bound(
    quantum: int, head_b: int, w_b: int, others: list[tuple[int, int, int]]
) -> int:
    """The docstring's bound; ``others`` = (weight, max cost, min cost) per other flow."""
    visits = -(-head_b // (quantum * w_b)) + 1
    return visits * sum((quantum * w + big) // small for w, big, small in others)


@pytest.mark.parametrize("arrival", [0, 1, 7, 500, 4_321, 9_990])
def test_a_burst_does_not_delay_another_table_beyond_the_bound(arrival: int) -> None:
    quantum, cost_a, cost_b = 512 * MB, 64 * MB, 700 * MB
    bound = dwrr_burst_bound(quantum, cost_b, 1, [(1, cost_a, cost_a)])
    # B needs two visits (700 MB > one 512 MB quantum), A may be mid-visit when B
    # arrives: at most three visits of A's, each at most (512 + 64) / 64 = 9 items.
    assert bound == 27
    sim = Sim()
    sim.push("a-burst", cost_a, 10_000)
    sched = DeficitWeightedRoundRobin(quantum)
    for _ in range(arrival):
        sim.step(sched)
    sim.push("b", cost_b)
    waited = 0
    while sim.step(sched) != "b":
        waited += 1
    assert waited <= bound


def test_a_burst_of_10000_from_one_class_mate_with_priority_composition() -> None:
    sim = Sim(weights={"a": 1, "b": 1, "c": 1})
    sim.push("a", 64 * MB, 10_000)
    sim.push("c", 64 * MB, 10_000)
    sched = fair_priority_scheduler(quantum=512 * MB)
    for _ in range(3_333):
        sim.step(sched)
    sim.push("b", 100 * MB)
    bound = dwrr_burst_bound(512 * MB, 100 * MB, 1, [(1, 64 * MB, 64 * MB)] * 2)
    waited = 0
    while sim.step(sched) != "b":
        waited += 1
    assert waited <= bound


def test_higher_class_always_goes_first_without_aging() -> None:
    sim = Sim(classes={"urgent": 0, "normal": 1, "low": 2})
    sim.push("low", MB, 50)
    sim.push("normal", MB, 50)
    sim.push("urgent", MB, 50)
    sched = fair_priority_scheduler(quantum=4 * MB)
    for _ in range(150):
        sim.step(sched, tick=3_600.0)  # hours pass: without aging it does not matter
    order = [f for f, _ in sim.log]
    assert order == ["urgent"] * 50 + ["normal"] * 50 + ["low"] * 50


def test_a_new_higher_class_item_preempts_waiting_lower_class_work() -> None:
    sim = Sim(classes={"normal": 1, "urgent": 0})
    sim.push("normal", MB, 100)
    sched = fair_priority_scheduler(quantum=4 * MB)
    for _ in range(10):
        sim.step(sched)
    sim.push("urgent", MB)
    assert sim.step(sched) == "urgent"


def test_aging_prevents_starvation() -> None:
    aging = 100.0
    sim = Sim(classes={"hot-1": 0, "hot-2": 0, "cold": 2})
    sim.push("cold", 64 * MB)
    sched = fair_priority_scheduler(quantum=128 * MB, aging_seconds=aging)
    served_at = None
    for _ in range(10_000):
        sim.push("hot-1", 64 * MB)  # class-0 work keeps arriving faster than it drains
        sim.push("hot-2", 64 * MB)
        if sim.step(sched) == "cold":
            served_at = sim.now
            break
    assert served_at is not None
    bound = dwrr_burst_bound(128 * MB, 64 * MB, 1, [(1, 64 * MB, 64 * MB)] * 2)
    assert served_at <= 2 * aging + bound + 1
    assert served_at > 2 * aging  # and not before it has aged into class 0


def test_effective_class() -> None:
    sched = fair_priority_scheduler(MB, aging_seconds=10)
    view = FlowView(head_cost=1, enqueued_at=100.0, priority=3)
    assert [sched.effective_class(view, t) for t in (50, 100, 109, 110, 125, 1e9)] == [
        3,
        3,
        3,
        2,
        1,
        0,
    ]


def replay(make: Callable[[dict[str, object] | None], Scheduler], restore_every: int) -> list[str]:
    rng = random.Random(3)
    sim = Sim(weights={"a": 1, "b": 3, "c": 2}, classes={"a": 0, "b": 0, "c": 1})
    sched = make(None)
    for i in range(2_000):
        if rng.random() < 0.6:
            sim.push(rng.choice("abc"), rng.randint(1, 300) * MB)
        if restore_every and i % restore_every == 0:
            sched = make(json.loads(json.dumps(sched.to_state())))
        sim.step(sched, tick=rng.random() * 20)
    return [f for f, _ in sim.log]


@pytest.mark.parametrize(
    "make",
    [
        lambda s: WeightedRoundRobin(state=s),
        lambda s: DeficitWeightedRoundRobin(128 * MB, state=s),
        lambda s: fair_priority_scheduler(128 * MB, aging_seconds=60, state=s),
        lambda s: PriorityScheduler(lambda t: WeightedRoundRobin(state=t), 30, state=s),
    ],
)
def test_state_survives_a_json_round_trip(
    make: Callable[[dict[str, object] | None], Scheduler],
) -> None:
    uninterrupted = replay(make, restore_every=0)
    assert len(uninterrupted) > 1_000
    assert replay(make, restore_every=1) == uninterrupted
    assert replay(make, restore_every=7) == uninterrupted
