"""Format version 3 tables with deletion vectors (issue 28, item 5): merges and delete
compaction keep every row exactly, deleted rows stay deleted, rows keep their lineage
(``_row_id``, ``_last_updated_sequence_number``, as Iceberg's own rewrite keeps them),
and the commit drops exactly the deletion vectors that applied to replaced files, though
several DVs share one Puffin file. Through ``optimize_table`` and the decider + actor."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from chispa import assert_df_equality

from icefloe.base.config import DeciderSettings
from icefloe.jobs.data.optimize import optimize_table
from icefloe.jobs.rewrite.exact import ExactRewrite
from icefloe.jobs.rewrite.spark_engine import LINEAGE_COLUMNS
from icefloe.service.actor.loop import run_actor
from icefloe.service.decider.wiring import open_decider
from icefloe.service.observe.status import gather
from tests.support.config import make_config

pytestmark = [pytest.mark.spark, pytest.mark.integration]

V3 = "'format-version'='3', 'write.delete.mode'='merge-on-read'"
TARGET = 1 << 20


def make_v3_table(spark: Any, namespace: str, name: str = "dv") -> str:
    """Three INSERTs of two files per day (d0, d1), then one DELETE of every fifth row:
    one deletion vector per data file, all of them in one Puffin file."""
    fq = f"lake.`{namespace}`.`{name}`"
    spark.sql(
        f"CREATE TABLE {fq} (id BIGINT, day STRING, v STRING) USING iceberg "
        f"PARTITIONED BY (day) TBLPROPERTIES ({V3})"
    )
    for i in range(3):
        spark.sql(
            f"INSERT INTO {fq} SELECT /*+ REPARTITION(2) */ id, concat('d', id % 2), "
            f"sha2(cast(id AS STRING), 256) FROM range({i * 100}, {(i + 1) * 100})"
        )
    spark.sql(f"DELETE FROM {fq} WHERE id % 5 = 0")
    return fq


def rows(spark: Any, fq: str) -> list[tuple[Any, ...]]:
    """Every live row with its lineage, sorted."""
    return sorted(
        tuple(r)
        for r in spark.sql(f"SELECT *, _row_id, _last_updated_sequence_number FROM {fq}").collect()
    )


def dvs(spark: Any, fq: str) -> list[Any]:
    return spark.sql(
        f"SELECT file_path, file_format, referenced_data_file, content_offset "
        f"FROM {fq}.delete_files"
    ).collect()


def test_delete_compaction_of_deletion_vectors_keeps_every_row_and_drops_the_dvs(
    spark: Any, cfg: Any, namespace: str
) -> None:
    fq = make_v3_table(spark, namespace)
    before = rows(spark, fq)
    found = dvs(spark, fq)
    assert found and {r.file_format for r in found} == {"PUFFIN"}
    assert len({r.file_path for r in found}) < len(found)  # DVs share a Puffin file
    assert len(before) == 240 and not [r for r in before if r[0] % 5 == 0]

    report = optimize_table(spark, cfg, f"{namespace}.dv", action="compact_deletes")

    assert report.partitions_rewritten == 2 and report.rows_verified == 240
    assert report.delete_files_removed == len(found)
    for p in report.partitions:  # row lineage: only Spark's writer keeps it
        assert p.engine == "spark" and "row lineage" in p.reason
    assert rows(spark, fq) == before  # the same rows, ids and sequence numbers
    assert dvs(spark, fq) == []
    operation = spark.sql(f"SELECT operation FROM {fq}.snapshots ORDER BY committed_at").collect()
    assert operation[-1].operation == "replace"


def test_a_rewrite_of_one_partition_keeps_the_other_partitions_dvs(
    spark: Any, cfg: Any, namespace: str
) -> None:
    """The DVs of d0 and d1 share one Puffin file: only d0's go (told apart by their
    offset in it), and d1's rows stay deleted."""
    fq = make_v3_table(spark, namespace, "half")
    before = rows(spark, fq)
    kept = sorted(tuple(r) for r in dvs(spark, fq) if "/day=d1/" in r.referenced_data_file)
    assert len(kept) == 3

    report = optimize_table(
        spark, cfg, f"{namespace}.half", partitions=["day=d0"], action="compact_deletes"
    )

    assert report.partitions_rewritten == 1 and report.delete_files_removed == 3
    assert sorted(tuple(r) for r in dvs(spark, fq)) == kept
    assert rows(spark, fq) == before


def test_merge_of_a_v3_table_goes_through_spark_and_keeps_lineage(
    spark: Any, cfg: Any, namespace: str
) -> None:
    """A plain merge (the CLI's ``optimize``) of small files with and without DVs."""
    fq = make_v3_table(spark, namespace, "merge")
    spark.sql(f"INSERT INTO {fq} SELECT id, concat('d', id % 2), 'x' FROM range(300, 340)")
    before = rows(spark, fq)

    report = optimize_table(spark, cfg, f"{namespace}.merge", min_input_files=2)

    assert report.partitions_rewritten == 2
    assert {p.engine for p in report.partitions} == {"spark"}
    assert rows(spark, fq) == before
    assert dvs(spark, fq) == []


def test_the_decider_and_actor_compact_deletion_vectors(
    spark: Any, lake_home: Path, catalog: Any, namespace: str, redis_client: Any
) -> None:
    name = f"{namespace}.mor"
    fq = f"lake.`{namespace}`.`mor`"
    cfg = make_config(
        lake_home,
        managed={"namespaces": [namespace]},
        defaults={"target_file_size_bytes": TARGET, "tolerance_bytes": TARGET},  # no merges
        tables={
            name: {"actions": ["merge", "compact_deletes"], "maintenance": {"delete_ratio": 0.2}}
        },
    )
    spark.sql(
        f"CREATE TABLE {fq} (id BIGINT, region STRING) USING iceberg PARTITIONED BY (region) "
        f"TBLPROPERTIES ({V3})"
    )
    spark.sql(f"INSERT INTO {fq} SELECT id, IF(id % 2 = 0, 'eu', 'us') FROM range(100)")
    decider = open_decider(cfg, catalog, redis_client, settings=DeciderSettings())
    assert decider.step(block_ms=None).enqueued == 0
    spark.sql(f"DELETE FROM {fq} WHERE region = 'eu' AND id < 30")  # 15 of 50 rows
    assert {r.file_format for r in dvs(spark, fq)} == {"PUFFIN"}
    report = decider.step(block_ms=None)
    assert report.enqueued == 1  # region=eu only: us has no deletes
    before = rows(spark, fq)

    done = run_actor(cfg, max_actions=1, idle_exit=0, spark=spark)

    assert done.done == 1 and done.failed == 0
    recent = gather(cfg, redis_client, decider.queue, 0.0)["recent"][0]
    assert recent["action"] == "compact_deletes" and recent["ok"] is True
    assert rows(spark, fq) == before  # every row kept once, deleted ones still deleted
    assert len(before) == 85
    assert dvs(spark, fq) == []
    assert decider.queue.depth()["dead"] == 0


def test_new_files_of_a_v3_table_read_through_the_table_equal_the_plain_read(
    spark: Any, namespace: str
) -> None:
    """The route for object storage (a staged scan of the new ``DataFile``s) on a table
    with row lineage, where Spark cannot add ``_file``: each file read on its own, named
    by a literal. The same rows, each named by the same file, as the plain read, row
    lineage included: as the files hold it (here none: nulls), not as a commit assigns it."""
    fq = make_v3_table(spark, namespace, "through")
    snapshot = spark.sql(f"SELECT snapshot_id FROM {fq}.snapshots ORDER BY committed_at").collect()
    rewrite = ExactRewrite(spark, fq, snapshot[-1].snapshot_id)
    try:
        paths = [r.file_path for r in spark.sql(f"SELECT file_path FROM {fq}.data_files").collect()]
        rewrite.load_tasks(paths)
        group = SimpleNamespace(new_paths=paths, new_files=[rewrite.scan.files[p] for p in paths])
        like = spark.table(fq).select("*", *LINEAGE_COLUMNS)
        engine = rewrite.spark_engine
        assert engine.row_lineage()
        sides = [engine.read_new([group], like, through_table=way) for way in (False, True)]
        plain, staged = (df.select(*like.columns, name.alias("f")) for df, name in sides)
        assert staged.count() == plain.count() == 300  # no deletes: every row of the files
        assert plain.select("f").distinct().count() == len(paths)
        assert_df_equality(
            staged, plain, ignore_row_order=True, ignore_nullable=True, ignore_metadata=True
        )
    finally:
        rewrite.close()
