"""The backend contract: what icefloe promises holds on every backend profile.

Each test runs once per profile (``embedded``, ``postgres``, ``rest-s3``; see conftest)
and ends with :func:`tests.contract.checks.assert_intact`: every row kept (count and a
content digest), no file in storage (the bucket, on S3) that no snapshot references, and
no referenced file missing.
"""

from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType

from icefloe.base.catalog import spark_table_name
from icefloe.base.errors import OperationFailed
from icefloe.jobs.base.verify import Checksum, checksums_by_key
from icefloe.jobs.data.optimize import optimize_table
from icefloe.jobs.rewrite.exact import Collaborators
from icefloe.service.actor.loop import run_actor
from icefloe.service.decider.wiring import open_decider
from icefloe.state.rolling.scan import full_stats
from tests.contract.checks import Contents, assert_intact, table_contents

pytestmark = [pytest.mark.contract, pytest.mark.spark, pytest.mark.integration]

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "day", StringType(), required=False),
    NestedField(3, "payload", StringType(), required=False),
)
SPEC = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "day"))
DAYS = ("d0", "d1")


def rows(start: int, n: int, days: tuple[str, ...] = DAYS) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "day": pa.array([days[i % len(days)] for i in ids], pa.string()),
            "payload": pa.array([f"payload-{i:08d}" * 4 for i in ids], pa.string()),
        }
    )


def small_files_table(backend: Any, name: str, commits: int = 3) -> Any:
    """A table of ``commits`` small files per day, appended by PyIceberg."""
    table = backend.catalog.create_table(name, schema=SCHEMA, partition_spec=SPEC)
    for c in range(commits):
        table.append(rows(c * 40, 40))
    return backend.catalog.load_table(name)


def operations(table: Any) -> list[str]:
    return [s.summary.operation.value for s in table.snapshots()]


def merge_on_read_table(spark: Any, fq: str, version: int, commits: int) -> None:
    """A day-partitioned merge-on-read table of ``version`` with ``commits`` appends of
    40 rows each."""
    spark.sql(
        f"CREATE TABLE {fq} (id BIGINT, day STRING, payload STRING) USING iceberg "
        f"PARTITIONED BY (day) TBLPROPERTIES ('format-version'='{version}', "
        "'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read')"
    )
    for c in range(commits):
        spark.createDataFrame(rows(c * 40, 40).to_pandas()).writeTo(fq).append()


def test_optimize_a_table_with_deletes_and_an_evolved_schema(backend: Any, spark: Any) -> None:
    cfg = backend.cfg
    name = f"{backend.namespace()}.events"
    fq = spark_table_name(cfg, name)
    merge_on_read_table(spark, fq, version=2, commits=3)
    spark.sql(f"ALTER TABLE {fq} ADD COLUMN score DOUBLE")
    spark.sql(f"ALTER TABLE {fq} RENAME COLUMN payload TO body")
    for c in range(3, 5):
        frame = rows(c * 40, 40).to_pandas().rename(columns={"payload": "body"})
        frame["score"] = frame["id"] * 0.5
        spark.createDataFrame(frame).writeTo(fq).append()
    spark.sql(f"DELETE FROM {fq} WHERE id % 7 = 0")
    table = backend.catalog.load_table(name)
    assert any(
        e.data_file.content.name == "POSITION_DELETES"
        for m in table.current_snapshot().manifests(table.io)
        for e in m.fetch_manifest_entry(table.io)
    ), "the DELETE should write position delete files"
    before = table_contents(table)

    report = optimize_table(spark, cfg, name, tolerance=0)

    assert report.partitions_rewritten == len(DAYS) and report.partitions_failed == 0
    table = backend.catalog.load_table(name)
    assert operations(table)[-1] == "replace"
    assert len(table.inspect.files()) == len(DAYS)  # one data file per day, no deletes left
    assert_intact(table, before)


def lineage(spark: Any, fq: str) -> list[tuple[Any, ...]]:
    """Every live row with its row lineage (``_row_id``, ``_last_updated_sequence_number``),
    sorted."""
    query = f"SELECT *, _row_id, _last_updated_sequence_number FROM {fq}"
    return sorted(tuple(r) for r in spark.sql(query).collect())


def test_optimize_a_v3_table_keeps_row_lineage(backend: Any, spark: Any) -> None:
    """Format version 3 (issue 45, item 9): plain appends, deletion vectors and updated
    rows merge on every backend, each row keeping its ``_row_id`` and
    ``_last_updated_sequence_number`` as Iceberg's own rewrite keeps them."""
    cfg = backend.cfg
    name = f"{backend.namespace()}.lineage"
    fq = spark_table_name(cfg, name)
    merge_on_read_table(spark, fq, version=3, commits=3)
    spark.sql(f"DELETE FROM {fq} WHERE id % 7 = 0")  # deletion vectors
    spark.sql(f"UPDATE {fq} SET payload = 'updated' WHERE id % 5 = 1")  # a later sequence
    before, contents = lineage(spark, fq), table_contents(backend.catalog.load_table(name))
    assert len({r[-1] for r in before}) > 1 and len(before) == contents.rows == 120 - 18

    report = optimize_table(spark, cfg, name, tolerance=0)

    assert report.partitions_rewritten == len(DAYS) and report.partitions_failed == 0
    assert {p.engine for p in report.partitions} == {"spark"}
    table = backend.catalog.load_table(name)
    assert operations(table)[-1] == "replace"
    assert len(table.inspect.files()) == len(DAYS)  # one data file per day, no DVs left
    assert lineage(spark, fq) == before  # the same rows, row ids and sequence numbers
    assert_intact(table, contents)


def test_the_decider_and_two_actors(backend: Any, spark: Any, redis_client: Any) -> None:
    ns = backend.namespace()
    cfg = backend.with_managed(ns)
    name = f"{ns}.events"
    table = small_files_table(backend, name)
    before = table_contents(table)
    decider = open_decider(cfg, backend.catalog, redis_client)
    report = decider.step(block_ms=None, dispatch_all=True)
    assert report.enqueued == len(DAYS) and report.dispatched == len(DAYS)

    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = [pool.submit(run_actor, cfg, None, 1.0, spark) for _ in range(2)]
        reports = [r.result(timeout=600) for r in runs]

    assert sum(r.done for r in reports) == len(DAYS), reports
    assert all(r.failed == 0 and r.lost == 0 for r in reports), reports
    table = backend.catalog.load_table(name)
    assert operations(table).count("replace") == 1  # one table's batch: one commit, once
    step = decider.step(block_ms=None)
    assert step.enqueued == 0
    assert decider.stats.partitions(name) == full_stats(table, cfg.policy_for(name).target)
    assert_intact(table, before)


def test_a_concurrent_append_and_a_concurrent_delete_during_rewrites(
    backend: Any, spark: Any
) -> None:
    cfg = backend.cfg
    name = f"{backend.namespace()}.events"
    table = small_files_table(backend, name)
    expected = table_contents(table)
    appended: list[pa.Table] = []

    def append_once(rewrite: Any, results: Any) -> None:
        if not appended:  # a streaming writer's commit lands right before ours
            appended.append(rows(5000, 20))
            backend.catalog.load_table(name).append(appended[0])

    report = optimize_table(
        spark, cfg, name, collaborators=Collaborators(before_commit=append_once)
    )
    assert appended and report.partitions_rewritten == len(DAYS)
    expected = expected + Contents.of_arrow(appended[0])
    assert_intact(backend.catalog.load_table(name), expected)

    for c in range(2):  # small files again, then a delete of a row in a replaced file
        backend.catalog.load_table(name).append(rows(6000 + c * 10, 10))
    deleted: list[int] = []

    def delete_once(rewrite: Any, results: Any) -> None:
        if not deleted:
            deleted.append(6000)
            spark.sql(f"DELETE FROM {spark_table_name(cfg, name)} WHERE id = 6000")

    table = backend.catalog.load_table(name)
    gone = Contents.of_rows(r for r in table.scan().to_arrow().to_pylist() if r["id"] == 6000)
    report = optimize_table(
        spark, cfg, name, collaborators=Collaborators(before_commit=delete_once)
    )
    assert deleted and report.partitions_failed == 0
    expected = Contents(expected.rows + 20 - gone.rows, 0)
    table = backend.catalog.load_table(name)
    after = table_contents(table)
    assert after.rows == expected.rows
    assert 6000 not in table.scan().to_arrow().column("id").to_pylist()
    assert_intact(table, after)


def test_a_rejected_rewrite_is_cleaned_up(backend: Any, spark: Any) -> None:
    cfg = dataclasses.replace(
        backend.cfg, defaults=dataclasses.replace(backend.cfg.defaults, engine="spark")
    )
    name = f"{backend.namespace()}.events"
    table = small_files_table(backend, name)
    before, snapshot = table_contents(table), table.current_snapshot().snapshot_id

    def one_row_short(df: Any, columns: Any) -> dict[str, Checksum]:
        sums = checksums_by_key(df, columns)
        return {k: Checksum(v.rows - 1, v.checksum, v.non_null) for k, v in sums.items()}

    with pytest.raises(OperationFailed, match="verification failed"):
        optimize_table(spark, cfg, name, collaborators=Collaborators(checksums=one_row_short))
    table = backend.catalog.load_table(name)
    assert table.current_snapshot().snapshot_id == snapshot
    assert_intact(table, before)  # the written files are gone from storage


def test_skew_detect_stores_its_report(backend: Any, spark: Any) -> None:
    from icefloe.jobs.skew import detect

    cfg = backend.cfg
    ns = backend.namespace()
    facts, dims = f"{ns}.facts", f"{ns}.dims"
    keys = [7] * 400 + [k % 50 for k in range(600)]
    spark.createDataFrame([(k, i) for i, k in enumerate(keys)], "k int, v int").writeTo(
        spark_table_name(cfg, facts)
    ).create()
    spark.createDataFrame([(k, k) for k in range(50)], "k int, w int").writeTo(
        spark_table_name(cfg, dims)
    ).create()
    before = table_contents(backend.catalog.load_table(facts))

    report = detect.detect_table(
        spark, cfg, backend.catalog, facts, ["k"], dims, "k", reports_namespace=ns
    )

    assert report["rows"] == len(keys) and not report["cached"]
    assert report["keys"]["k"]["hot_keys"][0]["key"] == 7
    again = detect.detect_table(
        spark, cfg, backend.catalog, facts, ["k"], dims, "k", reports_namespace=ns
    )
    assert again["cached"] and again["keys"] == report["keys"]
    assert detect.stored_hot_keys(backend.catalog, facts, "k", ns)[0] == 7
    assert_intact(backend.catalog.load_table(facts), before)


def test_maintenance_procedures_run_on_the_backend(backend: Any, spark: Any) -> None:
    """Iceberg's procedures as icefloe calls them: orphan listing goes through the table's
    FileIO on object storage (``prefix_listing``), so it works on every backend (Iceberg
    refuses a cut-off under a day: the dry run lists the whole table and finds nothing);
    manifests are rewritten and snapshots expired with every row kept."""
    from datetime import UTC, datetime, timedelta

    from icefloe.jobs.maintenance import procedures as maintenance

    cfg = backend.cfg
    name = f"{backend.namespace()}.events"
    table = small_files_table(backend, name, commits=4)
    before = table_contents(table)
    later = datetime.now(UTC) + timedelta(days=4)  # every snapshot counts as old enough

    orphans = maintenance.remove_orphan_files(spark, cfg, name, dry_run=True)
    manifests = maintenance.rewrite_manifests(spark, cfg, name)
    expired = maintenance.expire_snapshots(
        spark, cfg, name, older_than=later - timedelta(days=1), retain_last=1, now=later
    )

    assert orphans.result["rows"] == 0, orphans.result
    assert manifests.result["rewritten_manifests_count"] >= 4, manifests.result
    assert expired.result["deleted_manifest_lists_count"] >= 4, expired.result
    table = backend.catalog.load_table(name)
    assert len(table.metadata.snapshots) == 1
    assert_intact(table, before)
