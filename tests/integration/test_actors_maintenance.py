"""Maintenance procedures on a real table: they change metadata, never rows, and refuse
cut-offs recent enough to hurt in-flight writes."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from icefloe.base.catalog import load_table
from icefloe.base.errors import TableNotFound, UsageError
from icefloe.jobs.maintenance.procedures import (
    expire_snapshots,
    remove_orphan_files,
    rewrite_manifests,
)

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def test_maintenance_procedures(spark, cfg, catalog, namespace):
    fq = f"lake.`{namespace}`.`t`"
    ident = f"{namespace}.t"
    spark.sql(f"CREATE TABLE {fq} (id BIGINT, day STRING) USING iceberg PARTITIONED BY (day)")
    for i in range(2):
        spark.sql(f"INSERT INTO {fq} VALUES ({i}, 'd{i % 2}')")
    rows = sorted(spark.table(fq).collect())

    now = datetime.now(UTC)
    with pytest.raises(UsageError, match="too recent"):
        expire_snapshots(spark, cfg, ident, older_than=now, now=now)
    with pytest.raises(UsageError, match="retain_last must be >= 1"):
        expire_snapshots(spark, cfg, ident, retain_last=0)
    with pytest.raises(UsageError, match="too recent"):
        remove_orphan_files(spark, cfg, ident, older_than=now - timedelta(hours=2), now=now)
    with pytest.raises(TableNotFound):
        rewrite_manifests(spark, cfg, f"{namespace}.missing")

    # Pretend two hours passed: every snapshot but the last is expired.
    later = now + timedelta(hours=2)
    report = expire_snapshots(
        spark, cfg, ident, older_than=later - timedelta(hours=1), retain_last=1, now=later
    )
    assert report.result["deleted_manifest_lists_count"] >= 1
    assert len(load_table(catalog, ident).snapshots()) == 1

    report = rewrite_manifests(spark, cfg, ident)
    assert "rewritten_manifests_count" in report.result

    data_dir = Path(cfg.catalog.warehouse.removeprefix("file://")) / namespace / "t" / "data"
    old_orphan, new_orphan = data_dir / "old-orphan.parquet", data_dir / "new-orphan.parquet"
    old_orphan.write_bytes(b"x")
    new_orphan.write_bytes(b"x")
    four_days_ago = time.time() - 4 * 86400
    os.utime(old_orphan, (four_days_ago, four_days_ago))
    report = remove_orphan_files(spark, cfg, ident)
    assert [
        loc.endswith("old-orphan.parquet") for loc in report.result["orphan_file_location"]
    ] == [True]
    assert not old_orphan.exists() and new_orphan.exists()
    assert sorted(spark.table(fq).collect()) == rows
    assert report.to_dict()["procedure"] == "remove_orphan_files"
