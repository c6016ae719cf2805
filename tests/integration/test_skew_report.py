"""Hot-key reports as table properties, end to end: ``detect_table`` publishes each column's
report (``icefloe.skew.hot-keys.<column>``) in one metadata commit, its values read back by
Spark's CAST to exactly the rows reported; a reused report publishes again where the
property is missing; the ``skew_report`` action is due, run by the maintenance runner and
``icefloe maintain``, and refreshes a stale report."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from icefloe.app.cli import cli
from icefloe.base.catalog import load_table, spark_table_name
from icefloe.base.config import Config
from icefloe.jobs.maintenance import run as upkeep
from icefloe.jobs.skew import detect as skew_detect
from icefloe.optimizer.actions import table_needs
from icefloe.optimizer.skew_report import property_name, reports_in
from icefloe.state.health import read_health
from tests.support.config import config_raw, make_config

pytestmark = [pytest.mark.integration, pytest.mark.spark]

NAME = "skew_report"
COLUMNS = ["k", "s", "d", "m", "ts", "b"]
ROWS = """
SELECT
  CASE WHEN id % 10 < 3 THEN 7 WHEN id % 10 = 3 THEN 13 ELSE 100 + id % 500 END,
  CASE WHEN id % 4 = 0 THEN 'it''s hot' WHEN id % 50 = 1 THEN NULL ELSE CONCAT('s', id) END,
  CASE WHEN id % 5 = 0 THEN DATE'2024-02-29' ELSE date_add(DATE'2000-01-01', CAST(id AS INT)) END,
  CASE WHEN id % 5 = 1 THEN CAST(12.5 AS DECIMAL(10,2)) ELSE CAST(id + 0.25 AS DECIMAL(10,2)) END,
  CASE WHEN id % 5 = 2 THEN TIMESTAMP'2024-01-02 03:04:05.000060'
       ELSE TIMESTAMP'2000-01-01 00:00:00' + make_interval(0, 0, 0, 0, 0, 0, id) END,
  CASE WHEN id % 3 = 0 THEN X'00' ELSE CAST(CAST(id AS STRING) AS BINARY) END
FROM range({start}, {end})
"""


def _create(spark: Any, cfg: Config, ident: str, rows: int) -> str:
    fq = spark_table_name(cfg, ident)
    spark.sql(
        f"CREATE TABLE {fq} (k INT, s STRING, d DATE, m DECIMAL(10,2), ts TIMESTAMP, b BINARY) "
        "USING iceberg"
    )
    spark.sql(f"INSERT INTO {fq} " + ROWS.format(start=0, end=rows))
    return fq


def test_detect_publishes_each_columns_hot_keys_as_a_table_property(
    spark: Any, cfg: Config, catalog: Any, namespace: str
) -> None:
    ident = f"{namespace}.facts"
    fq = _create(spark, cfg, ident, 3000)
    before = load_table(catalog, ident)
    started = int(time.time() * 1000)

    report = skew_detect.detect_table(
        spark, cfg, catalog, ident, COLUMNS, reports_namespace=namespace
    )

    table = load_table(catalog, ident)
    current = table.current_snapshot().snapshot_id
    assert len(table.metadata.snapshots) == len(before.metadata.snapshots)  # metadata only
    assert report["published"] == sorted(property_name(c) for c in COLUMNS)
    assert table.properties[property_name("k")].startswith(
        f'{{"v":1,"column":"k","type":"int","snapshot_id":{current},"computed_at_ms":'
    )
    reports = reports_in(table.properties)
    schema = spark.table(fq).schema
    for column, r in reports.items():
        assert r.type == schema[column].dataType.simpleString()
        assert r.snapshot_id == current and r.rows == 3000 and r.max_age_ms == 24 * 3_600_000
        assert started <= r.computed_at_ms <= int(time.time() * 1000)
        for value, rows in r.keys:  # what the JVM rule reads: CAST(value AS type)
            sql = f"SELECT count(*) FROM {fq} WHERE {column} = CAST(:v AS {r.type})"
            assert spark.sql(sql, args={"v": value}).first()[0] == rows, (column, value)
    assert reports["k"].keys == (("7", 900), ("13", 300))
    assert reports["s"].keys == (("it's hot", 750),) and reports["s"].null_rows == 60
    assert reports["d"].keys == (("2024-02-29", 600),)
    assert reports["m"].keys == (("12.50", 600),)
    assert reports["ts"].keys == (("2024-01-02 03:04:05.000060", 600),)
    assert reports["b"].type == "binary" and reports["b"].keys == ()  # never written

    # reused: the properties are of this snapshot, nothing is written again
    again = skew_detect.detect_table(
        spark, cfg, catalog, ident, COLUMNS, reports_namespace=namespace
    )
    assert again["cached"] and again["published"] == []
    # ... unless one is missing
    with load_table(catalog, ident).transaction() as tx:
        tx.remove_properties(property_name("k"))
    once_more = skew_detect.detect_table(
        spark, cfg, catalog, ident, COLUMNS, reports_namespace=namespace
    )
    assert once_more["cached"] and property_name("k") in once_more["published"]
    back = reports_in(load_table(catalog, ident).properties)["k"]
    assert back == dataclasses.replace(reports["k"], computed_at_ms=back.computed_at_ms)


def _policy(lake_home: Path, ident: str) -> dict[str, Any]:
    maintenance = {"skew_keys": ["k"], "skew_report_changed_ratio": 0.2}
    return {"tables": {ident: {"actions": ["merge", NAME], "maintenance": maintenance}}}


def _due(cfg: Config, catalog: Any, ident: str) -> list[str]:
    table = load_table(catalog, ident)
    m = cfg.policy_for(ident, table.properties).maintenance
    health = read_health(table, m.manifest_target(table.properties), m.retain_last)
    rules = m.rules(health.manifest_target)
    return [n.reason for n in table_needs(health, rules, [NAME], int(time.time() * 1000), {})]


def test_the_maintenance_runner_refreshes_a_stale_report(
    spark: Any, lake_home: Path, catalog: Any, namespace: str, tmp_path: Path
) -> None:
    ident = f"{namespace}.t"
    cfg = make_config(lake_home, **_policy(lake_home, ident))
    fq = _create(spark, cfg, ident, 1000)
    assert _due(cfg, catalog, ident) == ["k: no hot-key report"]
    conf = tmp_path / "icefloe.yaml"
    conf.write_text(yaml.safe_dump(config_raw(lake_home, **_policy(lake_home, ident))))
    shown = CliRunner().invoke(
        cli, ["--config", str(conf), "maintain", ident, "--action", NAME, "--dry-run", "--json"]
    )
    assert shown.exit_code == 0, shown.output
    plan = json.loads(shown.output)
    assert {"action": NAME, "reason": "k: no hot-key report", "enabled": True} in plan["due"]
    assert plan["would_run"] == [NAME] and plan["ran"] == []
    dry = upkeep.run_table_action(spark, cfg, ident, NAME, dry_run=True)
    assert dry["result"] == {"columns": ["k"], "published": []} and dry["verified"] == {}

    out = upkeep.run_table_action(spark, cfg, ident, NAME)

    assert out["result"]["published"] == [property_name("k")]
    assert out["verified"]["referenced_files_present"] is True
    first = reports_in(load_table(catalog, ident).properties)["k"]
    assert first.keys == (("7", 300), ("13", 100))
    assert _due(cfg, catalog, ident) == []

    spark.sql(f"INSERT INTO {fq} " + ROWS.format(start=1000, end=1100))  # 10%: not yet
    assert _due(cfg, catalog, ident) == []
    spark.sql(f"INSERT INTO {fq} SELECT 42, NULL, NULL, NULL, NULL, NULL FROM range(200)")
    (reason,) = _due(cfg, catalog, ident)
    assert reason == "k: 23% of the rows changed since"  # 300 of 1300

    upkeep.run_table_action(spark, cfg, ident, NAME)

    table = load_table(catalog, ident)
    fresh = reports_in(table.properties)["k"]
    assert fresh.snapshot_id == table.current_snapshot().snapshot_id != first.snapshot_id
    assert fresh.keys == (("7", 330), ("42", 200), ("13", 110))
    assert _due(cfg, catalog, ident) == []

    # `skew detect` without --key: the policy's skew_keys (the report just stored, reused)
    shown = CliRunner().invoke(cli, ["--config", str(conf), "skew", "detect", ident, "--json"])
    assert shown.exit_code == 0, shown.output
    data = json.loads(shown.output)
    assert data["cached"] and list(data["keys"]) == ["k"] and data["published"] == []


def test_detect_without_keys_or_policy_keys_is_a_usage_error(
    lake_home: Path,
    catalog: Any,
    namespace: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField

    from icefloe.app.cli import main

    ident = f"{namespace}.e"
    catalog.create_table(ident, Schema(NestedField(1, "k", LongType(), required=False)))
    conf = tmp_path / "icefloe.yaml"
    conf.write_text(yaml.safe_dump(config_raw(lake_home)))
    with pytest.raises(SystemExit) as exit_info:
        main(["--config", str(conf), "skew", "detect", ident])
    err = capsys.readouterr().err.strip()
    assert exit_info.value.code == 2 and len(err.splitlines()) == 1
    assert "maintenance.skew_keys" in err
