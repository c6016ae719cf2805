"""Layout actions end to end on real Spark + Iceberg: a sort re-sorts only the files that
overlap (the minimum replacement by clustering depth), keeps every row, leaves nothing to
do after, and commits nothing when a re-sort cannot lower the depth."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
import yaml
from chispa import assert_df_equality
from click.testing import CliRunner

from icefloe.app.cli import cli
from icefloe.app.cli import main as cli_main
from icefloe.jobs.base.plan import load_and_plan
from icefloe.jobs.data.optimize import optimize_table
from icefloe.optimizer import FileBounds, clustering_depth
from tests.integration.test_actors import contents, current_operation, ecfg, engine_of, fq

pytestmark = [pytest.mark.integration, pytest.mark.spark]

__all__ = ["ecfg"]  # the engine-parametrized config fixture, shared with test_actors

TARGET = 16000
DAYS = ("d0", "d1", "d2", "d3")


def append(
    spark: Any, ident: str, days: str | tuple[str, ...], lo: int, hi: int, key: str = "id"
) -> None:
    """Ids ``lo..hi`` of each of ``days``: one commit, one new data file per day."""
    days = (days,) if isinstance(days, str) else days
    (
        spark.range(lo, hi)
        .crossJoin(spark.createDataFrame([(d,) for d in days], "day string"))
        .selectExpr(f"{key} as id", "day", "sha2(cast(id as string), 256) as v")
        .coalesce(1)
        .sortWithinPartitions("day")  # one task writes each day's file in turn
        .writeTo(fq(ident))
        .append()
    )


def sorted_table(spark: Any, namespace: str, key: str = "id") -> str:
    """Four partitions of four files each, written in order: ids 0-99, 100-199, ..."""
    ident = f"{namespace}.events"
    spark.sql(
        f"CREATE TABLE {fq(ident)} (id BIGINT, day STRING, v STRING) USING iceberg "
        f"PARTITIONED BY (day) TBLPROPERTIES ('write.target-file-size-bytes'='{TARGET}', "
        "'write.distribution-mode'='none')"
    )
    spark.sql(f"ALTER TABLE {fq(ident)} WRITE ORDERED BY id")
    for k in range(4):
        append(spark, ident, DAYS, 100 * k, 100 * k + 100, key)
    return ident


def layout_cfg(cfg: Any, ident: str, tolerance: float = 1.25) -> Any:
    """Sorts by clustering depth only: the merge's own tolerance never triggers."""
    policy = replace(
        cfg.defaults,
        actions=("merge", "sort"),
        clustering_tolerance=tolerance,
        tolerance_bytes=TARGET,
        target_file_size_bytes=TARGET,
    )
    return replace(cfg, tables={ident: policy})


def files_of(spark: Any, ident: str, day: str) -> dict[str, tuple[int, int]]:
    """Each data file of ``day``: its id bounds."""
    rows = spark.sql(
        f"SELECT file_path, readable_metrics.id.lower_bound AS lo, "
        f"readable_metrics.id.upper_bound AS hi FROM {fq(ident)}.files "
        f"WHERE partition.day = '{day}'"
    ).collect()
    return {r.file_path: (r.lo, r.hi) for r in rows}


def depth(files: dict[str, tuple[int, int]]) -> float:
    return clustering_depth([FileBounds(p, 1, (lo,), (hi,)) for p, (lo, hi) in files.items()]).mean


def test_sort_rewrites_only_the_files_an_out_of_order_append_overlaps(
    spark, ecfg, catalog, namespace
):
    ident = sorted_table(spark, namespace)
    before_files = files_of(spark, ident, "d2")
    append(spark, ident, "d2", 150, 250)  # overlaps the files of 100-199 and 200-299
    cfg = layout_cfg(ecfg, ident)
    planned = load_and_plan(cfg, catalog, ident, "sort")
    work = {p.key: p for p in planned.plan.partitions if p.groups}
    assert len(work) == 1, "only the partition with the out-of-order file is re-sorted"
    (p,) = work.values()
    assert p.layout and p.depth_before is not None and p.depth_before.mean == pytest.approx(1.6)
    chosen = {path for g in p.groups for path in g.paths}
    overlapped = {path for path, (lo, hi) in before_files.items() if lo <= 249 and hi >= 150}
    assert len(overlapped) == 2 and chosen - overlapped == set(files_of(spark, ident, "d2")) - set(
        before_files
    )
    kept = set(before_files) - overlapped

    before = contents(spark, ident)
    report = optimize_table(spark, cfg, ident, action="sort")
    assert report.partitions_rewritten == 1
    assert {r.engine for r in report.partitions if r.status == "rewritten"} == {engine_of(ecfg)}
    assert_df_equality(contents(spark, ident), before, ignore_row_order=True)
    assert current_operation(catalog, ident) == "replace"
    after = files_of(spark, ident, "d2")
    assert kept <= set(after) and not (chosen & set(after))
    assert depth(after) == 1.0  # sorted, non-overlapping files
    assert all(depth(files_of(spark, ident, d)) == 1.0 for d in DAYS)

    again = load_and_plan(cfg, catalog, ident, "sort")
    assert not again.plan.work, "no churn: a second pass finds nothing to re-sort"


def test_a_resort_that_cannot_lower_the_depth_commits_nothing(spark, cfg, catalog, namespace):
    """Every file holds the one key value: no sort can separate them."""
    ident = sorted_table(spark, namespace, key="7")
    layout = layout_cfg(cfg, ident)
    first = optimize_table(spark, layout, ident, action="sort")  # fewer files: shallower
    assert first.partitions_rewritten == len(DAYS)
    # The one key compresses well: two outputs of half a target each, which now fit one.
    second = optimize_table(spark, layout, ident, action="sort")
    assert all(p.files_added == 1 for p in second.partitions if p.status == "rewritten")
    snapshot = catalog.load_table(ident).current_snapshot().snapshot_id
    report = optimize_table(spark, layout, ident, action="sort")
    assert report.partitions_rewritten == 0
    skipped = [p for p in report.partitions if p.status == "skipped"]
    assert skipped and all("depth" in p.reason for p in skipped)
    assert catalog.load_table(ident).current_snapshot().snapshot_id == snapshot


def test_delete_compaction_keeps_the_declared_write_order(spark, cfg, catalog, namespace):
    """A table sorted by its own write order (none in the policy) compacts its deletes with
    a sort, in key order, as the decider's merges do (one rule: ``rewrite_action``)."""
    ident = sorted_table(spark, namespace)
    layout = layout_cfg(cfg, ident)
    policy = replace(
        layout.tables[ident], actions=("merge", "sort", "compact_deletes"), sort_order=()
    )
    planned = load_and_plan(
        replace(layout, tables={ident: policy}), catalog, ident, "compact_deletes"
    )
    assert (planned.action, planned.deletes) == ("sort", True)
    assert planned.layout is not None and planned.layout.columns == ("id",)
    merged = replace(policy, actions=("merge", "compact_deletes"))
    plain = load_and_plan(
        replace(layout, tables={ident: merged}), catalog, ident, "compact_deletes"
    )
    assert (plain.action, plain.layout) == ("merge", None)


def zorder_table(spark: Any, namespace: str) -> str:
    """Two partitions of four files, each file one block of z-space (x in its own aligned
    window of 1024, y under 1024), written in order."""
    ident = f"{namespace}.points"
    spark.sql(
        f"CREATE TABLE {fq(ident)} (x BIGINT, y BIGINT, day STRING, v STRING) USING iceberg "
        f"PARTITIONED BY (day) TBLPROPERTIES ('write.target-file-size-bytes'='{TARGET}', "
        "'write.distribution-mode'='none')"
    )
    for k in range(4):
        zappend(spark, ident, DAYS[:2], k)
    return ident


def zappend(
    spark: Any, ident: str, days: str | tuple[str, ...], window: int, seed: int = 0
) -> None:
    days = (days,) if isinstance(days, str) else days
    (
        spark.range(0, 150)
        .crossJoin(spark.createDataFrame([(d,) for d in days], "day string"))
        .selectExpr(
            f"{window * 1024} + (id * 7 + {seed}) % 1024 AS x",
            f"(id * 13 + {seed}) % 1024 AS y",
            "day",
            "sha2(cast(id AS string), 256) AS v",
        )
        .coalesce(1)
        .sortWithinPartitions("day")
        .writeTo(fq(ident))
        .append()
    )


def test_zorder_rewrites_the_block_a_late_file_lands_in(spark, ecfg, catalog, namespace):
    ident = zorder_table(spark, namespace)
    zappend(spark, ident, "d1", 1, seed=5)  # late rows in the second block of d1
    policy = replace(
        layout_cfg(ecfg, ident, tolerance=1.1).tables[ident],
        actions=("merge", "zorder"),
        zorder=("x", "y"),
    )
    cfg = replace(ecfg, tables={ident: policy})
    planned = load_and_plan(cfg, catalog, ident, "zorder")
    work = [p for p in planned.plan.partitions if p.groups]
    assert len(work) == 1 and work[0].layout and planned.zorder_columns == ("x", "y")
    assert sum(len(g.paths) for g in work[0].groups) == 2  # the late file and its block's
    before = contents(spark, ident)
    report = optimize_table(spark, cfg, ident, action="zorder")
    assert report.partitions_rewritten == 1
    assert {r.engine for r in report.partitions if r.status == "rewritten"} == {engine_of(ecfg)}
    assert_df_equality(contents(spark, ident), before, ignore_row_order=True)
    after = load_and_plan(cfg, catalog, ident, "zorder")
    assert not after.plan.work, "no churn: the z-ordered block is within tolerance"
    depths = [p.depth_before.mean for p in after.plan.partitions if p.depth_before is not None]
    assert len(depths) == 2 and max(depths) <= 1.1  # x blocks, y all over: what z-order makes


def test_plan_and_tables_show_clustering_depth_from_a_users_config(
    spark, cfg, catalog, namespace, tmp_path, capsys
):
    """What a user writes: the sort action and a clustering tolerance for one table."""
    ident = sorted_table(spark, namespace)
    append(spark, ident, "d2", 150, 250)
    conf = tmp_path / "icefloe.yaml"
    policy = {"actions": ["merge", "sort"], "clustering_tolerance": 1.25}
    conf.write_text(
        yaml.safe_dump(
            {
                "catalog": {"uri": cfg.catalog.uri, "warehouse": cfg.catalog.warehouse},
                "managed": {"tables": [ident]},
                "tables": {ident: policy},
            }
        )
    )
    plan = invoke(conf, "plan", ident, "--action", "sort", "--json")
    assert plan["sort_columns"] == ["id"] and plan["clustering_tolerance"] == 1.25
    assert plan["sort_order"] == ["id ASC NULLS FIRST"] and plan["sort_order_id"] == 1
    by_day = {p["partition"]: p for p in plan["partitions"]}
    assert by_day["day=d2"]["depth"] == {"mean": 1.6, "max": 2}
    assert by_day["day=d2"]["relayout"] and by_day["day=d2"]["predicted_depth_after"]["mean"] == 1
    assert [d for d, p in by_day.items() if p["relayout"]] == ["day=d2"]  # the rest merge
    # the run's shared history table is managed too, once an earlier test's actor made it
    (row,) = [r for r in invoke(conf, "tables", "--fresh", "--json") if r["table"] == ident]
    assert row["clustering"]["partitions_over"] == 1 and row["clustering"]["max_depth"] == 2
    assert row["clustering"]["columns"] == ["id"] and row["clustering"]["action"] == "sort"
    with pytest.raises(SystemExit) as bad:
        cli_main(["--config", str(conf), "plan", ident, "--action", "zorder"])
    err = capsys.readouterr().err
    assert bad.value.code == 2 and err.count("\n") == 1 and "zorder needs two or more" in err


def invoke(conf: Any, *args: str) -> Any:
    result = CliRunner().invoke(cli, ["--config", str(conf), *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)
