"""The history table (PyIceberg only, no Spark, no Redis): created on first use, rows
from action records, the newest id committed with the rows, read back by table and time."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from icefloe.jobs.history import table as history

pytestmark = pytest.mark.unit


@pytest.fixture
def catalog(tmp_path: Path) -> Any:
    from pyiceberg.catalog.sql import SqlCatalog

    return SqlCatalog("lake", uri=f"sqlite:///{tmp_path}/c.db", warehouse=f"file://{tmp_path}/wh")


def entry(table: str, finished: float, **extra: Any) -> dict[str, Any]:
    base = {
        "id": "item-1",
        "table": table,
        "partition": "day=2026-11-01",
        "key": "k1",
        "action": "merge",
        "actor": "actor-a",
        "attempt": 1,
        "ok": True,
        "outcome": "acked",
        "seconds": 2.5,
        "finished_at": finished,
        "bytes_rewritten": 1000,
        "files_rewritten": 4,
        "mse_before": 9.0,
        "mse_after": 1.0,
        "snapshot_ids": [11, 12],
    }
    return base | extra


def test_created_once_appended_and_read_back_in_order(catalog: Any) -> None:
    t = history.ensure_table(catalog, "icefloe.action_history")
    assert history.last_appended(t) is None
    assert history.ensure_table(catalog, "icefloe.action_history").metadata.table_uuid == (
        t.metadata.table_uuid
    )
    rows = [
        history.to_row("1700000000000-0", entry("db.a", 1_700_000_000.0), "dec-1"),
        history.to_row(
            "1700000000000-1",
            entry("db.b", 1_700_000_001.0, ok=False, error="OperationFailed: boom"),
            "dec-1",
        ),
    ]
    history.append(t, rows, "1700000000000-1")
    t = catalog.load_table("icefloe.action_history")
    assert history.last_appended(t) == "1700000000000-1"
    assert t.current_snapshot().summary["operation"].value == "append"
    got = history.read(t)
    assert [r["record_id"] for r in got] == ["1700000000000-0", "1700000000000-1"]
    a, b = got
    assert a["partitions"] == ["day=2026-11-01"] and a["partition_keys"] == ["k1"]
    assert a["snapshot_id"] == 12 and a["bytes_rewritten"] == 1000 and a["seconds"] == 2.5
    assert a["ended_at"] == datetime.fromtimestamp(1_700_000_000.0, tz=UTC)
    assert (a["ended_at"] - a["started_at"]).total_seconds() == 2.5
    assert b["error_class"] == "OperationFailed" and not b["ok"]
    assert [r["table_name"] for r in history.read(t, "db.b")] == ["db.b"]
    since = datetime.fromtimestamp(1_700_000_000.5, tz=UTC)
    assert [r["table_name"] for r in history.read(t, since=since)] == ["db.b"]


def test_commit_facts_count_manifests_and_read_the_rewrite_id(catalog: Any) -> None:
    import pyarrow as pa

    catalog.create_namespace("db")
    rows = pa.table({"k": pa.array([1, 2], pa.int64())})
    t = catalog.create_table("db.t", schema=rows.schema)
    t.append(rows)
    first = t.current_snapshot().snapshot_id
    t.append(rows, snapshot_properties={"icefloe.rewrite-id": "rw-1"})
    t.append(rows)
    last = t.current_snapshot().snapshot_id
    parent = t.snapshots()[1].snapshot_id
    assert history.commit_facts(t, first, parent) == {
        "manifests_before": 1,
        "manifests_after": 2,
        "rewrite_id": "rw-1",
    }
    assert history.commit_facts(t, None, last)["manifests_after"] == 3
    assert history.commit_facts(t, None, last)["rewrite_id"] is None


def test_what_the_plan_predicted_is_read_back_beside_what_was_measured(catalog: Any) -> None:
    """The plan's predictions travel in the record's detail: every history table, old ones
    included, holds them without a column of their own (#46)."""
    t = history.ensure_table(catalog, "icefloe.action_history")
    planned = entry("db.a", 1_700_000_000.0, mse_predicted=2.0, bytes_added=900)
    planned |= {"bytes_added_predicted": 950}
    rows = [
        history.to_row("1700000000000-0", planned, "dec-1"),
        history.to_row("1700000000000-1", entry("db.a", 1_700_000_001.0), "dec-1"),
    ]
    history.append(t, rows, "1700000000000-1")
    a, b = (history.with_predictions(r) for r in history.read(t))
    assert (a["mse_after"], a["mse_predicted"]) == (1.0, 2.0)
    assert (a["bytes_added"], a["bytes_added_predicted"]) == (900, 950)
    assert b["mse_predicted"] is None and b["bytes_added_predicted"] is None  # an older one
    assert history.with_predictions({"detail": "not json"})["mse_predicted"] is None
