"""Rolling stats from snapshot deltas vs a full recompute: equal, exactly, after every step.

Real PyIceberg tables (appends, deletes, overwrites, replaces) and a real Redis; no Spark.
"""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.expressions import EqualTo, In
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import DayTransform, IdentityTransform
from pyiceberg.types import DateType, LongType, NestedField, StringType

from icefloe.base.keys import Keys
from icefloe.base.partition_key import PartitionKey, display_key
from icefloe.state.rolling.redis import RollingStats
from icefloe.state.rolling.scan import catch_up, full_stats, snapshot_delta

pytestmark = [pytest.mark.redis, pytest.mark.integration]

TARGET = 4096
SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "region", StringType(), required=False),
    NestedField(3, "day", DateType(), required=False),
    NestedField(4, "payload", StringType(), required=False),
)
SPEC = PartitionSpec(
    PartitionField(2, 1000, IdentityTransform(), "region"),
    PartitionField(3, 1001, DayTransform(), "day_day"),
)
REGIONS = ["eu", "us", "ap"]
DAYS = [dt.date(2026, 11, 1), dt.date(2026, 11, 2)]


def rows(rng: random.Random, n: int, start: int) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(start, start + n), pa.int64()),
            "region": pa.array([rng.choice(REGIONS) for _ in range(n)], pa.string()),
            "day": pa.array([rng.choice(DAYS) for _ in range(n)], pa.date32()),
            "payload": pa.array(["x" * rng.randrange(1, 200) for _ in range(n)], pa.string()),
        }
    )


@pytest.fixture
def table(catalog: Any, namespace: str) -> Any:
    return catalog.create_table(f"{namespace}.events", schema=SCHEMA, partition_spec=SPEC)


def test_partition_keys_match_the_full_scan(table: Any) -> None:
    rng = random.Random(1)
    table.append(rows(rng, 50, 0))
    delta = snapshot_delta(table, table.current_snapshot().snapshot_id)
    assert set(delta) == set(full_stats(table, TARGET))
    shown = [display_key(k) for k in delta]
    assert all(k.startswith("region=") and "day_day=2026-11-0" in k for k in shown), shown


def test_random_history_equals_full_recompute(
    table: Any, redis_client: Any, namespace: str
) -> None:
    rng = random.Random(42)
    store = RollingStats(redis_client, Keys("icefloe-test"))
    name = f"{namespace}.events"
    next_id = 0
    full_scans = 0
    for step in range(14):
        # several commits between two polls, of every kind
        for _ in range(rng.randrange(1, 4)):
            op = rng.random()
            if op < 0.5 or table.current_snapshot() is None:
                n = rng.randrange(5, 40)
                table.append(rows(rng, n, next_id))
                next_id += n
            elif op < 0.7:
                table.delete(In("id", [rng.randrange(next_id) for _ in range(10)]))
            elif op < 0.85:
                region = rng.choice(REGIONS)
                table.overwrite(
                    rows(rng, 10, next_id).filter(
                        pa.compute.equal(pa.compute.field("region"), region)
                    ),
                    overwrite_filter=EqualTo("region", region),
                )
                next_id += 10
            else:  # a "rewrite": replace one partition's content by itself in one commit
                region = rng.choice(REGIONS)
                data = table.scan(row_filter=EqualTo("region", region)).to_arrow()
                if data.num_rows:
                    table.overwrite(data, overwrite_filter=EqualTo("region", region))
        result = catch_up(store, name, table, TARGET, now=float(step))
        full_scans += result.full_scan
        assert store.partitions(name) == full_stats(table, TARGET), f"step {step}"
        assert store.last_applied(name) == table.current_snapshot().snapshot_id
    assert full_scans == 1  # only the very first catch-up (nothing applied yet)
    ops = {s.summary.operation.value for s in table.snapshots() if s.summary}
    assert {"append", "overwrite", "delete"} <= ops, ops


def test_applying_a_snapshot_twice_changes_nothing(
    table: Any, redis_client: Any, namespace: str
) -> None:
    rng = random.Random(3)
    store = RollingStats(redis_client, Keys("icefloe-test"))
    name = f"{namespace}.events"
    table.append(rows(rng, 20, 0))
    catch_up(store, name, table, TARGET)
    parent = table.current_snapshot().snapshot_id
    table.append(rows(rng, 20, 100))
    snap = table.current_snapshot().snapshot_id
    delta = snapshot_delta(table, snap)
    assert store.apply(name, parent, snap, TARGET, delta, 0.0) is not None
    before = store.partitions(name)
    assert store.apply(name, parent, snap, TARGET, delta, 0.0) is None
    assert store.partitions(name) == before == full_stats(table, TARGET)


def test_history_gap_and_target_change_fall_back_to_a_full_scan(
    table: Any, redis_client: Any, namespace: str
) -> None:
    rng = random.Random(5)
    keys = Keys("icefloe-test")
    store = RollingStats(redis_client, keys)
    name = f"{namespace}.events"
    table.append(rows(rng, 20, 0))
    assert catch_up(store, name, table, TARGET).full_scan
    # drifted/corrupted stats and an id that is not an ancestor (e.g. after a rollback)
    redis_client.hset(keys.stats(name), "region=zz/day_day=2026-11-01", "1 2 3 1 0")
    redis_client.hset(keys.table_state(name), "last_snapshot", 12345)
    table.append(rows(rng, 20, 100))
    result = catch_up(store, name, table, TARGET)
    assert result.full_scan and "not an ancestor" in result.reason
    assert store.partitions(name) == full_stats(table, TARGET)
    # a new target makes every SSE stale
    result = catch_up(store, name, table, TARGET * 2)
    assert result.full_scan and store.partitions(name) == full_stats(table, TARGET * 2)
    # a Redis restarted empty: rebuilt from the catalog
    redis_client.flushdb()
    table.append(rows(rng, 5, 200))
    result = catch_up(store, name, table, TARGET)
    assert result.full_scan and store.partitions(name) == full_stats(table, TARGET)
    # a partition the stats do not know loses a file: out of step, full scan
    region_key = next(iter(store.partitions(name)))
    redis_client.hdel(keys.stats(name), region_key)
    region = PartitionKey.decode(region_key).fields[0][2]
    table.delete(EqualTo("region", region))
    result = catch_up(store, name, table, TARGET)
    assert result.full_scan and "out of step" in result.reason
    assert store.partitions(name) == full_stats(table, TARGET)
    # and then rolling again
    table.append(rows(rng, 5, 300))
    result = catch_up(store, name, table, TARGET)
    assert not result.full_scan and result.snapshots_applied == 1
    assert store.partitions(name) == full_stats(table, TARGET)


def test_stats_of_an_older_icefloe_are_rebuilt_without_waiting_for_a_commit(
    table: Any, redis_client: Any, namespace: str
) -> None:
    """An upgraded decider rebuilds the stats an older icefloe kept (format 2: no count of
    the small files) at its first pass, not at the table's next commit: an idle table's
    partitions are otherwise judged on what the old stats lack. Current stats, and a
    table with nothing new, cost no scan."""
    rng = random.Random(6)
    keys = Keys("icefloe-test")
    store = RollingStats(redis_client, keys)
    name = f"{namespace}.events"
    table.append(rows(rng, 20, 0))
    assert catch_up(store, name, table, TARGET).full_scan
    result = catch_up(store, name, table, TARGET)
    assert not result.full_scan and result.snapshots_applied == 0 and not result.touched
    old = {
        k: " ".join(v.decode().split()[:9])
        for k, v in redis_client.hgetall(keys.stats(name)).items()
    }
    redis_client.hset(keys.stats(name), mapping=old)
    redis_client.hset(keys.table_state(name), "stats", 2)
    assert store.stale(name) == "partition stats of format 2, now 3"
    assert any(s.small_files != 0 for s in full_stats(table, TARGET).values())
    result = catch_up(store, name, table, TARGET)  # no new snapshot
    assert result.full_scan and "format 2" in result.reason
    assert store.partitions(name) == full_stats(table, TARGET) == result.touched
    assert store.stale(name) is None
