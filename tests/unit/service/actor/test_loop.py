"""The actor loop with an injected fake runner and the in-memory queue."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from icefloe.base.partition_key import PartitionKey, display_key
from icefloe.service.actor import runners
from icefloe.service.actor.loop import Actor
from icefloe.service.actor.runners import spark_runner
from icefloe.state.queue import ActionItem
from icefloe.state.queue.memory import MemoryQueue
from tests.support.clock import Clock

pytestmark = [pytest.mark.unit]

T0 = 1_790_000_000.0


def queue_with(n: int, max_attempts: int = 3) -> MemoryQueue:
    q = MemoryQueue(max_attempts=max_attempts)
    for i in range(n):
        key = PartitionKey.of(0, [("p", "int")], [i]).encode()
        q.enqueue(ActionItem.new("db.t", key, "merge", 1, 100, 1.0, T0), T0)
        q.dispatch("db.t")
    return q


def test_runs_and_acks_each_item_and_records_it() -> None:
    q = queue_with(3)
    seen: list[str] = []
    recorded: list[dict[str, Any]] = []
    clock = Clock()

    def runner(item: ActionItem, guard: object = None) -> dict[str, Any]:
        seen.append(item.partition or "")
        return {
            "bytes_rewritten": 10,
            "files_rewritten": 2,
            "partitions": [
                {"status": "rewritten", "mse_before": 9.0, "actual_mse_after": 1.0},
                {"status": "rewritten", "mse_before": 4.0, "engine": "arrow+spark"},
                {"status": "rewritten", "mse_before": 4.0, "engine": "arrow"},
                {"status": "skipped", "mse_before": 0.0, "engine": ""},
            ],
        }

    report = Actor(
        q, runner, recorder=recorded.append, clock=clock, sleep=clock.sleep, lease_seconds=60
    ).run(idle_exit=5)
    assert report.done == 3 and report.failed == 0 and report.idle_exit
    assert [display_key(p) for p in seen] == ["p=0", "p=1", "p=2"]
    assert q.depth() == {"pending": 0, "ready": 0, "inflight": 0, "dead": 0}
    assert [r["ok"] for r in recorded] == [True] * 3
    assert recorded[0]["mse_before"] == 9.0 and recorded[0]["mse_after"] == 1.0
    assert recorded[0]["bytes_rewritten"] == 10
    assert recorded[0]["engine"] == "arrow+spark"  # what wrote the files, from the report


def test_failures_are_nacked_then_dead_lettered_with_the_error() -> None:
    q = queue_with(1, max_attempts=2)
    clock = Clock()

    def runner(item: ActionItem, guard: object = None) -> dict[str, Any]:
        raise RuntimeError(f"disk full on attempt {item.attempts + 1}")

    actor = Actor(q, runner, clock=clock, sleep=clock.sleep)
    assert actor.run(max_actions=1).failed == 1
    assert q.depth()["pending"] == 1  # back for a retry, not lost
    q.dispatch("db.t")
    assert actor.run(max_actions=1).failed == 1
    (dead,) = q.dead()
    assert dead.attempts == 2 and dead.last_error == "RuntimeError: disk full on attempt 2"


def test_max_actions_and_idle_exit() -> None:
    q = queue_with(5)
    clock = Clock()
    actor = Actor(q, lambda item, guard: {}, clock=clock, sleep=clock.sleep, poll_seconds=1)
    assert actor.run(max_actions=2).done == 2
    assert q.depth()["ready"] == 3
    report = actor.run(idle_exit=10)
    assert report.done == 3 and report.idle_exit
    assert clock.now - T0 >= 10  # waited (on the fake clock) before giving up


def test_heartbeat_is_sent_while_working() -> None:
    q = queue_with(1)
    beats: list[str] = []
    clock = Clock()
    Actor(
        q,
        lambda item, guard: {},
        heartbeat=lambda a, now: beats.append(a),
        clock=clock,
        sleep=clock.sleep,
        actor_id="a1",
    ).run(max_actions=1)
    assert beats == ["a1"]


def test_lease_is_renewed_in_the_background_while_the_runner_works() -> None:
    q = queue_with(1)
    renewed = threading.Event()
    real_renew = q.renew

    def renew(item_id: str, token: str, now: float, lease_seconds: float) -> bool:
        ok = real_renew(item_id, token, now, lease_seconds)
        renewed.set()
        return ok

    q.renew = renew  # type: ignore[method-assign]

    def runner(item: ActionItem, guard: object = None) -> dict[str, Any]:
        assert renewed.wait(timeout=30), "the lease was never renewed"
        return {}

    recorded: list[dict[str, Any]] = []
    report = Actor(q, runner, lease_seconds=0.03, recorder=recorded.append).run(max_actions=1)
    assert report.done == 1 and recorded[0]["renewals"] >= 1


def test_a_lost_lease_is_reported_not_acked() -> None:
    q = queue_with(1)
    clock = Clock()

    def runner(item: ActionItem, guard: object = None) -> dict[str, Any]:
        clock.now += 1000
        q.reap(clock.now)  # the reaper thinks we died
        return {}

    report = Actor(q, runner, clock=clock, sleep=clock.sleep, lease_seconds=60).run(max_actions=1)
    assert report.lost == 1 and report.done == 0
    assert q.depth()["pending"] == 1  # someone else will run it again


def test_a_report_with_failed_partitions_is_nacked_not_acked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """optimize_table reports a commit that kept conflicting as a failed partition: the
    action must come back (nack), not be acked as if its work were done."""
    from icefloe.service.actor.runners import spark_runner

    class Report:
        def to_dict(self) -> dict[str, Any]:
            return {
                "partitions_failed": 1,
                "partitions": [
                    {"partition": "p=0", "status": "failed", "reason": "commit conflicted 3 times"}
                ],
            }

    monkeypatch.setattr(runners, "optimize_table", lambda *a, **k: Report())
    q = queue_with(1)
    clock = Clock()
    recorded: list[dict[str, Any]] = []
    actor = Actor(
        q,
        spark_runner(cfg=None, spark=object()),
        clock=clock,
        sleep=clock.sleep,
        recorder=recorded.append,
    )
    report = actor.run(max_actions=1)
    assert report.failed == 1 and report.done == 0
    assert "p=0: commit conflicted 3 times" in recorded[0]["error"]
    assert q.depth()["pending"] == 1  # back on the queue with its attempt counted


def test_bookkeeping_failures_never_stop_the_actor() -> None:
    q = queue_with(2)
    clock = Clock()

    def broken(*_: Any) -> None:
        raise ConnectionError("redis blip")

    actor = Actor(
        q,
        lambda item, guard: {"bytes_rewritten": 1},
        clock=clock,
        sleep=clock.sleep,
        recorder=broken,
        heartbeat=broken,
    )
    assert actor.run(max_actions=2).done == 2


class Flaky:
    """A queue whose named calls raise ServiceUnavailable ``times`` times (Redis away)."""

    def __init__(self, q: MemoryQueue, failing: str, times: int) -> None:
        self.q, self.failing, self.left = q, failing, times
        self.max_attempts = q.max_attempts

    def __getattr__(self, name: str) -> Any:
        real = getattr(self.q, name)
        if name != self.failing:
            return real

        def call(*args: Any, **kwargs: Any) -> Any:
            if self.left > 0:
                self.left -= 1
                from icefloe.base.errors import ServiceUnavailable

                raise ServiceUnavailable(f"redis unreachable during queue {name}")
            return real(*args, **kwargs)

        return call


@pytest.mark.parametrize("outage", [2, 1000])
def test_an_ack_is_retried_through_a_redis_outage_and_the_action_recorded(outage: int) -> None:
    q = queue_with(1)
    clock = Clock()
    recorded: list[dict[str, Any]] = []
    flaky = Flaky(q, "ack", outage)
    actor = Actor(
        flaky,  # type: ignore[arg-type]
        lambda item, guard: {"bytes_rewritten": 5},
        clock=clock,
        sleep=clock.sleep,
        recorder=recorded.append,
        lease_seconds=60,
    )
    report = actor.run(max_actions=1)
    [entry] = recorded
    assert entry["ok"] and entry["bytes_rewritten"] == 5  # the record is never lost
    if outage == 2:  # Redis came back within the lease: acked
        assert (report.done, report.lost, entry["outcome"]) == (1, 0, "done")
        assert q.depth()["inflight"] == 0
    else:  # it did not: the lease will expire and the item's retry finds nothing to do
        assert (report.done, report.lost, entry["outcome"]) == (0, 1, "unacked")
        assert q.depth()["inflight"] == 1


def test_an_actor_waits_out_a_redis_outage_at_dequeue() -> None:
    q = queue_with(1)
    clock = Clock()
    flaky = Flaky(q, "dequeue", 3)
    actor = Actor(flaky, lambda item, guard: {}, clock=clock, sleep=clock.sleep)  # type: ignore[arg-type]
    report = actor.run(max_actions=1)
    assert report.done == 1 and flaky.left == 0


def test_an_item_queued_with_an_older_partition_text_is_acked_unrun(monkeypatch: Any) -> None:
    """``day=1`` (icefloe's key before typed partition keys) may name several partitions
    as one: the runner runs nothing for it and acks it; the decider queues it anew."""
    calls: list[Any] = []
    monkeypatch.setattr(runners, "optimize_table", lambda *a, **k: calls.append(k))
    q = MemoryQueue(max_attempts=3)
    q.enqueue(ActionItem.new("db.t", "p=0", "merge", 1, 100, 1.0, T0), T0)
    q.dispatch("db.t")
    clock = Clock()
    recorded: list[dict[str, Any]] = []
    actor = Actor(
        q,
        spark_runner(cfg=None, spark=object()),
        clock=clock,
        sleep=clock.sleep,
        recorder=recorded.append,
    )
    report = actor.run(max_actions=1)
    assert report.done == 1 and calls == []
    assert q.depth()["pending"] == 0


def test_max_seconds_and_a_stop_request_end_the_loop_between_actions() -> None:
    """#45.3/#45.2: ``--max-seconds`` and SIGTERM (``stop``) are checked before each
    action, never during one: the action under way is run and acked first."""
    clock = Clock()
    ran: list[str] = []

    def slow(item: ActionItem, guard: object = None) -> dict[str, Any]:
        ran.append(item.id)
        clock.sleep(40)  # each action takes 40 s
        return {"partitions": []}

    q = queue_with(5)
    report = Actor(q, slow, clock=clock, sleep=clock.sleep, lease_seconds=600).run(max_seconds=100)
    assert len(ran) == 3 and report.done == 3  # started at 0, 40 and 80 s; none at 120 s
    assert report.stopped == "--max-seconds 100 reached" and not report.idle_exit
    assert q.depth()["ready"] == 2 and q.depth()["inflight"] == 0

    stop_after = [1]  # a SIGTERM arrives while the first action runs
    report = Actor(q, slow, clock=clock, sleep=clock.sleep, lease_seconds=600).run(
        stop=lambda: len(ran) > 3 and bool(stop_after)
    )
    assert report.done == 1 and report.stopped == "SIGTERM"
    assert q.depth() == {"pending": 0, "ready": 1, "inflight": 0, "dead": 0}


def test_sigterm_inside_on_sigterm_asks_to_stop_instead_of_killing() -> None:
    import os
    import signal

    from icefloe.base.signals import on_sigterm

    stop = threading.Event()
    before = signal.getsignal(signal.SIGTERM)
    with on_sigterm(stop.set):
        os.kill(os.getpid(), signal.SIGTERM)
        assert stop.wait(5)  # alive, and told to stop
    assert signal.getsignal(signal.SIGTERM) is before  # the handler is put back
