"""``icefloe tables --worst N``: the managed tables ordered by the documented health score
(``icefloe.optimizer.health_score``), recomputed here from each table's own files (PyIceberg
tables, no Spark, no Redis)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import yaml
from click.testing import CliRunner

from icefloe.app.cli import cli
from icefloe.base.catalog import load_catalog
from icefloe.base.config import load_config
from icefloe.base.tablestats import current_partitions
from icefloe.optimizer.health_score import HealthInputs, health_score, removable_mse
from icefloe.state.health import read_health

pytestmark = [pytest.mark.integration]


def _invoke(conf: Path, *args: str) -> Any:
    result = CliRunner().invoke(cli, ["--config", str(conf), *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_worst_orders_tables_by_the_documented_score(tmp_path: Path) -> None:
    conf = tmp_path / "icefloe.yaml"
    raw = {
        "catalog": {"uri": f"sqlite:///{tmp_path}/c.db", "warehouse": f"file://{tmp_path}/wh"},
        "defaults": {"target_file_size_bytes": 64 << 10, "min_input_files": 2},
        "managed": {"namespaces": ["db"]},
    }
    conf.write_text(yaml.safe_dump(raw))
    cfg = load_config(str(conf))
    catalog = load_catalog(cfg)
    catalog.create_namespace("db")
    rows = pa.table({"k": pa.array(range(2000), pa.int64()), "v": [f"v{i}" for i in range(2000)]})
    # 1, 3, 8 and 2 appends of the same rows: more small files, more for a merge to remove
    for name, commits in (("one", 1), ("three", 3), ("eight", 8), ("two", 2)):
        table = catalog.create_table(f"db.{name}", schema=rows.schema)
        for _ in range(commits):
            table.append(rows)

    shown = _invoke(conf, "tables", "--fresh", "--worst", "3", "--json")
    every = _invoke(conf, "tables", "--fresh", "--json")
    assert len(shown) == 3 and len(every) == 4
    now = time.time()
    expected = {}
    for name in ("db.one", "db.three", "db.eight", "db.two"):
        table = catalog.load_table(name)
        policy = cfg.policy_for(name, table.properties)
        m = policy.maintenance
        health = read_health(table, m.manifest_target(table.properties), m.retain_last)
        parts = [p.stats(policy.target) for p in current_partitions(table)]
        inputs = HealthInputs.of(
            removable_mse(parts, policy.target),
            policy.target,
            policy.tolerance_bytes,
            health,
            m.rules(health.manifest_target),
            int(now * 1000),
        )
        expected[name] = health_score(inputs).total
    assert len(set(expected.values())) == 4  # four different scores: the order is strict
    worst_first = sorted(expected, key=expected.__getitem__)
    assert [r["table"] for r in shown] == worst_first[:3]
    assert {r["table"]: r["health"]["score"] for r in every} == expected
    assert worst_first[0] == "db.eight" and worst_first[-1] == "db.one"
    assert shown[0]["health"]["worst"] == "data_files"
