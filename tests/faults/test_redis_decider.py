"""Redis killed at each step of the decider's pass — leader acquire, commit events read
and ack, the stats apply, the (pipelined) enqueue, marking the snapshot decided, the reap and the
dispatch — right before or right after the call, then restarted by the loop's back-off.

The decider runs in-process on the production wiring (``Decider`` on a client from
``icefloe.base.redis_client.connect``, the Redis adapters, the session catalog). Expected: the
failing pass ends in :class:`ServiceUnavailable`, which the loop logs in one line (no
traceback, no password) and backs off from; after the restart the stats equal a full scan
of the table (no snapshot applied twice or lost), every partition that needs work is one
queue item, delivered to an actor exactly once, and every commit event is acked.
"""

from __future__ import annotations

from typing import Any

import pytest

from icefloe.service.actor.loop import Actor
from icefloe.service.decider.wiring import open_decider
from icefloe.state.events.redis import RedisEvents
from icefloe.state.queue.redis import RedisQueue
from icefloe.state.rolling.scan import full_stats
from tests.faults.checks import queue_places
from tests.faults.harness import DAYS, append_rows, kill_around, make_table
from tests.support.config import part

pytestmark = [pytest.mark.faults, pytest.mark.redis]

TARGET = 1 << 20

# (adapter attribute of the decider, method, when the server dies)
STEPS = [
    ("leader", "acquire", "before"),
    ("events", "read", "before"),
    ("stats", "apply", "before"),
    ("stats", "apply", "after"),
    ("queue", "enqueue_many", "before"),
    ("queue", "enqueue_many", "after"),
    ("stats", "mark_decided", "before"),
    ("events", "ack", "before"),
    ("queue", "reap", "before"),
    ("queue", "dispatch_many", "before"),
    ("queue", "dispatch_many", "after"),
]


@pytest.mark.parametrize(("adapter", "method", "when"), STEPS, ids=[":".join(s) for s in STEPS])
def test_decider_survives_redis_killed_at_each_step(
    fault_env: Any, ledger: Any, caplog: Any, adapter: str, method: str, when: str
) -> None:
    env = fault_env
    name = f"{env.namespace}.events"
    table = make_table(env.catalog, name, days=DAYS[:2], files_per_day=2)
    client = env.client()
    sleeps: list[float] = []

    def backoff(seconds: float) -> None:  # the loop's sleep: the outage ends meanwhile
        sleeps.append(seconds)
        env.server.ensure_up()

    decider = open_decider(env.cfg, env.catalog, client, sleep=backoff)
    first = decider.step(block_ms=None)  # healthy pass: full scan, two actions
    assert first.leader and first.enqueued == 2

    # two more commits (a new day among them) and a commit event, then the fault
    for i in range(2):
        append_rows(table, DAYS[1:], start=10_000 + i * 100, rows_per_day=30)
    table = env.catalog.load_table(name)
    before = ledger.contents(table)
    RedisEvents(client, env.keys, "writer").publish(name, table.current_snapshot().snapshot_id)
    kills = kill_around(getattr(decider, adapter), method, env.server, when, on_kill=ledger.fault)
    decider.run(max_steps=4)

    assert kills, f"{adapter}.{method} was never called"
    assert sleeps and sleeps[0] == env.cfg.decider.backoff_initial_seconds, sleeps
    retries = [r for r in caplog.records if "retrying in" in r.getMessage()]
    assert len(retries) == 1, [r.getMessage() for r in retries]
    assert "unreachable" in retries[0].getMessage()

    # the stats: exactly a full scan's, each incremental snapshot applied once
    assert decider.stats.partitions(name) == full_stats(table, TARGET)
    current = table.current_snapshot().snapshot_id
    assert decider.stats.last_applied(name) == current == decider.stats.decided(name)
    counters = decider.ledger.counters()
    assert counters.get("snapshots_applied") == 2 and counters.get("full_scans") == 1, counters

    # the queue: one item per partition needing work, each in exactly one place
    expected = {f"merge:{name}:{part(day=d)}" for d in DAYS}
    places = queue_places(client, env.keys)
    assert set(places) == expected, places
    assert all(p == ["ready"] for p in places.values()), places
    assert decider.events.lag() == 0  # the commit event was acked after the restart

    # delivered exactly once: an actor (a recording runner, no Spark) drains the queue
    ran: list[str] = []
    actor = Actor(
        RedisQueue(client, env.keys),
        lambda item, *guard: ran.append(item.id) or {},
        lease_seconds=30,
        poll_seconds=0.05,
    )
    assert actor.run(idle_exit=0).done == len(expected)
    assert sorted(ran) == sorted(expected)
    assert queue_places(client, env.keys) == {}
    ledger.assert_intact(table, before)
