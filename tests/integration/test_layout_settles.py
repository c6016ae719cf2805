"""#47: layouts settle. A z-ordered partition whose values are skewed (one value of ``a``
in most rows, so every file's box spans it) is rewritten once at most: cycles of decide +
actor with no new data then commit nothing (the real Spark actor, PyIceberg, Redis)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from icefloe.base.config import DeciderSettings
from icefloe.base.tablestats import REWRITE_ID_PROPERTY
from icefloe.service.actor.loop import run_actor
from icefloe.service.decider.wiring import open_decider
from tests.support.config import make_config

pytestmark = [pytest.mark.spark, pytest.mark.redis, pytest.mark.integration]

T0 = 1_790_000_000.0
POLICY = {
    "target_file_size_bytes": 1 << 20,
    "tolerance_bytes": 1 << 20,  # no merge is due: only the layout decides
    "actions": ["zorder"],
    "zorder": ["a", "b"],
    "clustering_tolerance": 1.0,
}
SCHEMA = Schema(
    NestedField(1, "a", LongType(), required=False),
    NestedField(2, "b", LongType(), required=False),
)


def skewed(i: int, n: int = 2000) -> pa.Table:
    """``a``: 0 in four rows of five, else spread; ``b``: spread over the whole range."""
    a = [0 if (j % 5) else (j * 7919 + i) % 1000 for j in range(n)]
    b = [(j * 104729 + i * 13) % 100_000 for j in range(n)]
    return pa.table({"a": pa.array(a, pa.int64()), "b": pa.array(b, pa.int64())})


def _drain(decider: Any) -> list[str]:
    """Take every queued item and ack it (an actor that ran them); their actions."""
    done = []
    while lease := decider.queue.dequeue(T0, 60):
        done.append(lease.item.action)
        decider.queue.ack(lease.item.id, lease.token)
    return done


def test_icefloes_own_layout_rewrite_is_not_planned_again(
    lake_home: Path, catalog: Any, namespace: str, redis_client: Any
) -> None:
    """A partition whose layout only icefloe's rewrite changed since it was decided is
    measured, not queued again (the churn: each pass re-z-ordered the same rows into
    other cuts of about the same depth); a commit of anyone else's decides it again."""
    cfg = make_config(lake_home, managed={"namespaces": [namespace]}, defaults=POLICY)
    name = f"{namespace}.points"
    table = catalog.create_table(name, schema=SCHEMA)
    for i in range(6):
        table.append(skewed(i))
    decider = open_decider(
        cfg, catalog, redis_client, settings=DeciderSettings(ready_depth=0), clock=lambda: T0
    )
    decider.step(block_ms=None, dispatch_all=True)
    assert _drain(decider) == ["zorder"]

    # icefloe's rewrite (its summary's rewrite id): the same rows, other cuts, as deep
    rows = table.scan().to_arrow()
    with table.transaction() as tx:
        tx.overwrite(rows.slice(0, 6000), snapshot_properties={REWRITE_ID_PROPERTY: "r1"})
        tx.append(rows.slice(6000), snapshot_properties={REWRITE_ID_PROPERTY: "r1"})
    report = decider.step(block_ms=None, dispatch_all=True)
    assert report.applied[0].layout_settled and _drain(decider) == []
    depth = decider.layouts.saved_depths(name)
    assert depth and all(d.mean > 1 for d in depth.values())  # measured, still deep
    # and what status and the kept record say agrees: nothing to do there (settled)
    assert decider.layouts.saved_settled(name) == set(depth)
    kept = decider.health.records([name])[name]
    assert kept["verdicts"] == {} and kept["acting"] == 0

    catalog.load_table(name).append(skewed(7))  # new data: decided again
    decider.step(block_ms=None, dispatch_all=True)
    assert _drain(decider) == ["zorder"]


def test_a_skewed_zorder_settles_after_one_rewrite(
    spark: Any, lake_home: Path, catalog: Any, namespace: str, redis_client: Any
) -> None:
    """End to end, the real actor: four cycles of decide + actor with no new data commit
    one z-order at most, in the first."""
    policy = {**POLICY, "target_file_size_bytes": 1 << 15}  # files of about the target
    cfg = make_config(
        lake_home,
        managed={"namespaces": [namespace]},
        defaults=policy,
        history={"table": f"{namespace}.action_history"},
    )
    name = f"{namespace}.points"
    table = catalog.create_table(name, schema=SCHEMA)
    for i in range(6):
        table.append(skewed(i))
    rows = sorted(table.scan().to_arrow().to_pylist(), key=lambda r: (r["a"], r["b"]))
    decider = open_decider(cfg, catalog, redis_client, settings=DeciderSettings(ready_depth=0))
    snapshots = []
    for _ in range(4):
        decider.step(block_ms=None, dispatch_all=True)
        run_actor(cfg, None, idle_exit=0, spark=spark)
        snapshots.append(len(catalog.load_table(name).snapshots()))
    assert snapshots[0] <= 7  # the six appends, and one z-order rewrite at most
    assert snapshots == [snapshots[0]] * 4, snapshots  # nothing after the first cycle
    after = catalog.load_table(name).scan().to_arrow().to_pylist()
    assert sorted(after, key=lambda r: (r["a"], r["b"])) == rows
