"""The leader's history flush (``icefloe.jobs.history.flush``) on the in-memory ledger and a
real PyIceberg table: every record appended exactly once, whatever step it died at."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from icefloe.base.catalog import load_catalog
from icefloe.base.config import Config
from icefloe.jobs.history import table as history
from icefloe.jobs.history.flush import Kept, flush, read_all
from icefloe.state.ledger.memory import MemoryLedger
from tests.support.config import make_config

pytestmark = pytest.mark.unit


@pytest.fixture
def cfg(tmp_path: Path) -> Config:
    return make_config(tmp_path, history={"flush_records": 3})


def _record(ledger: MemoryLedger, n: int, table: str = "db.t") -> None:
    for i in range(n):
        entry = {"id": f"i{i}", "table": table, "action": "merge", "ok": True, "seconds": 1.0}
        ledger.record_action(entry | {"finished_at": 1_800_000_000.0 + i}, history=True)


def _ids(catalog: Any, cfg: Config) -> list[str]:
    table = catalog.load_table(cfg.history.table)
    return [r["item_id"] for r in history.read(table)]


def test_nothing_recorded_creates_nothing(cfg: Config) -> None:
    catalog = load_catalog(cfg)
    assert flush(cfg, catalog, MemoryLedger(), "d1") == 0
    assert not catalog.table_exists(cfg.history.table)


def test_each_flush_one_commit_of_at_most_flush_records(cfg: Config) -> None:
    catalog, ledger = load_catalog(cfg), MemoryLedger()
    _record(ledger, 5)
    assert [flush(cfg, catalog, ledger, "d1") for _ in range(3)] == [3, 2, 0]
    table = catalog.load_table(cfg.history.table)
    assert [s.summary["operation"].value for s in table.snapshots()] == ["append", "append"]
    assert _ids(catalog, cfg) == [f"i{i}" for i in range(5)]
    assert ledger.history_after(history.last_appended(table), 10) == []
    assert {r["decider_id"] for r in history.read(table)} == {"d1"}


def test_a_flush_that_dies_before_its_trim_appends_nothing_twice(cfg: Config) -> None:
    catalog, ledger = load_catalog(cfg), MemoryLedger()
    _record(ledger, 2)

    def dies(upto_id: str) -> None:
        raise KeyboardInterrupt("killed between the commit and the trim")

    real = ledger.trim_history
    ledger.trim_history = dies  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt):
        flush(cfg, catalog, ledger, "d1")
    ledger.trim_history = real  # type: ignore[method-assign]
    assert len(ledger.history_after(None, 10)) == 2  # still in the stream
    _record(ledger, 1, table="db.u")
    assert flush(cfg, catalog, ledger, "d1") == 1  # only the new one
    assert _ids(catalog, cfg) == ["i0", "i1", "i0"]
    assert [r["table_name"] for r in history.read(catalog.load_table(cfg.history.table))] == [
        "db.t",
        "db.t",
        "db.u",
    ]


def test_a_flush_that_dies_before_its_commit_loses_nothing(cfg: Config) -> None:
    catalog, ledger = load_catalog(cfg), MemoryLedger()
    _record(ledger, 2)
    real = history.append

    def dies(*args: Any) -> None:
        raise OSError("the catalog went away")

    history.append = dies  # type: ignore[assignment]
    try:
        with pytest.raises(OSError):
            flush(cfg, catalog, ledger, "d1")
    finally:
        history.append = real  # type: ignore[assignment]
    assert flush(cfg, catalog, ledger, "d1") == 2
    assert _ids(catalog, cfg) == ["i0", "i1"]


def test_history_shows_the_table_then_the_pending_records(cfg: Config) -> None:
    catalog, ledger = load_catalog(cfg), MemoryLedger()
    _record(ledger, 2)
    flush(cfg, catalog, ledger, "d1")
    _record(ledger, 1, table="db.u")
    rows = read_all(cfg, catalog, ledger, None, None)
    assert [(r["table_name"], bool(r.get("pending"))) for r in rows] == [
        ("db.t", False),
        ("db.t", False),
        ("db.u", True),
    ]
    assert [r["table_name"] for r in read_all(cfg, catalog, ledger, "db.u", None)] == ["db.u"]
    assert [r["table_name"] for r in read_all(cfg, catalog, None, None, None)] == ["db.t"] * 2


def test_kept_rows_are_read_again_only_when_the_history_table_changed(
    cfg: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The dashboard polls every 2 s: the table's rows come from ``kept`` until a flush
    appends to it; the pending records are read every time."""
    catalog, ledger = load_catalog(cfg), MemoryLedger()
    _record(ledger, 2)
    flush(cfg, catalog, ledger, "d1")
    scans: list[object] = []
    real = history.read
    monkeypatch.setattr(history, "read", lambda *a: scans.append(a[1]) or real(*a))
    kept: Kept = {}
    first = read_all(cfg, catalog, ledger, None, None, kept)
    first[0]["table_name"] = "changed by the caller"  # the kept rows are not the caller's
    _record(ledger, 1, table="db.u")
    again = read_all(cfg, catalog, ledger, None, None, kept)
    assert [r["table_name"] for r in again] == ["db.t", "db.t", "db.u"] and scans == [None]
    assert flush(cfg, catalog, ledger, "d1") == 1  # the table changed: read again
    after = read_all(cfg, catalog, ledger, None, None, kept)
    assert [r.get("pending", False) for r in after] == [False] * 3 and scans == [None, None]


def test_disabled_history_records_and_appends_nothing(tmp_path: Path) -> None:
    cfg = make_config(tmp_path, history={"enabled": False})
    catalog, ledger = load_catalog(cfg), MemoryLedger()
    ledger.record_action({"id": "a"}, history=cfg.history.enabled)
    assert ledger.history_after(None, 10) == []
    assert flush(cfg, catalog, ledger, "d1") == 0


def test_a_stalled_leader_appends_nothing_another_leader_appended(cfg: Config) -> None:
    """#45.8: leader A read the table and its batch, then stalled; leader B flushed the
    same records and trimmed. A's commit then conflicts, and A reads the table's newest id
    again instead of committing its batch on the refreshed table (as PyIceberg's own
    commit retry would): each record once."""
    catalog, ledger = load_catalog(cfg), MemoryLedger()
    _record(ledger, 1)
    assert flush(cfg, catalog, ledger, "a") == 1
    for i in range(1, 3):
        ledger.record_action({"id": f"i{i}", "table": "db.t", "ok": True}, history=True)
    real = ledger.history_after
    appended_by_b: list[int] = []

    def read_then_stall(last_id: str | None, count: int) -> list[tuple[str, dict[str, Any]]]:
        batch = real(last_id, count)
        ledger.history_after = real  # type: ignore[method-assign]
        appended_by_b.append(flush(cfg, catalog, ledger, "b"))  # while A stalls
        return batch

    ledger.history_after = read_then_stall  # type: ignore[method-assign]
    assert flush(cfg, catalog, ledger, "a") == 0
    assert appended_by_b == [2]
    assert _ids(catalog, cfg) == ["i0", "i1", "i2"]
    rows = history.read(catalog.load_table(cfg.history.table))
    assert [r["decider_id"] for r in rows] == ["a", "b", "b"]
