"""Skew detection end to end: DataFrames, Iceberg tables, stored reports, CLI and entries."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
import yaml
from chispa import assert_df_equality
from click.testing import CliRunner

from icefloe.app.cli import cli
from icefloe.app.scripts import salted_join as salted_join_script
from icefloe.app.scripts import skew_detect as skew_detect_script
from icefloe.base.catalog import spark_table_name
from icefloe.base.config import Config
from icefloe.base.errors import UsageError
from icefloe.jobs.skew import detect as skew_detect
from icefloe.jobs.skew.hot_keys import detect_hot_keys, partition_skew
from icefloe.jobs.skew.join_job import JoinJob, build_command_args, run
from icefloe.optimizer.skew_stats import HotKeyRules

pytestmark = [pytest.mark.spark, pytest.mark.integration]

PLANTED = {7: 0.30, 13: 0.10, 21: 0.05}


def _keys(n: int, seed: int, planted: dict[int, float]) -> list[tuple[int | None, int]]:
    rnd = random.Random(seed)
    rows = []
    for i in range(n):
        x, acc, key = rnd.random(), 0.0, None
        for k, share in planted.items():
            acc += share
            if x < acc:
                key = k
                break
        if key is None:
            key = None if rnd.random() < 0.03 else 100 + rnd.randrange(400)
        rows.append((key, i))
    return rows


@pytest.fixture(scope="module")
def keyed(spark: Any) -> Any:
    return spark.createDataFrame(_keys(4000, 3, PLANTED), "k int, v int").cache()


@pytest.mark.parametrize("method", ["exact", "sample"])
def test_planted_hot_keys_are_found(keyed: Any, method: str) -> None:
    report = detect_hot_keys(keyed, "k", method=method, sample_rows=1500, with_metrics=True)
    assert {h.key for h in report.hot} == set(PLANTED)
    assert report.method == method and report.rows == 4000
    assert [h.key for h in report.hot] == [7, 13, 21]
    assert report.hot[0].rows == keyed.filter("k = 7").count()  # exact, even when sampled


def test_uniform_keys_are_not_flagged(spark: Any) -> None:
    uniform = spark.range(4000).selectExpr("id % 50 as k", "id as v")
    assert detect_hot_keys(uniform, "k", HotKeyRules(min_share=0.01)).hot == ()
    many = spark.range(4000).selectExpr("id % 997 as k")
    assert detect_hot_keys(many, "k", method="sample", sample_rows=1000).hot == ()


def test_partition_skew_of_a_dataframe(keyed: Any) -> None:
    skew = partition_skew(keyed.repartition(8, "k"))
    assert sum(skew.rows) == 4000 and len(skew.rows) == 8
    assert skew.metrics.max_over_median > 1.5
    even = partition_skew(keyed.repartition(8))
    assert even.outliers == () and even.metrics.max_over_median < 1.2


def _write_config(cfg: Config, path: Path) -> str:
    raw = {
        "catalog": {
            "name": cfg.catalog.name,
            "type": cfg.catalog.type,
            "uri": cfg.catalog.uri,
            "warehouse": cfg.catalog.warehouse,
        },
        "redis": {"url": cfg.redis.url, "key_prefix": cfg.redis.key_prefix},
        "spark": {"master": cfg.spark.master, "conf": dict(cfg.spark.conf)},
        "defaults": {"target_file_size_bytes": 1 << 20, "tolerance_bytes": 0},
    }
    path.write_text(yaml.safe_dump(raw))
    return str(path)


@pytest.fixture(scope="module")
def tables(spark: Any, cfg: Config, catalog: Any) -> dict[str, str]:
    ns = f"skew_{random.Random().randrange(10**9)}"
    catalog.create_namespace(ns)
    facts, dims = f"{ns}.facts", f"{ns}.dims"
    spark.sql(
        f"CREATE TABLE {spark_table_name(cfg, facts)} (k INT, v INT, p STRING) "
        "USING iceberg PARTITIONED BY (p)"
    )
    rows = [(k, v, "big" if v % 3 else f"p{v % 10}") for k, v in _keys(3000, 5, PLANTED)]
    spark.createDataFrame(rows, "k int, v int, p string").writeTo(
        spark_table_name(cfg, facts)
    ).append()
    spark.createDataFrame(
        [(k % 600, k) for k in range(1200)] + [(7, -1)] * 5, "k int, w int"
    ).writeTo(spark_table_name(cfg, dims)).create()
    return {"ns": ns, "facts": facts, "dims": dims}


def test_table_report_is_computed_stored_and_reused(
    spark: Any, cfg: Config, catalog: Any, tables: dict[str, str]
) -> None:
    ns = tables["ns"]
    report = skew_detect.detect_table(
        spark, cfg, catalog, tables["facts"], ["k"], tables["dims"], "k", reports_namespace=ns
    )
    assert report["rows"] == 3000 and not report["cached"]
    assert [p["partition"] for p in report["skewed_partitions"]] == ["p=big"]
    big = report["skewed_partitions"][0]
    assert big["rows"] == 2000 and big["files"] >= 1 and big["bytes"] > 0
    hot = report["keys"]["k"]["hot_keys"]
    assert [h["key"] for h in hot] == [7, 13, 21]
    join = report["keys"]["k"]["join"]
    seven = join["hot_keys"][0]
    assert seven["other_rows"] == 7 and seven["output_rows"] == 7 * hot[0]["rows"]
    again = skew_detect.detect_table(
        spark, cfg, catalog, tables["facts"], ["k"], tables["dims"], "k", reports_namespace=ns
    )
    assert again["cached"] and again["keys"] == report["keys"]
    assert skew_detect.stored_hot_keys(catalog, tables["facts"], "k", ns) == [7, 13, 21]
    # no report (no reports namespace at all) is "unknown", not an error
    assert skew_detect.stored_hot_keys(catalog, tables["facts"], "k", "no_such_ns") is None


def test_cli_json_and_errors(cfg: Config, tables: dict[str, str], tmp_path: Path) -> None:
    conf = _write_config(cfg, tmp_path / "icefloe.yaml")
    runner = CliRunner()
    args = [
        "--config",
        conf,
        "skew",
        "detect",
        tables["facts"],
        "--key",
        "k",
        "--reports-namespace",
        tables["ns"],
    ]
    out = runner.invoke(cli, [*args, "--json"], standalone_mode=False)
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["table"] == tables["facts"] and data["rows"] == 3000
    assert {"key", "rows", "share"} <= set(data["keys"]["k"]["hot_keys"][0])
    assert {"partition", "bytes", "rows", "files"} <= set(data["skewed_partitions"][0])
    assert "partition_bytes" in data["metrics"]
    text = runner.invoke(cli, args, standalone_mode=False)
    assert "p=big" in text.output and "7" in text.output


@pytest.mark.parametrize(
    ("extra", "code", "message"),
    [
        (["not-a-table", "--key", "k"], 2, "bad table identifier"),
        (["db.missing", "--key", "k"], 1, "not found"),
        (["{facts}", "--key", "nope"], 2, "'nope' not found"),
        (["{facts}", "--key", "k", "--join-with", "{dims}"], 2, "go together"),
    ],
)
def test_cli_bad_input_is_one_line(
    cfg: Config,
    tables: dict[str, str],
    tmp_path: Path,
    extra: list[str],
    code: int,
    message: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from icefloe.app.cli import main

    conf = _write_config(cfg, tmp_path / "icefloe.yaml")
    argv = ["--config", conf, "skew", "detect", *[a.format(**tables) for a in extra]]
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    err = capsys.readouterr().err.strip()
    assert exit_info.value.code == code
    assert message in err and len(err.splitlines()) == 1


def test_submit_entries_detect_then_salted_join(
    spark: Any,
    cfg: Config,
    tables: dict[str, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    conf = _write_config(cfg, tmp_path / "icefloe.yaml")
    assert (
        skew_detect_script.main(
            [tables["facts"], "--key", "k", "--min-share", "0.01", "--json", "--config", conf]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["keys"]["k"]["hot_keys"][0]["key"] == 7
    out = f"{tables['ns']}.joined"
    argv = build_command_args(tables["facts"], tables["dims"], ["k"], "left", out)
    assert argv == [
        tables["facts"],
        tables["dims"],
        "--on",
        "k",
        "--how",
        "left",
        "--into",
        out,
        "--mode",
        "create",
    ]
    assert (
        salted_join_script.main(
            [*argv, "--reuse-reports", "--reports-namespace", "icefloe", "--json", "--config", conf]
        )
        == 0
    )
    result = json.loads(capsys.readouterr().out)
    assert result["hot_keys_from_reports"], result  # 4 partitions: guardrail may say plain
    written = spark.table(spark_table_name(cfg, out))
    plain = spark.table(spark_table_name(cfg, tables["facts"])).join(
        spark.table(spark_table_name(cfg, tables["dims"])), on="k", how="left"
    )
    assert_df_equality(written, plain, ignore_row_order=True, ignore_nullable=True)
    assert salted_join_script.main([*argv, "--config", conf]) == 2  # exists, mode create


@pytest.mark.parametrize("how", ["inner", "full", "left_semi"])
def test_a_self_join_suffixes_the_shared_columns_and_equals_the_plain_join(
    spark: Any, cfg: Config, catalog: Any, tables: dict[str, str], how: str
) -> None:
    """#61.11: both sides share every non-key column (a self-join): the job names them
    ``<col>_left`` and ``<col>_right`` (pandas' merge with those suffixes) instead of
    failing with Spark's COLUMN_ALREADY_EXISTS; the table written equals the plain join."""
    facts = tables["facts"]
    out = f"{tables['ns']}.self_{how}"
    result = run(spark, cfg, catalog, JoinJob(facts, facts, ("k",), out, how))
    written = spark.table(spark_table_name(cfg, out))
    fq = spark_table_name(cfg, facts)
    if how == "left_semi":  # the left side's columns only: nothing to tell apart
        plain = spark.sql(f"SELECT * FROM {fq} l LEFT SEMI JOIN {fq} r USING (k)")
    else:
        plain = spark.sql(
            f"SELECT k, l.v AS v_left, l.p AS p_left, r.v AS v_right, r.p AS p_right "
            f"FROM {fq} l {how.upper()} JOIN {fq} r USING (k)"
        )
    assert written.columns == plain.columns
    assert_df_equality(written, plain, ignore_row_order=True, ignore_nullable=True)
    assert result["into"] == out


def test_a_suffixed_name_taken_already_is_refused_in_one_line(
    spark: Any, cfg: Config, catalog: Any, tables: dict[str, str]
) -> None:
    ns = tables["ns"]
    taken = f"{ns}.taken"
    spark.sql(
        f"CREATE TABLE {spark_table_name(cfg, taken)} (k INT, v INT, V_LEFT INT) USING iceberg"
    )
    job = JoinJob(taken, tables["facts"], ("k",), f"{ns}.never")
    with pytest.raises(UsageError) as e:
        run(spark, cfg, catalog, job)
    assert str(e.value) == (
        "both sides have column v, and its suffixed name v_left is a column already: "
        "rename one of them (--right-sql 'SELECT ..., v AS ... FROM ...')"
    )
    assert not spark.catalog.tableExists(spark_table_name(cfg, f"{ns}.never").replace("`", ""))
