"""Write intents: recorded only under the lease, abandoned once the lease is gone, and the
actor's clean-up of abandoned attempts (in-memory queue; the contract,
``tests/support/contracts/intents.py``, runs on Redis in ``tests/redis/test_intents_redis.py``)."""

from __future__ import annotations

from typing import Any

import pytest

from icefloe.service.actor.leases import LeaseLost
from icefloe.service.actor.loop import Actor
from icefloe.state.intents import Intent, Intents
from icefloe.state.intents.memory import MemoryIntents
from icefloe.state.queue import ActionItem, PriorityQueue
from icefloe.state.queue.memory import MemoryQueue
from tests.support.clock import Clock
from tests.support.contracts.intents import T0, IntentsContract

pytestmark = [pytest.mark.unit]


class TestMemoryIntents(IntentsContract):
    __test__ = True

    def make(self) -> tuple[PriorityQueue, Intents]:
        q = MemoryQueue()
        return q, MemoryIntents(q.holder)


# ---- the actor with intents -------------------------------------------------------------


def actor_setup(runner: Any) -> tuple[MemoryQueue, MemoryIntents, Actor, list[Intent]]:
    q = MemoryQueue(max_attempts=3)
    q.enqueue(ActionItem.new("db.t", "p=1", "merge", 1, 100, 1.0, T0), T0)
    q.dispatch("db.t")
    intents = MemoryIntents(q.holder)
    cleaned: list[Intent] = []

    def clean(intent: Intent) -> int:
        cleaned.append(intent)
        return len(intent.paths)

    clock = Clock()
    actor = Actor(q, runner, clock=clock, sleep=clock.sleep, intents=intents, clean=clean)
    return q, intents, actor, cleaned


def test_a_failed_attempt_has_its_recorded_files_cleaned_at_once() -> None:
    def runner(item: ActionItem, guard: Any) -> dict[str, Any]:
        guard.before_write(["/t/data/p=1/icefloe-x-00000.parquet"], ["/t/data/icefloe-r/"])
        raise RuntimeError("write failed")

    q, intents, actor, cleaned = actor_setup(runner)
    report = actor.run(max_actions=1)
    assert report.failed == 1
    [intent] = cleaned
    assert intent.paths == ("/t/data/p=1/icefloe-x-00000.parquet",)
    assert intent.prefixes == ("/t/data/icefloe-r/",)
    assert intents.all() == []  # cleaned, then forgotten


def test_a_successful_attempt_forgets_its_intent_without_cleaning() -> None:
    def runner(item: ActionItem, guard: Any) -> dict[str, Any]:
        guard.before_write(["/x.parquet"], [])
        guard.before_commit()
        return {"bytes_rewritten": 1}

    q, intents, actor, cleaned = actor_setup(runner)
    assert actor.run(max_actions=1).done == 1
    assert cleaned == [] and intents.all() == []


def note_cleaning(actor: Actor, order: list[str]) -> None:
    """Wrap ``actor``'s clean-up so that it notes each call in ``order``."""
    original = actor.clean

    def clean(intent: Intent) -> int:
        order.append("clean")
        assert original is not None
        return original(intent)

    actor.clean = clean


def test_a_retry_cleans_what_a_killed_attempt_left_before_it_runs() -> None:
    order: list[str] = []

    def runner(item: ActionItem, guard: Any) -> dict[str, Any]:
        order.append("run")
        return {}

    q, intents, actor, cleaned = actor_setup(runner)
    # a first attempt recorded its files, then its actor died (the lease expires)
    dead = q.dequeue(T0, 30)
    assert dead is not None
    intents.record(dead.item.id, dead.token, "db.t", T0, ["/orphan.parquet"])
    q.reap(T0 + 31)
    q.dispatch("db.t")
    actor.clock.now = T0 + 32  # type: ignore[attr-defined]
    note_cleaning(actor, order)
    assert actor.run(max_actions=1).done == 1
    assert order == ["clean", "run"]
    assert [i.paths for i in cleaned] == [("/orphan.parquet",)]


def test_a_lost_lease_stops_the_write_and_the_commit() -> None:
    def runner(item: ActionItem, guard: Any) -> dict[str, Any]:
        q.reap(T0 + 1000)  # the lease expires under the running attempt
        with pytest.raises(LeaseLost):
            guard.before_write(["/late.parquet"], [])
        with pytest.raises(LeaseLost):
            guard.before_commit()
        raise LeaseLost("stopped")

    q, intents, actor, cleaned = actor_setup(runner)
    report = actor.run(max_actions=1)
    assert report.failed == 1
    assert intents.all() == []  # nothing was recorded after the lease was gone


# ---- a batch: one intent for all its items ----------------------------------------------


def batch_setup(
    batch_runner: Any, n: int = 4
) -> tuple[MemoryQueue, MemoryIntents, Actor, list[Intent], list[dict[str, Any]]]:
    from icefloe.state.queue import Budget

    q = MemoryQueue(max_attempts=3)
    for i in range(n):
        q.enqueue(ActionItem.new("db.t", f"p={i}", "merge", 1, 100, 1.0, T0), T0)
    q.dispatch_many(["db.t"] * n)
    intents = MemoryIntents(q.holder)
    cleaned: list[Intent] = []
    recorded: list[dict[str, Any]] = []

    def clean(intent: Intent) -> int:
        cleaned.append(intent)
        return len(intent.paths)

    def single(item: ActionItem, guard: Any) -> dict[str, Any]:
        raise AssertionError("a batch must not run item by item")

    clock = Clock()
    actor = Actor(
        q,
        single,
        clock=clock,
        sleep=clock.sleep,
        intents=intents,
        clean=clean,
        recorder=recorded.append,
        batch_runner=batch_runner,
        budget=lambda table: Budget(10),
    )
    return q, intents, actor, cleaned, recorded


def test_a_batch_commits_once_and_acks_every_item_once() -> None:
    from icefloe.service.actor.runners import BatchResult

    seen: list[list[str]] = []

    def run(items: Any, guard: Any) -> BatchResult:
        seen.append([it.partition for it in items])
        guard.before_write(["/t/a.parquet", "/t/b.parquet"], [])
        guard.before_commit()
        parts = [{"key": it.partition, "status": "rewritten", "mse_before": 1.0} for it in items]
        return BatchResult({"partitions": parts, "snapshot_ids": [7]}, {})

    q, intents, actor, cleaned, recorded = batch_setup(run)
    report = actor.run(max_actions=1)
    assert sorted(seen[0]) == ["p=0", "p=1", "p=2", "p=3"]
    assert (report.done, report.failed, report.lost) == (4, 0, 0)
    assert q.depth() == {"pending": 0, "ready": 0, "inflight": 0, "dead": 0}
    assert cleaned == [] and intents.all() == []  # committed: the intent forgotten
    [entry] = recorded
    assert entry["outcome"] == "done×4" and entry["batch"]["partitions_per_commit"] == 4.0


def test_a_conflicting_partition_is_retried_alone_and_the_rest_acked() -> None:
    from icefloe.service.actor.runners import BatchResult

    calls: list[list[str]] = []

    def run(items: Any, guard: Any) -> BatchResult:
        calls.append([it.partition for it in items])
        guard.before_write(["/t/new.parquet"], [])
        failed = {it.id: "commit conflicted 3 times" for it in items if it.partition == "p=2"}
        return BatchResult({"partitions": [], "snapshot_ids": [7]}, failed)

    q, intents, actor, cleaned, recorded = batch_setup(run)
    report = actor.run(max_actions=1)
    assert (report.done, report.failed) == (3, 1)
    assert q.depth() == {"pending": 1, "ready": 0, "inflight": 0, "dead": 0}
    assert [i.paths for i in cleaned] == [("/t/new.parquet",)]  # unreferenced files: swept
    assert intents.all() == []
    assert recorded[0]["outcome"] == "done×3 pending×1"
    q.dispatch("db.t")
    single: list[str] = []
    actor.runner = lambda item, guard: single.append(item.partition) or {}
    assert actor.run(max_actions=1).done == 1
    assert single == ["p=2"] and len(calls) == 1  # the retry ran alone


def test_a_failed_batch_nacks_every_item_and_cleans_its_files() -> None:
    def run(items: Any, guard: Any) -> Any:
        guard.before_write(["/t/half.parquet"], ["/t/data/icefloe-r/"])
        raise RuntimeError("S3 away mid-write")

    q, intents, actor, cleaned, recorded = batch_setup(run)
    report = actor.run(max_actions=1)
    assert (report.done, report.failed) == (0, 4)
    assert q.depth()["pending"] == 4 and len(cleaned) == 1 and intents.all() == []
    assert recorded[0]["ok"] is False and recorded[0]["outcome"] == "pending×4"


def test_a_killed_batch_is_cleaned_before_its_items_run_again() -> None:
    """The actor died mid-batch: its leases expire; the retry (batched again: an expired
    lease is no failure of the items) first deletes what the dead attempt recorded."""
    from icefloe.service.actor.runners import BatchResult
    from icefloe.state.queue import Budget

    order: list[str] = []

    def run(items: Any, guard: Any) -> BatchResult:
        order.append(f"run {len(items)}")
        return BatchResult({"partitions": []}, {})

    q, intents, actor, cleaned, recorded = batch_setup(run)
    dead = q.dequeue_batch(T0, 30, lambda t: Budget(10))
    assert len(dead) == 4
    intents.record(dead[0].item.id, dead[0].token, "db.t", T0, ["/orphan.parquet"])
    q.reap(T0 + 31)
    q.dispatch_many(["db.t"] * 4)
    actor.clock.now = T0 + 32  # type: ignore[attr-defined]
    note_cleaning(actor, order)
    assert actor.run(max_actions=1).done == 4
    assert order == ["clean", "run 4"]
    assert [i.paths for i in cleaned] == [("/orphan.parquet",)]


def test_a_lost_lease_of_any_item_stops_the_batch_commit() -> None:
    def run(items: Any, guard: Any) -> Any:
        guard.before_write(["/t/x.parquet"], [])
        q.nack(items[2].id, q.holder(items[2].id) or "", "taken", T0)  # one lease gone
        with pytest.raises(LeaseLost, match="p=2"):
            guard.before_commit()
        raise LeaseLost("stopped")

    q, intents, actor, cleaned, recorded = batch_setup(run)
    report = actor.run(max_actions=1)
    assert report.done == 0 and len(cleaned) == 1 and intents.all() == []
