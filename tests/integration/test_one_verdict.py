"""One verdict per partition (``icefloe.optimizer.verdict``), whoever asks: after ``decide --once``,
the decider's queue and waiting set, ``status --json`` (kept state), ``tables --json`` and
``plan --json`` (fresh reads) and the dashboard's table page name the same action, or the
same wait, for every partition -- on a plain table (partitions to merge, to wait, healthy),
a sorted table (a merge in key order, a re-sort of late overlapping files, one in order)
and a z-ordered one. PyIceberg tables, the CLI in-process, a real Redis."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import yaml
from click.testing import CliRunner
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.sorting import SortField, SortOrder
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType

from icefloe.app.cli import cli
from icefloe.app.web.data import Dashboard
from icefloe.base.catalog import load_catalog
from icefloe.base.config import load_config
from icefloe.base.redis_client import connect
from icefloe.state.open import open_state
from icefloe.state.queue import ActionItem
from tests.support.config import config_raw

pytestmark = [pytest.mark.integration, pytest.mark.redis]

SCHEMA = Schema(
    NestedField(1, "day", StringType(), required=False),
    NestedField(2, "k", LongType(), required=False),
    NestedField(3, "v", StringType(), required=False),
)
SPEC = PartitionSpec(PartitionField(1, 1000, IdentityTransform(), "day"))
TARGET = 64 << 10


def _rows(day: str, lo: int, hi: int, width: int = 40) -> pa.Table:
    keys = list(range(lo, hi))
    return pa.table(
        {
            "day": pa.array([day] * len(keys), pa.string()),
            "k": pa.array(keys, pa.int64()),
            "v": pa.array([f"{k:0{width}d}" for k in keys], pa.string()),
        }
    )


def _invoke(conf: Path, *args: str) -> Any:
    result = CliRunner().invoke(cli, ["--config", str(conf), *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _lake(tmp_path: Path) -> Path:
    conf = tmp_path / "icefloe.yaml"
    raw = config_raw(tmp_path)
    raw["defaults"] = {"target_file_size_bytes": TARGET, "min_input_files": 4}
    raw["tables"] = {
        "db.sorted": {"actions": ["merge", "sort"], "clustering_tolerance": 1.25},
        "db.zordered": {"actions": ["merge", "zorder"], "zorder": ["k", "v"]},
    }
    conf.write_text(yaml.safe_dump(raw))
    catalog = load_catalog(load_config(str(conf)))
    catalog.create_namespace("db")
    plain = catalog.create_table("db.plain", SCHEMA, partition_spec=SPEC)
    for _ in range(5):
        plain.append(_rows("merge", 0, 40))  # five small files: merged now
    for _ in range(2):
        plain.append(_rows("wait", 0, 40))  # two: wait for min_input_files (4)
    plain.append(_rows("fine", 0, 3000))  # one file near the target: nothing to do
    order = SortOrder(SortField(source_id=2, transform=IdentityTransform()))
    ordered = catalog.create_table("db.sorted", SCHEMA, partition_spec=SPEC, sort_order=order)
    for i in range(4):  # in order, side by side: no overlap
        ordered.append(_rows("in-order", i * 1000, i * 1000 + 1000))
    for _ in range(3):  # the same key range three times over: deep, a re-sort lowers it
        ordered.append(_rows("late", 0, 1500))
    for i in range(5):  # small and in key order: a merge of neighbours
        ordered.append(_rows("small", i * 50, i * 50 + 50))
    boxes = catalog.create_table("db.zordered", SCHEMA, partition_spec=SPEC)
    for _ in range(3):
        boxes.append(_rows("square", 0, 1500))
    return conf


def _fresh_verdicts(conf: Path, name: str) -> dict[str, dict[str, Any]]:
    plan = _invoke(conf, "plan", name, "--json")
    return {
        p["key"]: p["verdict"]
        for p in plan["partitions"]
        if p["verdict"] is not None and p["verdict"]["state"] != "none"
    }


def test_every_surface_gives_the_decider_s_verdict(tmp_path: Path, redis_client: Any) -> None:
    conf = _lake(tmp_path)
    cfg = load_config(str(conf))
    _invoke(conf, "decide", "--once", "--json")
    status = _invoke(conf, "status", "--json")["tables"]
    tables = {r["table"]: r["verdicts"] for r in _invoke(conf, "tables", "--json")}
    client = connect(cfg)
    queue = open_state(cfg, client).queue
    dashboard = Dashboard(cfg)
    seen: dict[str, dict[str, tuple[str, str]]] = {}
    try:
        for name in ("db.plain", "db.sorted", "db.zordered"):
            kept = status[name]["verdicts"]
            assert kept == tables[name] == _fresh_verdicts(conf, name), name
            page = dashboard.table(name)["partitions"]
            shown = {p["key"]: p["verdict"] for p in page if p["verdict"]["state"] != "none"}
            assert shown == kept, name
            waiting = set(_waiting(cfg, client, name))
            for key, verdict in kept.items():
                if verdict["state"] == "wait":
                    assert key in waiting, (name, key)
                    continue
                item = queue.get(ActionItem.make_id(name, key or None, _lane(name)))
                assert item is not None and item.action == verdict["action"], (name, key)
            seen[name] = {k: (v["action"] or v["state"], v["reason"]) for k, v in kept.items()}
    finally:
        dashboard.close()
        client.close()
    # each kind of verdict is there at least once: the comparison covered them
    assert seen["db.plain"][_key("merge")][0] == "merge"
    assert seen["db.plain"][_key("wait")][0] == "wait"
    assert _key("fine") not in seen["db.plain"]
    late = seen["db.sorted"][_key("late")]
    assert late[0] == "sort" and late[1].startswith("depth"), late
    assert seen["db.zordered"][_key("square")][0] == "zorder"


def _lane(name: str) -> str:
    return {"db.plain": "merge", "db.sorted": "sort", "db.zordered": "zorder"}[name]


def _key(day: str) -> str:
    from tests.support.config import part

    return part(day=day)


def _waiting(cfg: Any, client: Any, name: str) -> list[str]:
    from icefloe.base.keys import Keys
    from icefloe.state.rolling.redis import RollingStats

    return list(RollingStats(client, Keys.for_config(cfg)).waiting(name))
