"""The decider on its default (Redis) adapters, status and metrics against a real Redis.

The decider's behaviour is tested on the in-memory adapters
(``tests/unit/service/decider/test_loop.py``); each Redis adapter is proven equal to its
in-memory twin by the contract suites (``test_queue_redis``, ``test_rolling_redis``,
``test_events_redis``, ``test_leader_redis``). Here: the wiring, and what only Redis
shows, on a single Redis and on a Redis Cluster. No catalog here
(``tests/integration/test_decider.py`` has the end-to-end runs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from icefloe.base.config import DeciderSettings
from icefloe.base.errors import ServiceUnavailable
from icefloe.base.keys import Keys, shard_of
from icefloe.service.decider.loop import Decider
from icefloe.service.decider.wiring import open_decider
from icefloe.service.observe.status import gather
from icefloe.state.ledger.redis import RedisLedger
from icefloe.state.queue import ActionItem
from icefloe.state.queue.redis import RedisQueue
from tests.support.config import make_config, redis_url

pytestmark = [pytest.mark.redis]
TOPOLOGIES = ("single", "cluster")  # each test on both (tests/redis/conftest.py)

T0 = 1_790_000_000.0
KEYS = Keys("icefloe-test")


def _decider(redis_client: Any, tmp_path: Path, batch: int = 1, **settings: Any) -> Decider:
    """``batch``: every table's ``batch_max_items`` (1: one item per dispatch)."""
    cfg = make_config(
        tmp_path,
        defaults={"batch_max_items": batch},
        tables={"db.vip": {"priority": 0}, "db.big": {"weight": 3}},
    )
    return open_decider(
        cfg,
        None,
        redis_client,
        settings=DeciderSettings(**settings),
        tables=lambda: [],
        clock=lambda: T0,
    )


def test_a_noisy_table_cannot_starve_the_others(redis_client: Any, tmp_path: Path) -> None:
    d = _decider(redis_client, tmp_path, ready_depth=4, quantum_bytes=1000)
    q = d.queue
    for i in range(40):
        q.enqueue(ActionItem.new("db.noisy", f"p={i}", "merge", 1, 1000, 1.0, T0), T0)
    q.enqueue(ActionItem.new("db.quiet", "p=0", "merge", 1, 1000, 1.0, T0), T0)
    assert d.duties.dispatch(T0) == 4
    tables = []
    while lease := q.dequeue(T0, 60):
        tables.append(lease.item.table)
    assert tables.count("db.quiet") == 1 and tables.count("db.noisy") == 3
    # higher class first: a class-0 item goes before every waiting class-1 one
    q.enqueue(ActionItem.new("db.vip", "p=0", "merge", 0, 1000, 1.0, T0), T0)
    assert d.duties.dispatch(T0) == 4
    first = q.dequeue(T0, 60)
    assert first is not None and first.item.table == "db.vip"
    assert int(redis_client.hget(KEYS.counters, "dispatches")) == 8
    assert redis_client.get(KEYS.scheduler)  # the DWRR state survives the process


def test_a_batch_is_dispatched_whole_and_leased_whole(redis_client: Any, tmp_path: Path) -> None:
    """Batches of 16: the quiet table's item first (its head costs less), then the noisy
    table's batch next to each other in the ready set, leased by one ``dequeue_batch``."""
    from icefloe.state.queue import budget_of

    d = _decider(redis_client, tmp_path, batch=16, ready_depth=4, quantum_bytes=1000)
    q = d.queue
    for i in range(40):
        q.enqueue(ActionItem.new("db.noisy", f"p={i:02d}", "merge", 1, 1000, 1.0, T0), T0)
    q.enqueue(ActionItem.new("db.quiet", "p=0", "merge", 1, 1000, 1.0, T0), T0)
    assert d.duties.dispatch(T0) == 17
    budget = budget_of(d.cfg)
    assert [x.item.table for x in q.dequeue_batch(T0, 60, budget)] == ["db.quiet"]
    batch = q.dequeue_batch(T0, 60, budget)
    assert len(batch) == 16 and {x.item.table for x in batch} == {"db.noisy"}
    assert q.depth() == {"pending": 24, "ready": 0, "inflight": 17, "dead": 0}


def test_second_decider_stands_by(redis_client: Any, tmp_path: Path) -> None:
    a, b = _decider(redis_client, tmp_path), _decider(redis_client, tmp_path)
    assert a.step().leader and not b.step().leader
    a.leader.release()
    assert b.step().leader


def test_status_shows_leases_dead_letters_and_recent_actions(
    redis_client: Any, tmp_path: Path
) -> None:
    url = redis_url().replace("redis://", "redis://:hunter2@")
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
    ledger = RedisLedger(redis_client, KEYS)
    ledger.record_action(
        {"id": "x", "ok": True, "mse_before": 9.0, "mse_after": 1.0, "bytes_rewritten": 123},
    )
    batch = {"items": 12, "partitions_rewritten": 12, "commits": 1, "seconds_per_partition": 0.5}
    ledger.record_action(
        {"id": "y", "ok": True, "seconds": 6.25, "snapshot_ids": [5], "batch": batch}
        | {"partitions_rewritten": 12, "bytes_rewritten": 1},
    )
    data = gather(cfg, redis_client, q, T0 + 10)
    assert data["queue"]["pending_by_class"] == {"1": 1}
    assert data["inflight"][0]["id"] == lease.item.id and data["inflight"][0]["lease_age_s"] == 10
    assert data["dead"][0]["last_error"] == "OperationFailed: boom"
    assert data["recent"][1]["bytes_rewritten"] == 123
    assert data["recent"][0]["batch"] == batch
    assert data["counters"]["bytes_rewritten"] == 124
    assert data["counters"]["batches"] == 1 and data["counters"]["batch_items"] == 12
    assert data["counters"]["commits"] == 1 and data["counters"]["partitions_rewritten"] == 12
    assert data["counters"]["action_ms"] == 6250
    assert "hunter2" not in repr(data) and ":***@" in data["redis"]


def test_metrics_endpoint_text() -> None:
    from prometheus_client import CollectorRegistry, generate_latest

    from icefloe.optimizer.maintenance_rules import MetadataHealth
    from icefloe.service.observe.metrics import DeciderMetrics

    m = DeciderMetrics()
    registry = CollectorRegistry()
    registry.register(m)
    m.update(
        {"snapshots_applied": 7, "dispatches": 3, "bytes_rewritten": 99, "action_ms": 2500}
        | {"batches": 2, "commits": 3, "partitions_rewritten": 30},
        {"pending": 4, "ready": 1, "inflight": 2, "dead": 0},
        events_lag=5,
        actors=2,
        leader=True,
        shards=6,
    )
    health = MetadataHealth.of(1, [100, 200, 8 << 20], 8 << 20, [1_000_000, 2_000_000], 4096, 1)
    m.update_tables({"db.t": health}, now=3_000)
    text = generate_latest(registry).decode()
    for line in (
        "icefloe_shards 6.0",
        'icefloe_table_manifests{table="db.t"} 3.0',
        'icefloe_table_small_manifests{table="db.t"} 2.0',
        'icefloe_table_snapshots{table="db.t"} 2.0',
        'icefloe_table_oldest_snapshot_age_seconds{table="db.t"} 2000.0',
        'icefloe_table_metadata_bytes{table="db.t"} 4096.0',
        "icefloe_snapshots_applied_total 7.0",
        'icefloe_queue_depth{state="pending"} 4.0',
        "icefloe_events_lag 5.0",
        "icefloe_actors 2.0",
        "icefloe_dispatches_total 3.0",
        "icefloe_bytes_rewritten_total 99.0",
        "icefloe_action_seconds_total 2.5",
        "icefloe_batches_total 2.0",
        "icefloe_commits_total 3.0",
        "icefloe_partitions_rewritten_total 30.0",
    ):
        assert line in text


def test_queue_backlog_for_the_airflow_dag(
    redis_client: Any, redis_section: dict[str, Any], tmp_path: Path
) -> None:
    from icefloe.service.observe.status import queue_backlog

    cfg = make_config(tmp_path, redis=redis_section)  # connects by itself
    q = RedisQueue(redis_client, Keys.for_config(cfg))
    for i in range(3):
        q.enqueue(ActionItem.new("db.t", f"p={i}", "merge", 1, 10, 1.0, T0), T0)
    q.dispatch("db.t")
    assert queue_backlog(cfg) == 3


def test_unreachable_catalog_backs_off_and_keeps_events(
    redis_client: Any, tmp_path: Path, caplog: Any
) -> None:
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


def test_bad_events_written_by_hand_are_rejected_and_acked(
    redis_client: Any, tmp_path: Path
) -> None:
    d = _decider(redis_client, tmp_path)
    d.events.ensure_group()
    for table, snap in [("not an identifier", "1"), ("db.unknown", "2"), ("db.t", "x1")]:
        stream = KEYS.events(shard_of(table, d.shards.count))  # where a writer would put it
        redis_client.xadd(stream, {"table": table, "snapshot_id": snap})
    report = d.step()
    assert report.leader and len(report.rejected) == 3
    assert d.events.lag() == 0  # acked: no poison loop


def test_every_adapter_turns_a_down_redis_into_service_unavailable(tmp_path: Path) -> None:
    import redis

    from icefloe.state.events.redis import RedisEvents
    from icefloe.state.leader.redis import RedisLeader
    from icefloe.state.rolling.redis import RollingStats

    down = redis.Redis.from_url("redis://:s3cret@127.0.0.1:1/0", socket_connect_timeout=0.2)
    calls = [
        lambda: RedisQueue(down, KEYS).enqueue(
            ActionItem.new("db.t", None, "merge", 1, 1, 1.0, T0), T0
        ),
        lambda: RedisQueue(down, KEYS).depth(),
        lambda: RollingStats(down, KEYS).last_applied("db.t"),
        lambda: RedisLedger(down, KEYS).count({"x": 1}),
        lambda: RedisEvents(down, KEYS, "c").read(),
        lambda: RedisEvents(down, KEYS, "c").lag(),
        lambda: RedisLeader(down, KEYS, 30).acquire(),
    ]
    for call in calls:
        with pytest.raises(ServiceUnavailable, match="redis unreachable during") as info:
            call()
        assert "s3cret" not in str(info.value)


def test_status_uses_the_tables_own_target_like_the_decider(
    redis_client: Any, tmp_path: Path
) -> None:
    """A table whose ``write.target-file-size-bytes`` is 1 MiB under a 128 MiB default: the
    decider judged it against a third of 1 MiB, and so must status."""
    from icefloe.optimizer import stats_from_sizes
    from icefloe.state.rolling.redis import RollingStats

    cfg = make_config(tmp_path, defaults={"target_file_size_bytes": 128 << 20})
    store = RollingStats(redis_client, KEYS)
    store.replace("db.t", 1, 1 << 20, {"day=1": stats_from_sizes([10_000] * 10, 1 << 20)}, T0)
    q = RedisQueue(redis_client, KEYS)
    table = gather(cfg, redis_client, q, T0, detail=True)["tables"]["db.t"]
    assert table["tolerance_bytes"] == (1 << 20) // 3
    assert [p["partition"] for p in table["over_tolerance"]] == ["day=1"]


def test_decide_once_releases_the_leader_lease(
    redis_client: Any, redis_section: dict[str, Any], tmp_path: Path
) -> None:
    """A second ``decide --once`` right after the first leads too: the first let go."""
    import json

    import yaml
    from click.testing import CliRunner

    from icefloe.app.cli import cli
    from tests.support.config import config_raw

    conf = tmp_path / "icefloe.yaml"
    conf.write_text(yaml.safe_dump(config_raw(tmp_path, redis=redis_section)))
    for _ in range(2):
        result = CliRunner().invoke(cli, ["--config", str(conf), "decide", "--once", "--json"])
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["leader"] is True
    assert redis_client.get(KEYS.leader) is None
