"""Decider + actor end to end: PyIceberg commits → rolling stats → queue → the real Spark
actor (``icefloe.jobs.data.optimize``) → the decider sees the rewrite and the partition is
healthy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType

from icefloe.base.config import DeciderSettings
from icefloe.service.actor.loop import run_actor
from icefloe.service.decider.wiring import open_decider
from icefloe.service.observe.status import gather
from icefloe.state.rolling.scan import full_stats
from tests.support.config import make_config, part

pytestmark = [pytest.mark.spark, pytest.mark.redis, pytest.mark.integration]

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "region", StringType(), required=False),
)
SPEC = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "region"))
TARGET = 1 << 20
EU = part(region="eu")


@pytest.mark.parametrize("min_input_files", [2, 5])
def test_actor_fixes_what_the_decider_found(
    spark: Any,
    lake_home: Path,
    catalog: Any,
    namespace: str,
    redis_client: Any,
    min_input_files: int,
) -> None:
    """Four small files: merged at once with ``min_input_files`` 2; with 5, once the
    partition has waited ``max_wait_hours`` (the actor then merges the four)."""
    policy = {"target_file_size_bytes": TARGET, "tolerance_bytes": 1000, "max_wait_hours": 1}
    cfg = make_config(
        lake_home,
        history={"table": f"{namespace}.action_history"},  # not the run's shared one
        managed={"namespaces": [namespace]},
        defaults={**policy, "min_input_files": min_input_files},
    )
    name = f"{namespace}.events"
    table = catalog.create_table(name, schema=SCHEMA, partition_spec=SPEC)
    for i in range(4):
        table.append(
            pa.table(
                {
                    "id": pa.array(range(i * 50, i * 50 + 50), pa.int64()),
                    "region": pa.array(["eu"] * 50, pa.string()),
                }
            )
        )
    rows_before = table.scan().to_arrow().num_rows
    clock = [1_790_000_000.0]
    decider = open_decider(
        cfg, catalog, redis_client, settings=DeciderSettings(), clock=lambda: clock[0]
    )
    report = decider.step(block_ms=None)
    if min_input_files > 4:
        assert report.enqueued == 0  # the partition waits for a fifth small file ...
        clock[0] += 3600  # ... for an hour
        report = decider.step(block_ms=None)
    assert report.enqueued == 1 and report.dispatched == 1
    assert full_stats(table, TARGET)[EU].n == 4

    done = run_actor(cfg, max_actions=1, idle_exit=0, spark=spark)
    assert done.done == 1 and done.failed == 0

    table = catalog.load_table(name)
    assert table.scan().to_arrow().num_rows == rows_before  # no row lost or duplicated
    report = decider.step(block_ms=None)
    (applied,) = [a for a in report.applied if a.table == name]  # the history table too
    assert not applied.full_scan and applied.snapshots_applied >= 1
    after = decider.stats.partitions(name)
    assert after == full_stats(table, TARGET) and after[EU].n == 1
    assert report.enqueued == 0  # one file: nothing left to do
    data = gather(cfg, redis_client, decider.queue, 0.0)
    recent = data["recent"][0]
    assert recent["ok"] and recent["bytes_rewritten"] > 0 and recent["mse_before"] > 0
    assert data["queue"]["depth"] == {"pending": 0, "ready": 0, "inflight": 0, "dead": 0}


def test_the_decider_schedules_manifest_rewrites_and_the_actor_runs_them(
    spark: Any, lake_home: Path, catalog: Any, namespace: str, redis_client: Any
) -> None:
    name = f"{namespace}.stream"
    cfg = make_config(
        lake_home,
        history={"table": f"{namespace}.action_history"},  # not the run's shared one
        managed={"namespaces": [namespace]},
        defaults={"target_file_size_bytes": TARGET, "tolerance_bytes": 0, "min_input_files": 2},
        tables={name: {"actions": ["rewrite_manifests"], "maintenance": {"min_manifests": 6}}},
    )
    table = catalog.create_table(name, schema=SCHEMA, partition_spec=SPEC)

    def commit(i: int) -> None:
        ids = pa.array([i], pa.int64())
        table.append(pa.table({"id": ids, "region": pa.array(["eu"], pa.string())}))

    for i in range(5):
        commit(i)
    decider = open_decider(cfg, catalog, redis_client, settings=DeciderSettings())
    report = decider.step(block_ms=None)
    assert report.enqueued == 0  # five small manifests: not yet worth a rewrite
    assert decider.health.load(name)["manifests"] == 5  # type: ignore[index]
    commit(5)
    report = decider.step(block_ms=None)
    assert report.enqueued == 1 and report.dispatched == 1  # merges are not enabled here

    done = run_actor(cfg, max_actions=1, idle_exit=0, spark=spark)
    assert done.done == 1 and done.failed == 0
    table = catalog.load_table(name)
    assert len(table.current_snapshot().manifests(table.io)) == 1
    assert table.scan().to_arrow().num_rows == 6
    recent = gather(cfg, redis_client, decider.queue, 0.0)["recent"][0]
    assert recent["action"] == "rewrite_manifests" and recent["partition"] is None
    assert recent["ok"] is True
    assert recent["verified"] == {"manifest_rewrites_checked": 1, "referenced_files_present": True}
    decider.step(block_ms=None)  # the decider sees one manifest now: nothing due
    assert decider.health.load(name)["manifests"] == 1  # type: ignore[index]
    assert decider.queue.depth()["pending"] == 0


def test_the_decider_compacts_deletes_past_the_ratio(
    spark: Any, lake_home: Path, catalog: Any, namespace: str, redis_client: Any
) -> None:
    name = f"{namespace}.mor"
    fq = f"lake.`{namespace}`.`mor`"
    cfg = make_config(
        lake_home,
        history={"table": f"{namespace}.action_history"},  # not the run's shared one
        managed={"namespaces": [namespace]},
        defaults={"target_file_size_bytes": TARGET, "tolerance_bytes": TARGET},  # no merges
        tables={
            name: {"actions": ["merge", "compact_deletes"], "maintenance": {"delete_ratio": 0.2}}
        },
    )
    spark.sql(
        f"CREATE TABLE {fq} (id BIGINT, region STRING) USING iceberg PARTITIONED BY (region) "
        "TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read')"
    )
    spark.sql(f"INSERT INTO {fq} SELECT id, IF(id % 2 = 0, 'eu', 'us') FROM range(100)")
    decider = open_decider(cfg, catalog, redis_client, settings=DeciderSettings())
    assert decider.step(block_ms=None).enqueued == 0
    spark.sql(f"DELETE FROM {fq} WHERE region = 'eu' AND id < 10")  # 5 of 50 rows: 10%
    assert decider.step(block_ms=None).enqueued == 0
    spark.sql(f"DELETE FROM {fq} WHERE region = 'eu' AND id >= 10 AND id < 30")  # 15 of 50 now
    report = decider.step(block_ms=None)
    stats = decider.stats.partitions(name)
    eu = stats[EU]
    # Iceberg's file-scoped position deletes: the second DELETE rewrote the first's file
    assert eu.data_rows == 50 and eu.deleted_rows == 15 and eu.delete_files == 1
    assert stats == full_stats(catalog.load_table(name), TARGET)  # rows and deletes too
    assert report.enqueued == 1  # region=eu only: us has no deletes
    health = decider.healths[name]  # the table's totals, from the snapshot summary
    assert (health.data_rows, health.delete_files, health.deleted_rows) == (100, 1, 15)
    rows = sorted(r.id for r in spark.table(fq).collect())

    done = run_actor(cfg, max_actions=1, idle_exit=0, spark=spark)
    assert done.done == 1 and done.failed == 0
    recent = gather(cfg, redis_client, decider.queue, 0.0)["recent"][0]
    assert recent["action"] == "compact_deletes" and recent["id"] == f"merge:{name}:{EU}"
    assert sorted(r.id for r in spark.table(fq).collect()) == rows  # every row kept once
    table = catalog.load_table(name)
    files = table.inspect.files().to_pylist()
    assert not [f for f in files if f["content"] != 0]  # no delete file left
    decider.step(block_ms=None)
    eu = decider.stats.partitions(name)[EU]
    assert (eu.delete_files, eu.deleted_rows, eu.data_rows) == (0, 0, 35)
    health = decider.healths[name]
    assert (health.data_rows, health.delete_files, health.deleted_rows) == (85, 0, 0)


def test_one_actor_takes_a_wide_table_as_one_batch_and_commits_once(
    spark: Any, lake_home: Path, catalog: Any, namespace: str, redis_client: Any
) -> None:
    """Twelve partitions of three small files: the decider dispatches them as one batch, one
    actor run plans them together and commits one ``replace`` snapshot (then rewrites the
    manifests it left, in the same lease: the table turns off the merge of small manifests
    in the commit itself); every item acked once, every row kept."""
    name = f"{namespace}.wide"
    regions = [f"r{i:02d}" for i in range(12)]
    cfg = make_config(
        lake_home,
        history={"table": f"{namespace}.action_history"},  # not the run's shared one
        managed={"namespaces": [namespace]},
        defaults={"target_file_size_bytes": TARGET, "tolerance_bytes": 1000, "min_input_files": 2},
        tables={
            name: {"actions": ["merge", "rewrite_manifests"], "maintenance": {"min_manifests": 4}}
        },
    )
    table = catalog.create_table(
        name,
        schema=SCHEMA,
        partition_spec=SPEC,
        properties={"commit.manifest-merge.enabled": "false"},
    )
    for i in range(3):
        ids = pa.array(range(i * 120, i * 120 + 120), pa.int64())
        table.append(pa.table({"id": ids, "region": pa.array(regions * 10, pa.string())}))
    before = catalog.load_table(name)
    rows = sorted(before.scan().to_arrow().column("id").to_pylist())
    snapshots = len(before.metadata.snapshots)
    decider = open_decider(cfg, catalog, redis_client, settings=DeciderSettings(ready_depth=2))
    report = decider.step(block_ms=None)
    assert report.enqueued == 12 and report.dispatched == 12  # one batch, past ready_depth

    done = run_actor(cfg, max_actions=1, idle_exit=0, spark=spark)
    assert (done.done, done.failed, done.lost) == (12, 0, 0)
    after = catalog.load_table(name)
    assert sorted(after.scan().to_arrow().column("id").to_pylist()) == rows
    added = [s for s in after.metadata.snapshots][snapshots:]
    assert [s.summary.operation.value for s in added] == ["replace", "replace"]  # merge, manifests
    assert len(after.current_snapshot().manifests(after.io)) == 1
    assert all(s.n == 1 for s in full_stats(after, TARGET).values())
    recent = gather(cfg, redis_client, decider.queue, 0.0)["recent"][0]
    assert recent["ok"] and recent["outcome"] == "done×12"
    assert recent["batch"]["items"] == 12 and recent["batch"]["partitions_rewritten"] == 12
    assert recent["batch"]["commits"] == 1 and recent["batch"]["partitions_per_commit"] == 12
    assert recent["maintenance"]["action"] == "rewrite_manifests"
    assert decider.queue.depth() == {"pending": 0, "ready": 0, "inflight": 0, "dead": 0}
