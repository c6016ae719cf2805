"""A config file holds only what differs from the defaults: a file with nothing but a
``catalog:`` section runs ``plan``, ``tables``, ``optimize`` and ``skew detect``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from icefloe.app.cli import cli
from icefloe.base.catalog import spark_table_name
from icefloe.base.config import Config

pytestmark = [pytest.mark.spark, pytest.mark.integration]


def _invoke(conf: Path, *args: str) -> Any:
    result = CliRunner().invoke(cli, ["--config", str(conf), *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_a_catalog_only_config_runs_plan_tables_optimize_and_skew_detect(
    spark: Any, cfg: Config, namespace: str, tmp_path: Path
) -> None:
    conf = tmp_path / "icefloe.yaml"
    catalog_only = {"catalog": {"uri": cfg.catalog.uri, "warehouse": cfg.catalog.warehouse}}
    conf.write_text(yaml.safe_dump(catalog_only))
    table = f"{namespace}.events"
    name = spark_table_name(cfg, table)
    spark.sql(f"CREATE TABLE {name} (k INT, v STRING) USING iceberg")
    spark.createDataFrame([(9, "row-9")], "k int, v string").writeTo(name).append()
    # one file alone, then a partition of four: under the default min_input_files (5)
    plan = _invoke(conf, "plan", table, "--json")
    assert [p["reason"] for p in plan["partitions"]] == [
        "1 small file(s), fewer than min_input_files (5)"
    ]
    for i in range(4):  # four more commits: five small files, the default min_input_files
        spark.createDataFrame([(i % 2, f"row-{i}")], "k int, v string").writeTo(name).append()

    plan = _invoke(conf, "plan", table, "--json")
    assert plan["target_file_size_bytes"] == 128 << 20  # the default target
    assert plan["tolerance_bytes"] == (128 << 20) // 3  # and its default tolerance
    assert [len(g) for p in plan["partitions"] for g in p["groups"]] == [5]

    assert _invoke(conf, "tables", "--json") == []  # the default manages nothing

    report = _invoke(conf, "optimize", table, "--json")
    assert report["files_rewritten"] == 5 and report["files_added"] == 1
    assert spark.table(name).count() == 5

    skew = _invoke(conf, "skew", "detect", table, "--key", "k", "--json")
    assert skew["rows"] == 5 and skew["table"] == table
