"""Redis killed at each step of an actor's action: the dequeue, a lease renewal while the
action runs, right before the ack (after the commit) and right after it.

The actor is the production one (``icefloe.service.actor.loop.run_actor``: its Redis client, queue,
recorder and heartbeat, the real Spark runner on the session's SparkSession); only the
queue object it opens is wrapped, so the server dies at the chosen call. Expected: a
renewal that fails is logged in one line and the next one succeeds; a dequeue waits the
outage out (one log line) and then takes the item; an ack is retried through an outage
while the lease would hold, and after a longer one the actor gives up on it (one log line,
no exception) and the item comes back through its lease, its retry finding the work done.
In every case the table holds each row exactly once, one ``replace`` was committed, no
file is left unreferenced, and the queue ends empty with nothing dead-lettered.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

import icefloe.service.actor.loop as actor_module
from icefloe.service.actor.loop import run_actor
from icefloe.service.actor.runners import spark_runner
from icefloe.service.decider.loop import Decider
from icefloe.service.decider.wiring import open_decider
from icefloe.state.queue.redis import RedisQueue
from tests.faults.checks import operations
from tests.faults.harness import DAYS, kill_around, make_table, restart_later
from tests.support.config import part

pytestmark = [pytest.mark.faults, pytest.mark.redis, pytest.mark.spark, pytest.mark.integration]


@dataclass
class Queued:
    """A one-partition table of four small files, its contents, and its merge action
    dispatched by a healthy pass of ``decider`` (reuse it: a second decider would stand by
    while this one holds the lease)."""

    name: str
    before: Any
    client: Any
    decider: Decider


def queued(env: Any, ledger: Any) -> Queued:
    name = f"{env.namespace}.events"
    table = make_table(env.catalog, name, days=DAYS[:1], files_per_day=4)
    before = ledger.contents(table)
    client = env.client()
    decider = open_decider(env.cfg, env.catalog, client)
    report = decider.step(dispatch_all=True)
    assert report.enqueued == 1 and report.dispatched == 1
    return Queued(name, before, client, decider)


def arm_first_queue(monkeypatch: Any, arm: Callable[[RedisQueue], None]) -> None:
    """The first queue ``run_actor`` opens gets ``arm``-ed (its methods wrapped)."""
    real = actor_module.open_state
    opened: list[Any] = []

    def open_state(cfg: Any, client: Any) -> Any:
        state = real(cfg, client)
        if not opened:
            arm(state.queue)
        opened.append(state)
        return state

    monkeypatch.setattr(actor_module, "open_state", open_state)


def recent(client: Any, env: Any) -> list[dict[str, Any]]:
    return [json.loads(r) for r in client.lrange(env.keys.recent, 0, -1)]


def assert_done_once(env: Any, ledger: Any, name: str, before: Any, client: Any) -> None:
    table = env.catalog.load_table(name)
    assert operations(table).count("replace") == 1, operations(table)  # one rewrite
    ledger.assert_intact(table, before)
    depth = RedisQueue(client, env.keys).depth()
    assert depth == {"pending": 0, "ready": 0, "inflight": 0, "dead": 0}, depth


def on_renewer() -> bool:
    return threading.current_thread().name.startswith("renew-")


def test_a_lease_renewal_during_an_outage_is_retried(
    fault_env: Any, ledger: Any, spark: Any, monkeypatch: Any, caplog: Any
) -> None:
    env = fault_env.with_decider(lease_seconds=3)  # renewed every second
    q = queued(env, ledger)
    name, before, client = q.name, q.before, q.client
    renewed_after_outage = threading.Event()

    def arm(queue: RedisQueue) -> None:
        kills = kill_around(
            queue,
            "renew",
            env.server,
            "before",
            restart_after=True,  # the outage spans that one renewal
            on_kill=ledger.fault,
            only_if=on_renewer,
        )
        wrapped = queue.renew

        def renew(*args: Any, **kwargs: Any) -> bool:
            ok = bool(wrapped(*args, **kwargs))
            if ok and kills and on_renewer():
                renewed_after_outage.set()
            return ok

        queue.renew = renew  # type: ignore[method-assign]

    arm_first_queue(monkeypatch, arm)
    real_runner = spark_runner(env.cfg, spark)

    def runner(item: Any, *guard: Any) -> dict[str, Any]:
        # the rewrite starts once the lease has lived through the outage: the runner's own
        # Redis calls (the write guard) never fall into the short window
        assert renewed_after_outage.wait(30), "no lease renewal succeeded after the outage"
        return real_runner(item, *guard)

    report = run_actor(env.cfg, max_actions=1, idle_exit=0, spark=spark, runner=runner)

    assert (report.done, report.failed, report.lost) == (1, 0, 0), report
    failed = [r.getMessage() for r in caplog.records if "renewal" in r.getMessage()]
    assert len(failed) == 1 and "unreachable" in failed[0], failed
    (entry,) = recent(client, env)
    assert entry["ok"] and entry["renewals"] >= 1 and entry["files_rewritten"] == 4, entry
    assert_done_once(env, ledger, name, before, client)


def test_a_short_outage_at_the_ack_is_waited_out(
    fault_env: Any, ledger: Any, spark: Any, monkeypatch: Any, caplog: Any
) -> None:
    env = fault_env.with_decider(lease_seconds=8)  # the ack is retried for up to 8 s
    q = queued(env, ledger)
    name, before, client = q.name, q.before, q.client
    restarts: list[threading.Thread] = []

    def arm(queue: RedisQueue) -> None:
        kill_around(
            queue,
            "ack",
            env.server,
            "before",
            on_kill=lambda label: (
                ledger.fault(label),
                restarts.append(restart_later(env.server, 1.0)),
            ),
        )

    arm_first_queue(monkeypatch, arm)
    report = run_actor(env.cfg, max_actions=1, idle_exit=0, spark=spark)
    for thread in restarts:
        thread.join(timeout=30)

    assert restarts and (report.done, report.failed, report.lost) == (1, 0, 0), report
    waits = [r.getMessage() for r in caplog.records if "could not ack" in r.getMessage()]
    assert waits and all("retrying in" in w for w in waits), waits
    (entry,) = recent(client, env)
    assert entry["ok"] and entry["outcome"] == "done" and entry["files_rewritten"] == 4, entry
    assert_done_once(env, ledger, name, before, client)


def test_an_outage_longer_than_the_lease_at_the_ack(
    fault_env: Any, ledger: Any, spark: Any, monkeypatch: Any, caplog: Any
) -> None:
    env = fault_env.with_decider(lease_seconds=2)
    q = queued(env, ledger)
    name, before, client = q.name, q.before, q.client
    arm_first_queue(
        monkeypatch,
        lambda q: kill_around(q, "ack", env.server, "before", on_kill=ledger.fault),
    )
    # committed, then Redis stays away for longer than the lease: the actor gives up
    # on the ack (no exception, no traceback) and the item comes back after its lease
    first = run_actor(env.cfg, max_actions=1, idle_exit=0, spark=spark)
    assert (first.done, first.failed, first.lost) == (0, 0, 1), first
    assert any("the item returns after its lease" in r.getMessage() for r in caplog.records)
    table = env.catalog.load_table(name)
    assert operations(table).count("replace") == 1  # committed, not acked

    env.server.restart()
    (held,) = RedisQueue(client, env.keys).inflight()
    time.sleep(max(0.0, held.deadline - time.time()) + 0.2)  # the lease runs out
    report = q.decider.step(dispatch_all=True)
    assert report.reaped == 1 and report.dispatched == 1, report
    retry = run_actor(env.cfg, max_actions=1, idle_exit=0, spark=spark)
    assert (retry.done, retry.failed, retry.lost) == (1, 0, 0), retry
    entry = recent(client, env)[0]  # the retry found the partition already merged
    assert entry["ok"] and entry["attempt"] == 2 and entry["files_rewritten"] == 0, entry
    assert_done_once(env, ledger, name, before, client)


def test_redis_dies_right_after_the_ack(
    fault_env: Any, ledger: Any, spark: Any, monkeypatch: Any, caplog: Any
) -> None:
    env = fault_env
    q = queued(env, ledger)
    name, before, client = q.name, q.before, q.client
    arm_first_queue(
        monkeypatch,
        lambda q: kill_around(q, "ack", env.server, "after", on_kill=ledger.fault),
    )
    # the action is done and acked: only bookkeeping fails, and never stops the actor
    report = run_actor(env.cfg, max_actions=1, idle_exit=0, spark=spark)
    assert (report.done, report.failed, report.lost) == (1, 0, 0), report
    assert any("could not record the action" in r.getMessage() for r in caplog.records)
    env.server.restart()
    assert_done_once(env, ledger, name, before, client)  # the ack was persisted


def test_an_outage_at_the_dequeue_is_waited_out(
    fault_env: Any, ledger: Any, monkeypatch: Any, caplog: Any
) -> None:
    env = fault_env
    q = queued(env, ledger)
    name, before, client = q.name, q.before, q.client
    restarts: list[threading.Thread] = []
    arm_first_queue(
        monkeypatch,
        lambda q: kill_around(
            q,
            "dequeue",
            env.server,
            "before",
            on_kill=lambda label: (
                ledger.fault(label),
                restarts.append(restart_later(env.server, 1.0)),
            ),
        ),
    )
    ran: list[str] = []

    def runner(item: Any, *guard: Any) -> dict[str, Any]:
        ran.append(item.id)
        return {}

    report = run_actor(env.cfg, max_actions=1, idle_exit=30, runner=runner)
    for thread in restarts:
        thread.join(timeout=30)
    assert restarts and (report.done, report.failed, report.idle_exit) == (1, 0, False), report
    messages = [r.getMessage() for r in caplog.records]
    assert sum("queue unreachable" in m for m in messages) == 1, messages  # logged once
    assert any("queue reachable again" in m for m in messages), messages
    assert ran == [f"merge:{name}:{part(day=DAYS[0])}"]  # taken once, after the outage
    queue = RedisQueue(client, env.keys)
    assert queue.depth() == {"pending": 0, "ready": 0, "inflight": 0, "dead": 0}
    ledger.assert_intact(env.catalog.load_table(name), before)
