"""A batch keeps its one commit when an ad-hoc run changes the table under it (issue 45,
item 10): ``icefloe optimize`` of one of the batch's partitions, between the batch's write
and its commit, makes the batch's one ``replace`` conflict; the partitions the run did not
touch are then still committed together, in one snapshot, and only the touched one is
re-planned (here: the run left it nothing to do)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from icefloe.base.catalog import load_table
from icefloe.jobs.data.optimize import optimize_table
from icefloe.service.actor.runners import spark_runners
from icefloe.state.queue import ActionItem
from tests.integration.test_actors import PROPS
from tests.support.config import part

pytestmark = [pytest.mark.integration, pytest.mark.spark]

DAYS = 3


def make_days(spark: Any, namespace: str, inserts: int = 3) -> str:
    """``inserts`` small files in each of ``DAYS`` partitions (d0, d1, ...)."""
    fq = f"lake.`{namespace}`.`events`"
    spark.sql(
        f"CREATE TABLE {fq} (id BIGINT, day STRING, v STRING) USING iceberg "
        f"PARTITIONED BY (day) TBLPROPERTIES ({PROPS})"
    )
    for i in range(inserts):
        spark.sql(
            f"INSERT INTO {fq} SELECT /*+ REPARTITION(1) */ id, concat('d', id % {DAYS}), "
            f"sha2(cast(id AS STRING), 256) FROM range({i * 60}, {(i + 1) * 60})"
        )
    return f"{namespace}.events"


class BeforeFirstCommit:
    """A write guard (``icefloe.jobs.rewrite.guard``) that runs ``action`` once, at the first
    commit's check: a change to the table made after the batch wrote, before it commits."""

    def __init__(self, action: Callable[[], object]) -> None:
        self.action, self.commits = action, 0

    def before_write(self, paths: Sequence[str], prefixes: Sequence[str]) -> None:
        return None

    def before_commit(self) -> None:
        self.commits += 1
        if self.commits == 1:
            self.action()


def test_an_adhoc_run_inside_a_batch_leaves_its_other_partitions_one_commit(
    spark, cfg, catalog, namespace
):
    ident = make_days(spark, namespace)
    rows = sorted(spark.table(f"lake.`{namespace}`.`events`").collect())
    adhoc: list[Any] = []

    def optimize_d0() -> None:  # what `icefloe optimize TABLE --partition day=d0` runs
        adhoc.append(optimize_table(spark, cfg, ident, partitions=["day=d0"]))

    _, run_batch = spark_runners(cfg, spark)
    items = [
        ActionItem.new(ident, part(day=f"d{i}"), "merge", 0, 0, 0.0, time.time())
        for i in range(DAYS)
    ]
    result = run_batch(items, BeforeFirstCommit(optimize_d0))
    assert adhoc and adhoc[0].partitions_rewritten == 1
    assert result.failed == {}
    report = result.report
    by_key = {p["key"]: p for p in report["partitions"]}
    others = [by_key[part(day=f"d{i}")] for i in range(1, DAYS)]
    assert all(p["status"] == "rewritten" for p in others)
    assert len(report["snapshot_ids"]) == 1  # the untouched partitions: one commit
    assert {p["snapshot_id"] for p in others} == set(report["snapshot_ids"])
    d0 = by_key[part(day="d0")]
    assert d0["status"] == "skipped" and d0["reason"].startswith("re-planned after a conflict")
    table = load_table(catalog, ident)
    operations = [s.summary.operation.value for s in table.snapshots()]
    assert operations == ["append"] * 3 + ["replace"] * 2  # the ad-hoc run's, the batch's
    assert sorted(spark.table(f"lake.`{namespace}`.`events`").collect()) == rows
