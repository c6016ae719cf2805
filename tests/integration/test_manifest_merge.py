"""A rewrite's commit merges the table's small manifests in its own ``replace`` snapshot
when they fit one manifest target (issue 29: a fresh reader opens fewer manifests, and no
``rewrite_manifests`` snapshot is added); ``commit.manifest-merge.enabled=false`` and
manifests past the target leave them as Iceberg would."""

from __future__ import annotations

from typing import Any

import pytest

from icefloe.jobs.data.optimize import optimize_table

pytestmark = [pytest.mark.spark, pytest.mark.integration]


def make_table(spark: Any, namespace: str, name: str, props: str) -> str:
    """Eight appends, each a file in each of three days: eight manifests; then ``props``."""
    fq = f"lake.`{namespace}`.`{name}`"
    spark.sql(
        f"CREATE TABLE {fq} (id BIGINT, day STRING) USING iceberg PARTITIONED BY (day) "
        "TBLPROPERTIES ('format-version'='2')"
    )
    for i in range(8):
        spark.sql(
            f"INSERT INTO {fq} SELECT id, concat('d', id % 3) "
            f"FROM range({i * 100}, {(i + 1) * 100})"
        )
    if props:
        spark.sql(f"ALTER TABLE {fq} SET TBLPROPERTIES ({props})")
    return fq


def manifests(spark: Any, fq: str) -> int:
    return int(spark.sql(f"SELECT count(*) AS n FROM {fq}.manifests").collect()[0].n)


def snapshots(spark: Any, fq: str) -> list[str]:
    rows = spark.sql(f"SELECT operation FROM {fq}.snapshots ORDER BY committed_at").collect()
    return [r.operation for r in rows]


@pytest.mark.parametrize(
    ("name", "props", "merged"),
    [
        ("mm_small", "", True),
        ("mm_off", "'commit.manifest-merge.enabled'='false'", False),
        # each manifest under the target, together more than one: not cheap enough
        ("mm_big", "'commit.manifest.target-size-bytes'='20000'", False),
    ],
)
def test_a_rewrite_merges_small_manifests_in_its_own_snapshot(
    spark: Any, cfg: Any, namespace: str, name: str, props: str, merged: bool
) -> None:
    """Against Iceberg's ``rewrite_data_files`` on a twin: fewer manifests where merging
    is cheap, else exactly as many."""
    ours, twin = (
        make_table(spark, namespace, name, props),
        make_table(spark, namespace, f"{name}_twin", props),
    )
    rows = sorted(spark.table(ours).collect())
    assert manifests(spark, ours) == 8

    report = optimize_table(spark, cfg, f"{namespace}.{name}", min_input_files=2)
    spark.sql(
        f"CALL lake.system.rewrite_data_files(table => '{namespace}.{name}_twin', "
        "options => map('min-input-files', '2'))"
    ).collect()

    assert report.partitions_rewritten == 3
    assert snapshots(spark, ours) == snapshots(spark, twin) == ["append"] * 8 + ["replace"]
    assert sorted(spark.table(ours).collect()) == rows
    if merged:  # the new files' manifest and the eight filtered ones: one
        assert (manifests(spark, ours), manifests(spark, twin)) == (1, 9)
    else:
        assert manifests(spark, ours) == manifests(spark, twin) > 1
