"""Different partitions are never merged into one (issue #28, item 1).

The probe: a string identity partition ``k`` whose values were NULL, ``'null'``, ``'/'`` and
``'%2F'`` — one partition key for NULL and ``'null'`` and one for ``'/'`` and ``'%2F'``
under the old ``col=value`` codec, so their files were planned as one group and written
with one partition value. Both the ad-hoc path (``optimize_table``) and the service loop
(decider → queue → actor) must merge each partition on its own and keep every row where
Spark's and PyIceberg's filters find it. And the end-to-end check: a group whose files
span two partitions is refused before any commit, on both engines.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyiceberg.expressions import EqualTo, IsNull

from icefloe.base.catalog import spark_table_name
from icefloe.base.config import DeciderSettings
from icefloe.base.errors import OperationFailed
from icefloe.base.tablestats import current_partitions
from icefloe.jobs.base.plan import FileGroup
from icefloe.jobs.data.optimize import optimize_table
from icefloe.jobs.rewrite.arrow_engine import ArrowTable, slim_metadata
from icefloe.jobs.rewrite.exact import ExactRewrite
from icefloe.service.actor.loop import run_actor
from icefloe.service.decider.wiring import open_decider
from tests.support.config import make_config
from tests.support.partition_identity import VALUES, colliding_table

pytestmark = [pytest.mark.spark, pytest.mark.integration]


def assert_partitions_intact(spark: Any, cfg: Any, catalog: Any, name: str) -> None:
    """Each value's 500 rows where Spark's and PyIceberg's filters look, one file each."""
    table = catalog.load_table(name)
    fq = spark_table_name(cfg, name)
    assert spark.table(fq).count() == 2000
    for value in VALUES:
        where = "k IS NULL" if value is None else f"k = '{value}'"
        got = spark.sql(f"SELECT id, k FROM {fq} WHERE {where}").collect()
        assert len(got) == 500, (value, len(got))
        assert {r.k for r in got} == {value}
        assert {r.id % 4 for r in got} == {VALUES.index(value)}
        expr = IsNull("k") if value is None else EqualTo("k", value)
        scanned = table.scan(row_filter=expr).to_arrow()
        assert scanned.num_rows == 500 and set(scanned["k"].to_pylist()) == {value}
    parts = current_partitions(table)
    assert len(parts) == 4 and all(len(p.paths) == 1 for p in parts)


def test_optimize_keeps_colliding_partitions_apart(
    spark: Any, lake_home: Path, catalog: Any, namespace: str
) -> None:
    cfg = make_config(lake_home, managed={"namespaces": [namespace]})
    name = f"{namespace}.collide"
    table = colliding_table(catalog, name)
    assert len(current_partitions(table)) == 4
    report = optimize_table(spark, cfg, name)
    assert report.partitions_rewritten == 4 and report.files_rewritten == 20
    shown = sorted(p["partition"] for p in report.to_dict()["partitions"])
    assert shown == ["k=%2F", "k=/", "k=null", "k=null"]
    assert_partitions_intact(spark, cfg, catalog, name)


@pytest.mark.redis
def test_the_service_loop_keeps_colliding_partitions_apart(
    spark: Any, lake_home: Path, catalog: Any, namespace: str, redis_client: Any
) -> None:
    cfg = make_config(lake_home, managed={"namespaces": [namespace]})
    name = f"{namespace}.collide"
    colliding_table(catalog, name)
    decider = open_decider(cfg, catalog, redis_client, settings=DeciderSettings())
    report = decider.step(block_ms=None, dispatch_all=True)
    assert report.enqueued == 4 and len(decider.stats.partitions(name)) == 4
    done = run_actor(cfg, max_actions=4, idle_exit=0, spark=spark)
    assert done.done == 4 and done.failed == 0
    assert_partitions_intact(spark, cfg, catalog, name)
    decider.step(block_ms=None)
    assert sum(s.n for s in decider.stats.partitions(name).values()) == 4


@pytest.mark.parametrize("engine", ["arrow", "spark"])
def test_a_group_spanning_two_partitions_is_refused_before_the_commit(
    spark: Any, cfg: Any, catalog: Any, namespace: str, engine: str
) -> None:
    """A planning bug made real: one group of NULL's and 'null''s files. The Arrow engine
    would write them all into the first file's partition, Spark's writer into two; either
    way the partition check refuses before any commit and deletes what was written."""
    name = f"{namespace}.collide"
    table = colliding_table(catalog, name)
    value = {p.partition.fields[0][2]: p for p in current_partitions(table)}
    null, text = value[None], value["null"]
    snapshot = table.current_snapshot().snapshot_id
    paths = null.paths + text.paths
    group = FileGroup(null.key, null.spec_id, paths, sum(null.sizes) + sum(text.sizes))
    arrow = ArrowTable(slim_metadata(table.metadata), dict(table.io.properties))
    rewrite = ExactRewrite(spark, spark_table_name(cfg, name), snapshot)
    try:
        rewrite.load_tasks(paths)
        with pytest.raises(OperationFailed, match="partition check failed"):
            rewrite.run([group], 1 << 20, arrow=arrow if engine == "arrow" else None)
    finally:
        rewrite.close()
    table = catalog.load_table(name)
    assert table.current_snapshot().snapshot_id == snapshot
    listed = {
        f for f in (Path(table.location().removeprefix("file://")) / "data").rglob("*.parquet")
    }
    live = {p.removeprefix("file://") for part in current_partitions(table) for p in part.paths}
    assert {str(f) for f in listed} == live  # what was written is deleted
