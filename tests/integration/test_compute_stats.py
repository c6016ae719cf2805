"""``compute_stats`` (``icefloe.optimizer.actions.compute_stats``) on real tables: Iceberg's table
and partition statistics computed for the current snapshot, registered in the metadata with
no snapshot added and no row changed; due again only once enough rows changed; refused by
no table that Iceberg cannot compute partition statistics for (unpartitioned: table
statistics only)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from icefloe.base.catalog import load_table
from icefloe.jobs.maintenance import run as upkeep
from icefloe.optimizer.actions import table_needs
from icefloe.state.health import read_health, statistics_age
from tests.support.config import make_config

pytestmark = [pytest.mark.integration, pytest.mark.spark]

NAME = "compute_stats"


def _due(cfg: Any, catalog: Any, ident: str, last_run_ms: int | None = None) -> list[str]:
    table = load_table(catalog, ident)
    m = cfg.policy_for(ident, table.properties).maintenance
    health = read_health(table, m.manifest_target(table.properties), m.retain_last)
    runs = {} if last_run_ms is None else {NAME: last_run_ms}
    needs = table_needs(
        health, m.rules(health.manifest_target), [NAME], int(time.time() * 1000), runs
    )
    return [n.reason for n in needs]


def test_statistics_are_computed_for_the_current_snapshot_and_refreshed_when_stale(
    spark: Any, lake_home: Path, catalog: Any, namespace: str
) -> None:
    fq, ident = f"lake.`{namespace}`.`t`", f"{namespace}.t"
    spark.sql(
        f"CREATE TABLE {fq} (id BIGINT, day STRING, v DOUBLE) USING iceberg PARTITIONED BY (day)"
    )
    for i in range(3):
        spark.sql(
            f"INSERT INTO {fq} SELECT id, 'd{i}', id * 0.5 FROM range({i * 100}, {i * 100 + 100})"
        )
    cfg = make_config(lake_home, tables={ident: {"maintenance": {"stats_changed_ratio": 0.5}}})
    assert cfg.policy_for(ident).maintenance.settings()["stats_changed_ratio"] == 0.5
    (reason,) = _due(cfg, catalog, ident)
    assert "no table statistics yet (300 rows)" in reason
    rows = sorted(spark.table(fq).collect())
    before = load_table(catalog, ident)

    out = upkeep.run_table_action(spark, cfg, ident, NAME)

    assert out["result"]["calls"] == ["compute_table_stats", "compute_partition_stats"]
    assert out["verified"]["checked"] is True
    table = load_table(catalog, ident)
    current = table.current_snapshot().snapshot_id
    assert len(table.metadata.snapshots) == len(before.metadata.snapshots)  # metadata only
    assert [s.snapshot_id for s in table.metadata.statistics] == [current]
    assert [s.snapshot_id for s in table.metadata.partition_statistics] == [current]
    blobs = table.metadata.statistics[0].blob_metadata
    assert {b.properties["ndv"] for b in blobs if b.fields == [1]} == {"300"}  # id: 300 distinct
    assert sorted(spark.table(fq).collect()) == rows
    m = cfg.policy_for(ident, table.properties).maintenance
    age = statistics_age(read_health(table, m.manifest_target(), m.retain_last))
    assert age == {"snapshot": current, "current": True, "changed_rows": 0, "changed_share": 0.0}
    assert _due(cfg, catalog, ident) == []

    # 100 rows more: a third changed, under the table's 0.5
    spark.sql(f"INSERT INTO {fq} SELECT id, 'd3', 0.0 FROM range(1000, 1100)")
    assert _due(cfg, catalog, ident) == []
    # a compaction's replace counts its rows read and written: 2·400 more
    everything = "options => map('rewrite-all', 'true')"
    spark.sql(f"CALL lake.system.rewrite_data_files(table => '{ident}', {everything})")
    (reason,) = _due(cfg, catalog, ident)
    assert "rows changed since the statistics" in reason
    assert _due(cfg, catalog, ident, last_run_ms=int(time.time() * 1000)) == []  # interval
    upkeep.run_table_action(spark, cfg, ident, NAME)
    assert _due(cfg, catalog, ident) == []


def test_an_unpartitioned_table_gets_table_statistics_only(
    spark: Any, lake_home: Path, catalog: Any, namespace: str
) -> None:
    fq, ident = f"lake.`{namespace}`.`u`", f"{namespace}.u"
    spark.sql(f"CREATE TABLE {fq} (id BIGINT, s STRING) USING iceberg")
    spark.sql(f"INSERT INTO {fq} SELECT id, CAST(id % 7 AS STRING) FROM range(50)")
    cfg = make_config(lake_home)
    dry = upkeep.run_table_action(spark, cfg, ident, NAME, dry_run=True)
    assert dry["result"]["calls"] == ["compute_table_stats"] and dry["verified"] == {}
    assert load_table(catalog, ident).metadata.statistics == []  # a dry run computes nothing
    upkeep.run_table_action(spark, cfg, ident, NAME)
    table = load_table(catalog, ident)
    assert [s.snapshot_id for s in table.metadata.statistics] == [
        table.current_snapshot().snapshot_id
    ]
    assert table.metadata.partition_statistics == []
