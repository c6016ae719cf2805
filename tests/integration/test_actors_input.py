"""Bad input to the actors and their CLI: one clear message, a defined outcome, and
nothing committed that could lose or duplicate a row."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from icefloe.app.cli import main as cli_main
from icefloe.app.scripts import actor_optimize
from icefloe.base.catalog import load_catalog, load_table
from icefloe.base.errors import OperationFailed, TableNotFound, UsageError
from icefloe.jobs.data.optimize import optimize_table, plan_table
from tests.support.config import part, with_engine

pytestmark = [pytest.mark.integration, pytest.mark.spark]

PROPS = (
    "'format-version'='2', 'write.target-file-size-bytes'='16000', 'write.distribution-mode'='none'"
)


def create(
    spark: Any, namespace: str, name: str, partitioned: bool = True, inserts: int = 0
) -> str:
    fq = f"lake.`{namespace}`.`{name}`"
    part = "PARTITIONED BY (day)" if partitioned else ""
    spark.sql(
        f"CREATE TABLE {fq} (id BIGINT, day STRING, v STRING) USING iceberg {part} "
        f"TBLPROPERTIES ({PROPS})"
    )
    if inserts:  # one INSERT, ``inserts`` tasks: that many small files per partition
        spark.sql(
            f"INSERT INTO {fq} SELECT /*+ REPARTITION({inserts}) */ id, concat('d', id % 2), "
            f"sha2(cast(id AS STRING), 256) FROM range(0, {inserts * 40})"
        )
    return f"{namespace}.{name}"


@pytest.fixture
def events(spark: Any, namespace: str) -> str:
    return create(spark, namespace, "events", inserts=3)


def _snapshot(catalog: Any, ident: str) -> int | None:
    snap = load_table(catalog, ident).current_snapshot()
    return None if snap is None else snap.snapshot_id


def test_unknown_table_and_bad_identifier(spark, cfg, namespace):
    with pytest.raises(TableNotFound, match=f"table '{namespace}.nope' not found"):
        optimize_table(spark, cfg, f"{namespace}.nope")
    for bad in ("nodot", "a.b-c", "a..b", ""):
        with pytest.raises(UsageError, match="bad table identifier"):
            optimize_table(spark, cfg, bad)


def test_bad_action_partition_and_sort_order_change_nothing(spark, cfg, catalog, events):
    snap = _snapshot(catalog, events)
    with pytest.raises(UsageError, match="unknown action 'zip'"):
        optimize_table(spark, cfg, events, action="zip")
    with pytest.raises(UsageError, match="column 'region' is not a partition field"):
        optimize_table(spark, cfg, events, partitions=["region=eu"])
    with pytest.raises(UsageError, match="bad partition 'day'"):
        optimize_table(spark, cfg, events, partitions=["day"])
    with pytest.raises(UsageError, match="no partition of .* matches 'day=d9'"):
        optimize_table(spark, cfg, events, partitions=["day=d9"])
    with pytest.raises(UsageError, match="sort needs a sort order"):
        optimize_table(spark, cfg, events, action="sort")
    bad_sort = replace(cfg, tables={events: replace(cfg.defaults, sort_order=("nope",))})
    with pytest.raises(UsageError, match="sort column 'nope'"):
        optimize_table(spark, bad_sort, events, action="sort")
    with pytest.raises(UsageError, match="tolerance must be >= 0"):
        optimize_table(spark, cfg, events, tolerance=-1)
    assert _snapshot(catalog, events) == snap


def test_partition_selector_rewrites_only_that_partition(spark, cfg, events):
    before = {
        r.file_path: r.partition.day
        for r in spark.sql(
            f"SELECT file_path, partition FROM lake.`{events.split('.')[0]}`.events.files"
        ).collect()
    }
    report = optimize_table(spark, cfg, events, partitions=["day=d1"])
    assert [p.key for p in report.partitions] == [part(day="d1")]
    assert report.partitions_rewritten == 1
    after = {
        r.file_path
        for r in spark.sql(
            f"SELECT file_path FROM lake.`{events.split('.')[0]}`.events.files"
        ).collect()
    }
    assert {p for p, day in before.items() if day == "d0"} <= after
    assert not {p for p, day in before.items() if day == "d1"} & after
    assert spark.table(f"lake.`{events.split('.')[0]}`.events").count() == 120


def test_partition_value_with_a_slash(spark, cfg, namespace):
    """``/`` separates fields in a selector; a value's own ``/`` is taken as it is (keys
    are typed: nothing is escaped)."""
    ident = create(spark, namespace, "paths")
    fq = f"lake.`{namespace}`.paths"
    for i in range(3):
        spark.sql(f"INSERT INTO {fq} VALUES ({i}, 'a/b', 'x'), ({i + 10}, 'a', 'y')")
    plan = plan_table(load_table(load_catalog(cfg), ident), 16000, 0)
    assert sorted(p.key for p in plan.partitions) == sorted([part(day="a"), part(day="a/b")])
    report = optimize_table(spark, cfg, ident, partitions=["day=a/b"], dry_run=True)
    assert [p.key for p in report.partitions] == [part(day="a/b")]
    with pytest.raises(UsageError, match="no partition"):  # a value is never unescaped
        optimize_table(spark, cfg, ident, partitions=["day=a%2Fb"], dry_run=True)
    report = optimize_table(spark, cfg, ident, partitions=["day=a/b"])
    assert report.partitions_rewritten == 1
    assert spark.table(fq).filter("day = 'a/b'").count() == 3
    assert spark.table(fq).count() == 6


def test_empty_and_unpartitioned_tables(spark, cfg, catalog, namespace):
    empty = create(spark, namespace, "empty", partitioned=False)
    report = optimize_table(spark, cfg, empty)
    assert report.partitions_scanned == 0 and report.snapshot_ids == ()
    assert report.start_snapshot_id is None
    assert _snapshot(catalog, empty) is None
    with pytest.raises(UsageError, match="is unpartitioned: --partition does not apply"):
        optimize_table(spark, cfg, empty, partitions=["day=d0"])


@pytest.mark.parametrize("engine", ["auto", "spark"])
def test_missing_data_file_fails_cleanly_and_commits_nothing(
    spark, cfg, catalog, namespace, engine
):
    """Nothing looks for the planned files before the write: the failed read (Arrow's,
    then Spark's, or Spark's alone) is explained in one line, and nothing is left."""
    events = create(spark, namespace, f"missing_{engine}", inserts=3)
    cfg = with_engine(cfg, engine)
    snap = _snapshot(catalog, events)
    table = load_table(catalog, events)
    victim = table.inspect.files().to_pylist()[0]["file_path"]
    Path(victim.removeprefix("file:")).unlink()
    files = sorted(p.name for p in Path(victim.removeprefix("file:")).parents[1].rglob("*"))
    with pytest.raises(OperationFailed, match="missing on storage; nothing was rewritten"):
        optimize_table(spark, cfg, events)
    assert _snapshot(catalog, events) == snap
    assert sorted(p.name for p in Path(victim.removeprefix("file:")).parents[1].rglob("*")) == files


# ------------------------------------------------------------------------------ CLI


@pytest.fixture
def config_file(cfg: Any, tmp_path: Path) -> str:
    path = tmp_path / "icefloe.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "catalog": {
                    "name": cfg.catalog.name,
                    "type": cfg.catalog.type,
                    "uri": cfg.catalog.uri,
                    "warehouse": cfg.catalog.warehouse,
                },
                "redis": {"url": cfg.redis.url, "key_prefix": cfg.redis.key_prefix},
                "spark": {"master": cfg.spark.master, "conf": dict(cfg.spark.conf)},
                "defaults": {
                    "target_file_size_bytes": cfg.defaults.target_file_size_bytes,
                    "tolerance_bytes": cfg.defaults.tolerance_bytes,
                    "min_input_files": cfg.defaults.min_input_files,
                },
            }
        )
    )
    return str(path)


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_info:
        cli_main(argv)
    out = capsys.readouterr()
    return int(exit_info.value.code or 0), out.out, out.err


def test_cli_plan_and_dry_run_write_nothing(spark, catalog, events, config_file, capsys):
    snap = _snapshot(catalog, events)
    code, out, err = run_cli(["--config", config_file, "plan", events, "--json"], capsys)
    assert code == 0, err
    plan = json.loads(out)
    assert plan["snapshot_id"] == snap and plan["target_file_size_bytes"] == 16000
    d0 = next(p for p in plan["partitions"] if p["partition"] == "day=d0")
    assert d0["files"] == 3 and d0["groups"] and all(g for g in d0["groups"])
    assert d0["predicted_mse_after"] < d0["mse"]
    code, out, err = run_cli(["--config", config_file, "plan", events], capsys)
    assert code == 0 and "day=d0" in out
    # The table's own sort order wins for --action sort (it is metadata, not a write).
    ns, name = events.split(".")
    spark.sql(f"ALTER TABLE lake.`{ns}`.`{name}` WRITE ORDERED BY v")
    snap = _snapshot(catalog, events)
    code, out, err = run_cli(
        ["--config", config_file, "plan", events, "--action", "sort", "--json"], capsys
    )
    assert code == 0, err
    assert json.loads(out)["sort_columns"] == ["v"]
    code, out, err = run_cli(
        ["--config", config_file, "optimize", events, "--dry-run", "--json"], capsys
    )
    assert code == 0, err
    report = json.loads(out)
    assert report["dry_run"] and report["snapshot_ids"] == []
    assert report["files_rewritten"] == sum(len(g) for p in plan["partitions"] for g in p["groups"])
    assert _snapshot(catalog, events) == snap


def test_cli_bad_input_is_one_line_and_an_exit_code(events, config_file, capsys):
    code, out, err = run_cli(
        ["--config", config_file, "optimize", events, "--partition", "nope=1"], capsys
    )
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("icefloe: error: column 'nope'")
    code, out, err = run_cli(["--config", config_file, "plan", "ns.missing"], capsys)
    assert code == 1 and "not found" in err and err.count("\n") == 1
    code, out, err = run_cli(["--config", config_file, "plan", "bad-name"], capsys)
    assert code == 2 and "bad table identifier" in err


def test_actor_optimize_entry_point(spark, catalog, events, config_file, capsys):
    snap = _snapshot(catalog, events)
    assert actor_optimize.main([events, "--dry-run", "--json", "--config", config_file]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["table"] == events and report["dry_run"]
    assert actor_optimize.main([events, "--partition", "x=1", "--config", config_file]) == 2
    assert "is not a partition field" in capsys.readouterr().err
    assert _snapshot(catalog, events) == snap


def test_cli_optimizes_several_tables_and_all_managed_ones_in_one_call(
    spark, catalog, namespace, config_file, capsys
):
    """``optimize T1 T2`` and ``optimize --all`` (the managed namespace's tables): one
    report per table, each table rewritten once; usage errors before any work."""
    first, second = (create(spark, namespace, n, inserts=3) for n in ("a", "b"))
    rows = {t: spark.table(f"lake.{t}").count() for t in (first, second)}
    code, out, err = run_cli(
        ["--config", config_file, "optimize", first, second, first, "--json"], capsys
    )
    assert code == 0, err
    result = json.loads(out)
    assert [r["table"] for r in result["tables"]] == [first, second] and not result["failed"]
    assert all(r["partitions_rewritten"] == 2 for r in result["tables"])
    for table in (first, second):
        assert load_table(catalog, table).current_snapshot().summary.operation.value == "replace"
        assert spark.table(f"lake.{table}").count() == rows[table]

    third = create(spark, namespace, "c", inserts=2)
    managed = Path(config_file).read_text() + f"managed:\n  namespaces: [{namespace}]\n"
    Path(config_file).write_text(managed)
    code, out, err = run_cli(["--config", config_file, "optimize", "--all", "--json"], capsys)
    assert code == 0, err
    result = json.loads(out)
    by_table = {r["table"]: r for r in result["tables"]}
    assert set(by_table) == {first, second, third}
    assert by_table[third]["partitions_rewritten"] == 2
    assert by_table[first]["partitions_rewritten"] == 0  # nothing left to do

    for argv, message in (
        ([], "name one or more TABLEs, or --all"),
        ([first, "--all"], "name one or more TABLEs, or --all"),
        ([first, second, "--partition", "day=d0"], "--partition needs exactly one TABLE"),
        ([first, f"{namespace}.missing"], "not found"),
    ):
        snap = _snapshot(catalog, first)
        code, out, err = run_cli(["--config", config_file, "optimize", *argv], capsys)
        # one line of error; the progress lines of the tables that ran (not a terminal)
        lines = [line for line in err.splitlines() if not line.startswith("optimize: ")]
        assert code in (1, 2) and message in err and len(lines) == 1, (argv, err)
        assert _snapshot(catalog, first) == snap
