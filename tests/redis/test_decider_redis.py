"""Decider parts against a real Redis: leader lease, fair dispatch, commit events, status,
metrics. No catalog here (``tests/integration/test_decider.py`` has the end-to-end runs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from service.config import DeciderSettings
from service.decider import Decider, Leader
from service.events import CommitEvents
from service.keys import Keys
from service.queue import ActionItem, RedisQueue
from service.status import gather, record_action
from tests.conftest import TEST_REDIS_URL, make_config

pytestmark = [pytest.mark.redis]

T0 = 1_790_000_000.0
KEYS = Keys("icefloe-test")


def test_only_one_leader_and_handover(redis_client: Any) -> None:
    a = Leader(redis_client, KEYS, ttl_seconds=30, token="a")
    b = Leader(redis_client, KEYS, ttl_seconds=30, token="b")
    assert a.acquire() and not b.acquire()
    assert a.acquire()  # renewal by compare-and-extend
    assert 0 < redis_client.pttl(KEYS.leader) <= 30_000
    b.release()  # not the holder: nothing happens
    assert a.holder() == "a"
    a.release()
    assert b.acquire() and not a.acquire() and b.holder() == "b"
    redis_client.delete(KEYS.leader)  # b's lease lapsed (process paused or dead)
    assert a.acquire() and not b.acquire()


def _decider(redis_client: Any, tmp_path: Path, **settings: Any) -> Decider:
    cfg = make_config(tmp_path, tables={"db.vip": {"priority": 0}, "db.big": {"weight": 3}})
    return Decider(cfg, redis_client, catalog=None, settings=DeciderSettings(**settings),
                   tables=lambda: [], clock=lambda: T0)


def test_a_noisy_table_cannot_starve_the_others(redis_client: Any, tmp_path: Path) -> None:
    d = _decider(redis_client, tmp_path, ready_depth=4, quantum_bytes=1000)
    q = d.queue
    for i in range(40):
        q.enqueue(ActionItem.new("db.noisy", f"p={i}", "merge", 1, 1000, 1.0, T0), T0)
    q.enqueue(ActionItem.new("db.quiet", "p=0", "merge", 1, 1000, 1.0, T0), T0)
    assert d.dispatch(T0) == 4
    tables = []
    while lease := q.dequeue(T0, 60):
        tables.append(lease.item.table)
    assert tables.count("db.quiet") == 1 and tables.count("db.noisy") == 3
    # higher class first: a class-0 item goes before every waiting class-1 one
    q.enqueue(ActionItem.new("db.vip", "p=0", "merge", 0, 1000, 1.0, T0), T0)
    assert d.dispatch(T0) == 4
    first = q.dequeue(T0, 60)
    assert first is not None and first.item.table == "db.vip"
    assert int(redis_client.hget(KEYS.counters, "dispatches")) == 8
    assert redis_client.get(KEYS.scheduler)  # the DWRR state survives the process


def test_a_one_shot_pass_dispatches_the_whole_backlog_in_fair_order(
    redis_client: Any, tmp_path: Path
) -> None:
    """``decide --once`` (the Airflow DAG): no later pass tops the ready set up."""
    d = _decider(redis_client, tmp_path, ready_depth=4, quantum_bytes=1000)
    for i in range(12):
        d.queue.enqueue(ActionItem.new("db.noisy", f"p={i}", "merge", 1, 1000, 1.0, T0), T0)
    d.queue.enqueue(ActionItem.new("db.quiet", "p=0", "merge", 1, 1000, 1.0, T0), T0)
    assert d.dispatch(T0, everything=True) == 13
    order = []
    while lease := d.queue.dequeue(T0, 60):
        order.append(lease.item.table)
    assert len(order) == 13 and "db.quiet" in order[:2]  # fair order kept in the ready FIFO


def test_weights_share_bytes(redis_client: Any, tmp_path: Path) -> None:
    d = _decider(redis_client, tmp_path, ready_depth=40, quantum_bytes=1000)
    for table in ("db.big", "db.small"):
        for i in range(30):
            d.queue.enqueue(ActionItem.new(table, f"p={i}", "merge", 1, 1000, 1.0, T0), T0)
    d.dispatch(T0)
    tables = []
    while lease := d.queue.dequeue(T0, 60):
        tables.append(lease.item.table)
    assert tables.count("db.big") == 3 * tables.count("db.small")


def test_events_are_acked_only_after_processing_and_claimed_from_dead_consumers(
    redis_client: Any,
) -> None:
    dead = CommitEvents(redis_client, KEYS, "dead", claim_idle_ms=0)
    dead.ensure_group()
    dead.publish("db.t", 42)
    dead.publish("db.u")
    got = dead.read()
    assert [(e.table, e.snapshot_id) for e in got] == [("db.t", "42"), ("db.u", "")]
    # "dead" crashes before acking; a new consumer takes its events over
    alive = CommitEvents(redis_client, KEYS, "alive", claim_idle_ms=0)
    again = alive.read()
    assert [e.id for e in again] == [e.id for e in got]
    assert alive.lag() == 2
    alive.ack([e.id for e in again])
    assert alive.lag() == 0 and alive.read(block_ms=None) == []


def test_events_survive_a_redis_restarted_empty(redis_client: Any) -> None:
    ev = CommitEvents(redis_client, KEYS, "c1")
    ev.ensure_group()
    redis_client.flushdb()
    assert ev.read() == []  # the group is re-created, no crash
    ev.publish("db.t", 1)
    assert [e.table for e in ev.read()] == ["db.t"]


def test_decider_rejects_bad_events_and_acks_them(redis_client: Any, tmp_path: Path) -> None:
    d = _decider(redis_client, tmp_path)
    d._tables = lambda: []  # nothing managed: every event is rejected
    d.events.ensure_group()
    for table, snap in [("not an identifier", "1"), ("db.unknown", "2"), ("db.t", "x1")]:
        redis_client.xadd(KEYS.events, {"table": table, "snapshot_id": snap})
    report = d.step()
    assert report.leader and len(report.rejected) == 3
    assert d.events.lag() == 0  # acked: no poison loop


def test_second_decider_stands_by(redis_client: Any, tmp_path: Path) -> None:
    a, b = _decider(redis_client, tmp_path), _decider(redis_client, tmp_path)
    assert a.step().leader and not b.step().leader
    a.leader.release()
    assert b.step().leader


def test_status_shows_leases_dead_letters_and_recent_actions(redis_client: Any,
                                                             tmp_path: Path) -> None:
    url = TEST_REDIS_URL.replace("redis://", "redis://:hunter2@")
    cfg = make_config(tmp_path, redis={"url": url, "key_prefix": "icefloe-test"})
    q = RedisQueue(redis_client, KEYS, max_attempts=1)
    for i, cls in enumerate([0, 1, 1]):
        q.enqueue(ActionItem.new(f"db.t{i}", "p=0", "merge", cls, 10, 1.0, T0), T0)
    q.dispatch("db.t0")
    q.dispatch("db.t1")
    lease = q.dequeue(T0, 60)
    lease2 = q.dequeue(T0 + 1, 60)
    assert lease and lease2
    q.nack(lease2.item.id, lease2.token, "OperationFailed: boom", T0 + 2)
    record_action(redis_client, KEYS, {"id": "x", "ok": True, "mse_before": 9.0,
                                       "mse_after": 1.0, "bytes_rewritten": 123})
    data = gather(cfg, redis_client, q, T0 + 10)
    assert data["queue"]["pending_by_class"] == {"1": 1}
    assert data["inflight"][0]["id"] == lease.item.id and data["inflight"][0]["lease_age_s"] == 10
    assert data["dead"][0]["last_error"] == "OperationFailed: boom"
    assert data["recent"][0]["bytes_rewritten"] == 123
    assert data["counters"]["bytes_rewritten"] == 123
    assert "hunter2" not in repr(data) and ":***@" in data["redis"]


def test_metrics_endpoint_text() -> None:
    from prometheus_client import CollectorRegistry, generate_latest

    from service.metrics import DeciderMetrics

    m = DeciderMetrics()
    registry = CollectorRegistry()
    registry.register(m)
    m.update({"snapshots_applied": 7, "dispatches": 3, "bytes_rewritten": 99},
             {"pending": 4, "ready": 1, "inflight": 2, "dead": 0}, events_lag=5, actors=2,
             leader=True)
    text = generate_latest(registry).decode()
    for line in ("icefloe_snapshots_applied_total 7.0", 'icefloe_queue_depth{state="pending"} 4.0',
                 "icefloe_events_lag 5.0", "icefloe_actors 2.0", "icefloe_dispatches_total 3.0",
                 "icefloe_bytes_rewritten_total 99.0"):
        assert line in text


def test_queue_backlog_for_the_airflow_dag(redis_client: Any, tmp_path: Path) -> None:
    from service.status import queue_backlog

    cfg = make_config(tmp_path)
    q = RedisQueue(redis_client, Keys.for_config(cfg))
    for i in range(3):
        q.enqueue(ActionItem.new("db.t", f"p={i}", "merge", 1, 10, 1.0, T0), T0)
    q.dispatch("db.t")
    assert queue_backlog(cfg) == 3


def test_one_broken_table_does_not_stop_the_pass(redis_client: Any, tmp_path: Path,
                                                 caplog: Any) -> None:
    d = _decider(redis_client, tmp_path)
    d._tables = lambda: ["db.broken"]  # catalog None: loading it raises
    d.queue.enqueue(ActionItem.new("db.ok", "p=0", "merge", 1, 10, 1.0, T0), T0)
    report = d.step()
    assert report.leader and report.dispatched == 1
    assert "skipped db.broken this pass" in caplog.text


def test_unreachable_catalog_backs_off_and_keeps_events(redis_client: Any, tmp_path: Path,
                                                        caplog: Any) -> None:
    d = _decider(redis_client, tmp_path, backoff_initial_seconds=2, backoff_max_seconds=5)
    sleeps: list[float] = []
    d.sleep = sleeps.append

    def down() -> list[str]:
        raise OSError("connection refused by postgresql://icefloe:pw@db/catalog")

    d._tables = down
    d.events.ensure_group()
    d.events.publish("db.t", 1)
    d.run(max_steps=4)
    assert sleeps == [2, 4, 5]
    assert caplog.text.count("catalog unreachable") == 4 and "pw@" not in caplog.text
    assert d.events.lag() == 1  # the event waits for a pass that can handle it
    d._tables = lambda: ["db.t"]  # back, but db.t itself fails to load: still not acked
    d.step()
    assert d.events.lag() == 1


def test_a_stuck_event_never_blocks_new_ones(redis_client: Any) -> None:
    ev = CommitEvents(redis_client, KEYS, "c1", claim_idle_ms=0)
    ev.ensure_group()
    first = ev.publish("db.broken", 1)
    assert [e.id for e in ev.read()] == [first]  # not acked: its table failed
    second = ev.publish("db.t", 2)
    assert [e.id for e in ev.read()] == [first, second]
