"""Operator surfaces from the decider's kept state (#48): after ``decide --once``, ``tables``
(kept, the default) gives every table what ``tables --fresh`` reads from the catalog -- the
same health score, files, bytes, partitions, verdicts, metadata health and statistics --
with when the decider saw it; a table the decider has not seen is listed as such, one it
could not read as its error; ``--namespace`` and ``--limit`` cut the list; the dashboard's
list pages and filters from Redis alone (no catalog call); ``status`` reads every table in
one round trip. PyIceberg tables, the CLI in-process, a real Redis."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import yaml
from click.testing import CliRunner

from icefloe.app.cli import cli
from icefloe.app.cli import tables as tables_cli
from icefloe.app.web.data import Dashboard
from icefloe.base.catalog import load_catalog
from icefloe.base.config import load_config
from icefloe.base.errors import UsageError
from icefloe.base.keys import Keys
from tests.support.config import config_raw

pytestmark = [pytest.mark.integration, pytest.mark.redis]

COMPARED = (
    "health",
    "files",
    "bytes",
    "snapshot_id",
    "manifests",
    "snapshots",
    "delete_files",
    "delete_ratio",
    "statistics",
    "partitions",
    "partitions_needing_work",
    "verdicts",
)


def _run(conf: Path, *args: str) -> Any:
    result = CliRunner().invoke(cli, ["--config", str(conf), *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout) if "--json" in args else result.output


def _lake(tmp_path: Path) -> tuple[Path, Any]:
    conf = tmp_path / "icefloe.yaml"
    raw = config_raw(tmp_path)
    raw["defaults"] = {"target_file_size_bytes": 64 << 10, "min_input_files": 3}
    raw["managed"] = {"namespaces": ["db", "other"]}
    conf.write_text(yaml.safe_dump(raw))
    catalog = load_catalog(load_config(str(conf)))
    for ns in ("db", "other"):
        catalog.create_namespace(ns)
    rows = pa.table(
        {
            "day": pa.array(["a", "b", "c"] * 100, pa.string()),
            "k": pa.array(range(300), pa.int64()),
        }
    )
    for name, commits in (("db.one", 1), ("db.two", 2), ("db.five", 5), ("other.x", 3)):
        table = catalog.create_table(name, schema=rows.schema)
        for _ in range(commits):
            table.append(rows)
    return conf, catalog


def test_kept_rows_equal_fresh_rows(tmp_path: Path, redis_client: Any) -> None:
    conf, catalog = _lake(tmp_path)
    unseen = _run(conf, "tables", "--json")
    assert {r["table"]: r.get("seen") for r in unseen} == dict.fromkeys(
        ["db.five", "db.one", "db.two", "other.x"], False
    )
    _run(conf, "decide", "--once", "--json")
    kept = {r["table"]: r for r in _run(conf, "tables", "--json")}
    fresh = {r["table"]: r for r in _run(conf, "tables", "--fresh", "--json")}
    assert set(kept) == set(fresh) == {"db.five", "db.one", "db.two", "other.x"}
    for name, row in fresh.items():
        mine = kept[name]
        assert mine["age_s"] >= 0 and mine["seen_at"] > 0
        for key in COMPARED:
            if key == "health":  # the same score; its snapshot-age part ages by the second
                assert mine[key]["score"] == pytest.approx(row[key]["score"], abs=0.05), name
                assert mine[key]["worst"] == row[key]["worst"], name
            else:
                assert mine[key] == row[key], (name, key)
    assert kept["db.five"]["partitions_needing_work"] == 1  # five small files
    assert kept["db.one"]["partitions_needing_work"] == 0  # one: nothing to merge
    by_score = sorted(fresh, key=lambda n: fresh[n]["health"]["score"])

    worst = _run(conf, "tables", "--worst", "2", "--json")
    assert [r["table"] for r in worst] == by_score[:2]
    only = _run(conf, "tables", "--namespace", "other", "--json")
    assert [r["table"] for r in only] == ["other.x"]
    assert len(_run(conf, "tables", "--limit", "1", "--json")) == 1
    text = _run(conf, "tables")
    assert "db.five" in text and "s ago" in text
    with pytest.raises(UsageError, match="bad namespace 'a b'"):
        _run(conf, "tables", "--namespace", "a b")

    status = _run(conf, "status", "--json")["tables"]
    assert status["db.five"]["verdicts"] == kept["db.five"]["verdicts"]
    assert status["db.five"]["health"]["score"] == pytest.approx(
        kept["db.five"]["health"]["score"], abs=0.05
    )
    detail = _run(conf, "status", "--table", "db.five", "--json")["tables"]["db.five"]
    assert len(detail["over_tolerance"]) == 1 and "over_tolerance" not in status["db.two"]


def test_the_dashboard_lists_pages_and_filters_without_the_catalog(
    tmp_path: Path, redis_client: Any
) -> None:
    conf, _ = _lake(tmp_path)
    cfg = load_config(str(conf))
    board = Dashboard(cfg)
    try:
        first = board.tables()  # no decider has listed them: the catalog, all unseen
        assert first["total"] == 4 and all(r["seen"] is False for r in first["rows"])
        _run(conf, "decide", "--once", "--json")

        def no_catalog() -> Any:
            raise AssertionError("the list read the catalog")

        board._cat = no_catalog  # type: ignore[method-assign]
        page = board.tables(limit=2)
        rest = board.tables(offset=2, limit=2)
        assert page["total"] == 4 and len(page["rows"]) == len(rest["rows"]) == 2
        names = [r["table"] for r in page["rows"] + rest["rows"]]
        assert sorted(names) == ["db.five", "db.one", "db.two", "other.x"]
        scores = [r["health"]["score"] for r in page["rows"] + rest["rows"]]
        assert scores == sorted(scores) and scores[0] < scores[-1]  # worst first, over pages
        found = board.tables(query="TWO")
        assert found["total"] == 1 and found["rows"][0]["table"] == "db.two"
        # ranked by the records alone (an older decider kept no ranks): the same list
        assert redis_client.delete(Keys.for_config(cfg).table_ranks) == 1
        by_records = Dashboard(cfg).tables()
        assert [r["table"] for r in by_records["rows"]] == names
        assert [r["health"]["score"] for r in by_records["rows"]] == scores
    finally:
        board.close()


def test_tables_lists_from_the_decider_s_list_while_it_covers_the_config(
    tmp_path: Path, redis_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once a decider has listed the managed tables, ``tables`` opens no catalog (its
    listing is the decider's); a config that manages more than that list (a namespace
    with no table listed, a table it names) lists from the catalog again, as does
    ``--fresh``."""
    conf, catalog = _lake(tmp_path)
    _run(conf, "decide", "--once", "--json")
    opened: list[str] = []
    real = tables_cli.load_catalog

    def counted(*args: Any, **kwargs: Any) -> Any:
        opened.append("catalog")
        return real(*args, **kwargs)

    monkeypatch.setattr(tables_cli, "load_catalog", counted)
    kept = _run(conf, "tables", "--json")
    assert [r["table"] for r in kept] == ["db.five", "db.one", "db.two", "other.x"]
    assert opened == []
    assert [r["table"] for r in _run(conf, "tables", "--namespace", "other", "--json")] == [
        "other.x"
    ]
    assert opened == []
    _run(conf, "tables", "--fresh", "--json")
    assert opened == ["catalog"]

    raw = yaml.safe_load(conf.read_text())
    catalog.create_namespace("more")
    catalog.create_table("more.t", schema=pa.schema([("k", pa.int64())]))
    raw["managed"]["namespaces"].append("more")
    conf.write_text(yaml.safe_dump(raw))
    wider = {r["table"]: r for r in _run(conf, "tables", "--json")}
    assert opened == ["catalog", "catalog"] and wider["more.t"] == {
        "table": "more.t",
        "seen": False,
    }
    raw["managed"] = {"namespaces": ["other"], "tables": ["db.one"]}
    conf.write_text(yaml.safe_dump(raw))
    assert [r["table"] for r in _run(conf, "tables", "--json")] == ["db.one", "other.x"]
    assert len(opened) == 2  # a config that manages less: the decider's list, cut
