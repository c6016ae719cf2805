"""The actors end to end on real Spark + Iceberg tables: every kind of rewrite keeps the
table's contents exactly (chispa, row order ignored) and commits one ``replace`` per
partition; concurrent appends survive, concurrent deletes of replaced files re-plan."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from chispa import assert_df_equality
from pyspark.sql import functions as F

from icefloe.base.catalog import load_table
from icefloe.base.errors import OperationFailed
from icefloe.jobs.base.verify import Checksum, checksums_by_key
from icefloe.jobs.data.optimize import optimize_table
from icefloe.jobs.rewrite import exact as rewrite_mod
from icefloe.jobs.rewrite.arrow_driver import ArrowDriver
from icefloe.jobs.rewrite.file_bytes import Footer
from icefloe.jobs.rewrite.new_files import NewFiles
from icefloe.jobs.rewrite.spark_engine import LISTING_THRESHOLD
from tests.support.config import part, with_engine

pytestmark = [pytest.mark.integration, pytest.mark.spark]

PROPS = (
    "'format-version'='2', 'write.target-file-size-bytes'='16000', "
    "'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read', "
    "'write.distribution-mode'='none'"
)


def make_table(
    spark: Any,
    namespace: str,
    name: str = "events",
    partitioned: bool = True,
    inserts: int = 6,
    rows: int = 40,
    props: str = PROPS,
) -> str:
    """One INSERT of ``inserts`` Spark tasks -> ``inserts`` small files (~3 KB) per partition.

    Hex digests barely compress, so file sizes add up roughly like the planner assumes.
    """
    fq = f"lake.`{namespace}`.`{name}`"
    part = "PARTITIONED BY (day)" if partitioned else ""
    spark.sql(
        f"CREATE TABLE {fq} (id BIGINT, day STRING, v STRING, amount DOUBLE) "
        f"USING iceberg {part} TBLPROPERTIES ({props})"
    )
    insert(spark, fq, 0, inserts * rows, files=inserts)
    return f"{namespace}.{name}"


def insert(spark: Any, fq: str, start: int, stop: int, files: int = 1) -> None:
    """Rows ``start..stop``; ``files`` tasks, each writing one file per partition."""
    spark.sql(
        f"INSERT INTO {fq} SELECT /*+ REPARTITION({files}) */ id, concat('d', id % 2), "
        "CASE WHEN id % 7 = 0 THEN NULL ELSE sha2(cast(id AS STRING), 256) END, id * 1.5 "
        f"FROM range({start}, {stop})"
    )


def snapshot_table(spark: Any, ident: str) -> Any:
    ns, name = ident.split(".")
    return spark.createDataFrame(
        spark.table(f"lake.`{ns}`.`{name}`").collect(), spark.table(f"lake.`{ns}`.`{name}`").schema
    )


def contents(spark: Any, ident: str) -> Any:
    ns, name = ident.split(".")
    return spark.table(f"lake.`{ns}`.`{name}`")


def data_files(spark: Any, ident: str) -> list[Any]:
    ns, name = ident.split(".")
    return spark.sql(
        f"SELECT file_path, partition, file_size_in_bytes, content FROM lake.`{ns}`.`{name}`.files"
    ).collect()


def rewrite_at_current(
    spark: Any, cfg: Any, namespace: str, name: str, inserts: int = 2
) -> tuple[str, Any]:
    """A new table (see :func:`make_table`) and an ``ExactRewrite`` at its snapshot; the
    caller closes it."""
    from icefloe.base.catalog import spark_table_name

    ident = make_table(spark, namespace, name, inserts=inserts)
    spark_name = spark_table_name(cfg, ident)
    snapshot = spark.sql(f"SELECT snapshot_id FROM {spark_name}.snapshots").first()[0]
    return ident, rewrite_mod.ExactRewrite(spark, spark_name, snapshot)


def current_operation(catalog: Any, ident: str) -> str:
    snap = load_table(catalog, ident).current_snapshot()
    return str(snap.summary.operation.value)


def fq(ident: str) -> str:
    ns, name = ident.split(".")
    return f"lake.`{ns}`.`{name}`"


@pytest.fixture(params=["auto", "spark"])
def ecfg(request: pytest.FixtureRequest, cfg: Any) -> Any:
    """The config with each data engine: ``auto`` (Arrow for plain Parquet groups) and
    ``spark`` (Spark's Iceberg writer only)."""
    return with_engine(cfg, request.param)


def engine_of(cfg: Any) -> str:
    """The engine a plain Parquet group (no deletes) is written with under ``cfg``."""
    return "arrow" if cfg.defaults.engine == "auto" else "spark"


def test_merge_rewrites_planned_files_in_one_replace(spark, ecfg, catalog, namespace):
    ident = make_table(spark, namespace, inserts=4)
    before = snapshot_table(spark, ident)
    files_before = data_files(spark, ident)
    report = optimize_table(spark, ecfg, ident, action="merge")
    assert_df_equality(contents(spark, ident), before, ignore_row_order=True)
    assert report.partitions_scanned == 2
    assert report.partitions_rewritten == 2
    assert len(report.snapshot_ids) == 1  # both partitions in one commit
    assert {p.snapshot_id for p in report.partitions} == set(report.snapshot_ids)
    assert current_operation(catalog, ident) == "replace"
    files_after = data_files(spark, ident)
    assert len(files_after) < len(files_before)
    replaced = {r.file_path for r in files_before} - {r.file_path for r in files_after}
    added = {r.file_path for r in files_after} - {r.file_path for r in files_before}
    assert len(replaced) == report.files_rewritten
    assert len(added) == report.files_added
    assert report.rows_verified == before.count()
    assert report.expectations is not None and report.expectations["success"]
    for p in report.partitions:
        assert p.status == "rewritten" and p.engine == engine_of(ecfg) and not p.reason
        assert p.actual_mse_after is not None and p.actual_mse_after < p.mse_before
        assert p.prediction_error == p.actual_mse_after - p.predicted_mse_after
    assert report.to_dict()["partitions"][0]["partition"] in ("day=d0", "day=d1")
    # A second run finds nothing worth doing and commits nothing.
    again = optimize_table(spark, ecfg, ident)
    assert again.partitions_rewritten == 0 and again.snapshot_ids == ()


def test_arrow_groups_run_as_spark_tasks_on_a_cluster(spark, cfg, catalog, namespace):
    """What a cluster master does (Python tasks on the executors), forced on local[2]."""
    ident = make_table(spark, namespace, "tasks", inserts=4)
    before = snapshot_table(spark, ident)
    report = optimize_table(
        spark, cfg, ident, collaborators=rewrite_mod.Collaborators(arrow_in_driver=False)
    )
    assert report.partitions_rewritten == 2
    assert {p.engine for p in report.partitions} == {"arrow"}
    assert report.rows_verified == before.count()
    assert_df_equality(contents(spark, ident), before, ignore_row_order=True)
    assert current_operation(catalog, ident) == "replace"


def test_sort_writes_files_sorted_by_the_policy_sort_order(spark, ecfg, catalog, namespace):
    ident = make_table(spark, namespace, inserts=3)
    # clustering tolerance 1: nothing may overlap, so every file is rewritten sorted
    policy = replace(ecfg.defaults, sort_order=("v",), clustering_tolerance=1.0)
    sorted_ecfg = replace(ecfg, tables={ident: policy})
    before = snapshot_table(spark, ident)
    report = optimize_table(spark, sorted_ecfg, ident, action="sort")
    assert report.partitions_rewritten == 2
    assert {p.engine for p in report.partitions} == {engine_of(ecfg)}
    assert_df_equality(contents(spark, ident), before, ignore_row_order=True)
    assert current_operation(catalog, ident) == "replace"
    rows = spark.sql(f"SELECT _file, _pos, v FROM {fq(ident)}").collect()
    by_file: dict[str, list[tuple[int, Any]]] = {}
    for r in rows:
        by_file.setdefault(r._file, []).append((r._pos, r.v))
    assert len(by_file) == report.files_added  # every file is a new, sorted one
    for values in by_file.values():
        ordered = [v for _, v in sorted(values)]
        assert ordered == sorted(ordered, key=lambda x: (x is not None, x))


def test_position_deletes_are_applied_and_dangling_delete_files_removed(spark, ecfg, namespace):
    """Both engines apply position deletes (the Arrow engine reads the Parquet delete
    files itself): two delete files on some data files, every row of one file deleted."""
    ident = make_table(spark, namespace, inserts=3)
    spark.sql(f"DELETE FROM {fq(ident)} WHERE id % 5 = 0")
    spark.sql(f"DELETE FROM {fq(ident)} WHERE id % 7 = 0")  # a second delete file per file
    first = min(r.file_path for r in data_files(spark, ident) if r.content == 0)
    ids = [r.id for r in spark.sql(f"SELECT id FROM {fq(ident)} WHERE _file = '{first}'").collect()]
    spark.sql(f"DELETE FROM {fq(ident)} WHERE id IN ({', '.join(map(str, ids))})")  # all its rows
    deletes_before = [r for r in data_files(spark, ident) if r.content == 1]
    assert deletes_before, "merge-on-read DELETE should write position delete files"
    before = snapshot_table(spark, ident)
    report = optimize_table(spark, ecfg, ident)
    assert_df_equality(contents(spark, ident), before, ignore_row_order=True)
    assert report.delete_files_removed == len(deletes_before)
    assert {p.engine for p in report.partitions} == {engine_of(ecfg)}
    assert [r for r in data_files(spark, ident) if r.content == 1] == []
    assert report.rows_verified == before.count()


def test_evolved_spec_rewrites_current_spec_and_skips_older_files(spark, ecfg, namespace):
    ident = make_table(spark, namespace, inserts=2)
    spark.sql(f"ALTER TABLE {fq(ident)} ADD PARTITION FIELD bucket(2, id) AS b")
    insert(spark, fq(ident), 1000, 1120, files=3)
    before = snapshot_table(spark, ident)
    old_files = {
        r.file_path
        for r in spark.sql(f"SELECT file_path FROM {fq(ident)}.files WHERE spec_id = 0").collect()
    }
    report = optimize_table(spark, ecfg, ident)
    assert_df_equality(contents(spark, ident), before, ignore_row_order=True)
    old = [p for p in report.partitions if p.spec_id == 0]
    new = [p for p in report.partitions if p.spec_id == 1]
    assert old and all(p.status == "skipped" and "older partition spec" in p.reason for p in old)
    assert new and all(p.status == "rewritten" and p.engine == engine_of(ecfg) for p in new)
    assert old_files and old_files <= {r.file_path for r in data_files(spark, ident)}


def test_evolved_schema_reads_as_iceberg_reads_it(spark, ecfg, catalog, namespace):
    """Files written before a rename, an added column and a float -> double promotion are
    merged with files written after; every value reads back as Iceberg read it."""
    ident = make_table(spark, namespace, "evolved", inserts=2)
    spark.sql(f"ALTER TABLE {fq(ident)} ADD COLUMN ratio FLOAT")
    spark.sql(
        f"INSERT INTO {fq(ident)} SELECT id, concat('d', id % 2), 'x', 1.0, "
        f"CAST(id / 3 AS FLOAT) FROM range(200, 240)"
    )
    spark.sql(f"ALTER TABLE {fq(ident)} RENAME COLUMN v TO label")
    spark.sql(f"ALTER TABLE {fq(ident)} ALTER COLUMN ratio TYPE DOUBLE")
    spark.sql(f"ALTER TABLE {fq(ident)} ADD COLUMN note STRING")
    spark.sql(
        f"INSERT INTO {fq(ident)} SELECT id, concat('d', id % 2), 'y', 2.0, "
        f"id / 7, 'late' FROM range(300, 340)"
    )
    before = snapshot_table(spark, ident)
    report = optimize_table(spark, ecfg, ident)
    assert report.partitions_rewritten == 2
    assert {p.engine for p in report.partitions} == {engine_of(ecfg)}
    assert_df_equality(contents(spark, ident), before, ignore_row_order=True)


def test_every_column_type_survives_a_merge(spark, ecfg, catalog, namespace):
    """Decimals, timestamps (both flavours), dates, binary, booleans, NaN and -0.0,
    nulls, structs, lists and maps: the merged files read back equal."""
    name = f"lake.`{namespace}`.`types`"
    spark.sql(
        f"CREATE TABLE {name} (id BIGINT, day STRING, d DECIMAL(20, 4), ts TIMESTAMP, "
        f"tsn TIMESTAMP_NTZ, dt DATE, b BINARY, flag BOOLEAN, x DOUBLE, f FLOAT, "
        f"s STRUCT<a: INT, t: STRING>, l ARRAY<BIGINT>, m MAP<STRING, INT>) USING iceberg "
        f"PARTITIONED BY (day) TBLPROPERTIES ({PROPS})"
    )
    for start in range(0, 160, 40):
        spark.sql(
            f"INSERT INTO {name} SELECT id, concat('d', id % 2), "
            f"CAST(id * 1.25 AS DECIMAL(20, 4)), TIMESTAMP '2026-01-01 00:00:00' + "
            f"make_interval(0, 0, 0, 0, 0, 0, id), TIMESTAMP_NTZ '2026-01-01 00:00:00', "
            f"date_add(DATE '2026-01-01', CAST(id AS INT)), CAST(concat('b', id) AS BINARY), "
            f"id % 3 = 0, CASE WHEN id % 5 = 0 THEN double('NaN') WHEN id % 5 = 1 "
            f"THEN -0.0 ELSE id / 3 END, CAST(id AS FLOAT), "
            f"IF(id % 4 = 0, NULL, named_struct('a', CAST(id AS INT), 't', 'z')), "
            f"array(id, id + 1), map('k', CAST(id AS INT)) FROM range({start}, {start + 40})"
        )
    ident = f"{namespace}.types"
    before = snapshot_table(spark, ident)
    report = optimize_table(spark, ecfg, ident)
    assert report.partitions_rewritten == 2
    assert {p.engine for p in report.partitions} == {engine_of(ecfg)}

    def comparable(df: Any) -> Any:  # chispa sorts rows by every column; maps don't sort
        return df.withColumn("m", F.to_json("m"))

    assert_df_equality(
        comparable(contents(spark, ident)),
        comparable(before),
        ignore_row_order=True,
        allow_nan_equality=True,
    )


def test_unpartitioned_table(spark, ecfg, catalog, namespace):
    ident = make_table(spark, namespace, partitioned=False, inserts=4)
    before = snapshot_table(spark, ident)
    report = optimize_table(spark, ecfg, ident)
    assert [p.key for p in report.partitions] == ["[0,[]]"]  # spec 0, no field
    assert report.partitions_rewritten == 1
    assert report.partitions[0].engine == engine_of(ecfg)
    assert_df_equality(contents(spark, ident), before, ignore_row_order=True)
    assert current_operation(catalog, ident) == "replace"


def _before_commit(action: Any) -> tuple[list[int], rewrite_mod.Collaborators]:
    """Collaborators that run ``action`` once, just before the first commit of the
    rewrite, and count the commits in the list."""
    calls: list[int] = []

    def before_commit(rewrite: Any, results: Any) -> None:
        if not calls:
            action(rewrite, results)
        calls.append(1)

    return calls, rewrite_mod.Collaborators(before_commit=before_commit)


def test_concurrent_append_between_plan_and_commit_survives(spark, ecfg, catalog, namespace):
    ident = make_table(spark, namespace, inserts=3)
    _, seams = _before_commit(lambda rewrite, results: insert(spark, fq(ident), 5000, 5040))
    report = optimize_table(spark, ecfg, ident, collaborators=seams)
    assert report.partitions_rewritten == 2
    ids = {r.id for r in contents(spark, ident).select("id").collect()}
    assert ids == set(range(0, 120)) | set(range(5000, 5040))
    assert contents(spark, ident).count() == 160


def test_concurrent_delete_of_a_replaced_file_fails_the_commit_and_replans(
    spark, cfg, catalog, namespace
):
    ident = make_table(spark, namespace, inserts=3)

    def delete_a_row(rewrite: Any, results: Any) -> None:
        # id 0 lives in day=d0's first file, which every merge plan replaces.
        spark.sql(f"DELETE FROM {fq(ident)} WHERE id = 0")

    calls, seams = _before_commit(delete_a_row)
    report = optimize_table(spark, cfg, ident, collaborators=seams)
    # all-in-one conflicted; one by one: d0 conflicted, d1 committed; d0 re-planned
    assert len(calls) >= 4
    expected = set(range(1, 120))
    assert {r.id for r in contents(spark, ident).select("id").collect()} == expected
    assert contents(spark, ident).count() == len(expected)
    d0 = next(p for p in report.partitions if p.key == part(day="d0"))
    assert d0.status == "rewritten" and d0.attempts == 2
    assert current_operation(catalog, ident) == "replace"
    # The failed attempt's files were deleted at once: every file on disk is referenced
    # by some snapshot (no orphans left for remove_orphan_files).
    on_disk = {p.name for p in _data_dir(cfg, ident).rglob("*.parquet")}
    referenced = {
        r.file_path.rsplit("/", 1)[-1]
        for r in spark.sql(f"SELECT file_path FROM {fq(ident)}.all_files").collect()
    }
    assert on_disk == referenced


def test_dry_run_writes_nothing(spark, cfg, catalog, namespace):
    ident = make_table(spark, namespace, inserts=2)
    snap = load_table(catalog, ident).current_snapshot().snapshot_id
    files = sorted(p.name for p in _data_dir(cfg, ident).rglob("*.parquet"))
    report = optimize_table(spark, cfg, ident, dry_run=True)
    assert report.dry_run and report.snapshot_ids == ()
    assert report.files_rewritten > 0 and all(p.status == "planned" for p in report.partitions)
    assert load_table(catalog, ident).current_snapshot().snapshot_id == snap
    assert sorted(p.name for p in _data_dir(cfg, ident).rglob("*.parquet")) == files


def _data_dir(cfg: Any, ident: str) -> Path:
    ns, name = ident.split(".")
    return Path(cfg.catalog.warehouse[len("file://") :]) / ns / name / "data"


def test_verification_mismatch_commits_nothing_and_deletes_written_files(
    spark, cfg, catalog, namespace
):
    ident = make_table(spark, namespace, inserts=2)
    snap = load_table(catalog, ident).current_snapshot().snapshot_id
    files = sorted(p.name for p in _data_dir(cfg, ident).rglob("*.parquet"))
    calls: list[int] = []

    def corrupt(df: Any, columns: Any) -> Any:
        calls.append(1)
        sums = checksums_by_key(df, columns)
        if len(calls) == 1:  # the read of the written files (the input's checksum is
            # observed during the write): pretend one row went missing
            sums = {k: Checksum(v.rows - 1, v.checksum, v.non_null) for k, v in sums.items()}
        return sums

    seams = rewrite_mod.Collaborators(checksums=corrupt)
    with pytest.raises(OperationFailed, match="verification failed"):
        optimize_table(spark, with_engine(cfg, "spark"), ident, collaborators=seams)
    assert load_table(catalog, ident).current_snapshot().snapshot_id == snap
    assert sorted(p.name for p in _data_dir(cfg, ident).rglob("*.parquet")) == files


def test_failed_data_checks_commit_nothing_and_delete_written_files(
    spark, cfg, catalog, namespace, monkeypatch
):
    """The GE suite is a gate of its own: an Arrow writer that turns one value into a null
    writes files that hold exactly what it wrote (its read-back passes) and as many rows as
    it read (the counts pass); only the data checks see the new null. Nothing is
    committed and the new files are gone."""
    import pyarrow as pa

    from icefloe.jobs.rewrite import arrow_engine

    ident = make_table(spark, namespace, "gate", inserts=2)
    snap = load_table(catalog, ident).current_snapshot().snapshot_id
    files = sorted(p.name for p in _data_dir(cfg, ident).rglob("*.parquet"))
    write = arrow_engine._write

    def nulling_write(table: Any, io: Any, path: str, chunk: Any) -> Any:
        i = chunk.schema.get_field_index("id")
        ids = chunk.column(i).to_pylist()
        bad = chunk.set_column(i, chunk.schema.field(i), pa.array([None, *ids[1:]], pa.int64()))
        return write(table, io, path, bad)

    monkeypatch.setattr(arrow_engine, "_write", nulling_write)
    seams = rewrite_mod.Collaborators(arrow_in_driver=True)
    with pytest.raises(OperationFailed, match="data checks failed.*nulls in column id") as failed:
        optimize_table(spark, with_engine(cfg, "auto"), ident, collaborators=seams)
    assert "verification failed" not in str(failed.value)  # GE alone caught it
    assert load_table(catalog, ident).current_snapshot().snapshot_id == snap
    assert sorted(p.name for p in _data_dir(cfg, ident).rglob("*.parquet")) == files


def test_a_null_in_spark_written_files_fails_checksum_and_data_checks(
    spark, cfg, catalog, namespace
):
    """Spark's writer: the one pass over the new files (rows, checksum, non-null counts)
    sees a null where the input had none; the checksum and the data checks both fail, and
    the error names both."""
    ident = make_table(spark, namespace, "gatespark", inserts=2)
    snap = load_table(catalog, ident).current_snapshot().snapshot_id
    files = sorted(p.name for p in _data_dir(cfg, ident).rglob("*.parquet"))

    def with_a_null(df: Any, columns: Any) -> Any:
        # as if the new files held a null in place of id 0 (partition d0)
        seen = df.withColumn("id", F.when(F.col("id") == 0, None).otherwise(F.col("id")))
        return checksums_by_key(seen, columns)

    seams = rewrite_mod.Collaborators(checksums=with_a_null)
    with pytest.raises(
        OperationFailed, match="verification failed.*data checks failed.*nulls in column id"
    ):
        optimize_table(spark, with_engine(cfg, "spark"), ident, collaborators=seams)
    assert load_table(catalog, ident).current_snapshot().snapshot_id == snap
    assert sorted(p.name for p in _data_dir(cfg, ident).rglob("*.parquet")) == files


def test_a_failing_arrow_engine_falls_back_to_spark_and_keeps_every_row(
    spark, cfg, catalog, namespace
):
    """The Arrow job fails after writing some files: they are deleted, the same groups go
    through Spark's writer (checksum-verified), and the report says so."""
    ident = make_table(spark, namespace, "fallback", inserts=4)
    before = snapshot_table(spark, ident)
    files_before = {r.file_path for r in data_files(spark, ident)}
    leftovers: list[str] = []

    def half_then_fail(driver: ArrowDriver, results: Any, *args: Any) -> None:
        driver.write(results, *args)
        leftovers.extend(p for r in results for p in r.new_paths)
        raise RuntimeError("executor lost")

    seams = rewrite_mod.Collaborators(write_arrow=half_then_fail)
    report = optimize_table(spark, cfg, ident, collaborators=seams)
    assert report.partitions_rewritten == 2
    for p in report.partitions:
        assert p.engine == "spark" and "Arrow engine failed" in p.reason
        assert "executor lost" in p.reason
    assert_df_equality(contents(spark, ident), before, ignore_row_order=True)
    assert leftovers and not any(Path(p.removeprefix("file:")).exists() for p in leftovers)
    on_disk = {p.name for p in _data_dir(cfg, ident).rglob("*.parquet")}
    referenced = {
        r.file_path.rsplit("/", 1)[-1]
        for r in spark.sql(f"SELECT file_path FROM {fq(ident)}.all_files").collect()
    }
    assert on_disk == referenced and files_before


def test_a_failed_commit_leaves_no_written_file_behind(
    spark: Any, cfg: Any, catalog: Any, namespace: str
) -> None:
    """A commit failure that is not a conflict stops the action; the files already written
    for partitions not yet committed are deleted, not left for orphan cleanup."""
    ident = make_table(spark, namespace, "commitfail", inserts=4)
    before = snapshot_table(spark, ident)
    snap = load_table(catalog, ident).current_snapshot().snapshot_id
    files_before = {r.file_path for r in data_files(spark, ident)}

    def failing_commit(rewrite: Any, results: Any) -> None:
        rewrite.discard(results)  # what commit() does for a cleanable failure
        raise OperationFailed("commit of the table failed (CommitFailedException: boom)")

    seams = rewrite_mod.Collaborators(before_commit=failing_commit)
    with pytest.raises(OperationFailed, match="boom"):
        optimize_table(spark, cfg, ident, collaborators=seams)
    assert load_table(catalog, ident).current_snapshot().snapshot_id == snap
    location = load_table(catalog, ident).location().removeprefix("file:").removeprefix("//")
    on_disk = {str(p) for p in Path(location, "data").rglob("*.parquet")}
    assert on_disk == {f.removeprefix("file:").removeprefix("//") for f in files_before}
    assert_df_equality(before, contents(spark, ident), ignore_row_order=True)


def test_reading_new_local_files_lists_them_on_the_driver_and_restores_the_setting(
    spark, cfg, namespace
):
    """``read_files`` reads every row of the named files and leaves Spark's listing
    threshold as it found it (set or unset)."""
    ident, rewrite = rewrite_at_current(spark, cfg, namespace, "listing", inserts=3)
    paths = [r.file_path for r in data_files(spark, ident)]
    assert len(paths) == 6
    try:
        for before in (None, "40"):
            if before is None:
                spark.conf.unset(LISTING_THRESHOLD)
            else:
                spark.conf.set(LISTING_THRESHOLD, before)
            assert rewrite.read_files(paths).count() == contents(spark, ident).count()
            assert spark.conf.get(LISTING_THRESHOLD, None) == before
    finally:
        spark.conf.unset(LISTING_THRESHOLD)
        rewrite.close()


def test_new_files_data_files_carry_the_same_metrics_either_way(spark, cfg, namespace):
    """Differential: a local file's ``DataFile`` built with shared Parquet read options,
    and one built from the footer bytes the Arrow engine reads back, equal the one
    Iceberg's own ``ParquetUtil.fileMetrics`` builds through the table's FileIO, metrics
    and bounds included."""
    ident, rewrite = rewrite_at_current(spark, cfg, namespace, "metrics")
    try:
        paths = [r.file_path for r in data_files(spark, ident)]
        rewrite.load_tasks(paths)
        parser = spark._jvm.org.apache.iceberg.ContentFileParser
        spec = rewrite.table.spec()
        through_io = NewFiles(spark, rewrite.table, local=lambda _: None)
        for path in paths:
            partition = rewrite.scan.files[path].partition()
            ours = rewrite.new_files.build(spec, partition, [path])
            theirs = through_io.build(spec, partition, [path])
            data = Path(path.removeprefix("file:")).read_bytes()
            footer = {path: Footer.of(data, path)}
            read_back = through_io.build(spec, partition, [path], footer)
            assert ours[0][1] == theirs[0][1] == int(rewrite.scan.files[path].fileSizeInBytes())
            assert read_back[0][1] == theirs[0][1]
            assert str(parser.toJson(ours[0][0], spec)) == str(parser.toJson(theirs[0][0], spec))
            assert str(parser.toJson(read_back[0][0], spec)) == str(
                parser.toJson(theirs[0][0], spec)
            )
            assert int(ours[0][0].recordCount()) == rewrite.scan.records[path]
            assert ours[0][0].lowerBounds().size() == 4  # every column's lower bound
    finally:
        rewrite.close()


def test_new_files_are_read_with_the_tables_schema_only_when_it_is_plain(spark, cfg, namespace):
    """Plain columns: the reader is given the table's Spark schema (no inference job) and
    reads the same rows as with the schema inferred; a nested column keeps inference."""
    ident, rewrite = rewrite_at_current(spark, cfg, namespace, "plain")
    try:
        paths = [r.file_path for r in data_files(spark, ident)]
        like = contents(spark, ident)
        assert rewrite.spark_engine.plain_columns()
        given = rewrite.read_files(paths, like)
        assert given.schema == like.schema
        assert_df_equality(
            given,
            rewrite.read_files(paths).select(*like.columns),
            ignore_row_order=True,
            ignore_nullable=True,
        )
    finally:
        rewrite.close()
    nested = f"lake.`{namespace}`.`nested`"
    spark.sql(f"CREATE TABLE {nested} (id BIGINT, s STRUCT<a: INT>) USING iceberg")
    spark.sql(f"INSERT INTO {nested} VALUES (1, named_struct('a', 2))")
    snapshot = spark.sql(f"SELECT snapshot_id FROM {nested}.snapshots").first()[0]
    rewrite = rewrite_mod.ExactRewrite(spark, nested, snapshot)
    try:
        assert not rewrite.spark_engine.plain_columns()
    finally:
        rewrite.close()


def test_new_files_read_through_the_tables_fileio_equal_the_plain_read(spark, cfg, namespace):
    """Differential: the route for object storage (a staged Iceberg scan of the new
    ``DataFile`` objects, through the table's FileIO) reads the same rows, and names the
    same file for each row, as the plain Parquet read of local files."""
    from types import SimpleNamespace

    from pyspark.sql import functions as F

    ident, rewrite = rewrite_at_current(spark, cfg, namespace, "through_io", inserts=3)
    try:
        paths = [r.file_path for r in data_files(spark, ident)]
        rewrite.load_tasks(paths)
        like = contents(spark, ident)
        group = SimpleNamespace(new_paths=paths, new_files=[rewrite.scan.files[p] for p in paths])
        engine = rewrite.spark_engine
        sides = [engine.read_new([group], like, through_table=way) for way in (False, True)]
        plain, staged = (df.select(*like.columns, name.alias("f")) for df, name in sides)
        assert staged.count() == plain.count() == like.count()
        assert plain.select("f").distinct().count() == len(paths)
        assert_df_equality(staged, plain, ignore_row_order=True, ignore_nullable=True)
        assert staged.filter(F.col("f").isNull()).count() == 0
    finally:
        rewrite.close()
