"""The decider keeps each partition's file bounds of a sorted table and queues a sort for
the one partition an out-of-order append clustered too deep: real PyIceberg tables (their
appends write per-file column bounds) and a real Redis."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType

from icefloe.base.config import DeciderSettings
from icefloe.base.layoutspec import LayoutSpec, decided_layout
from icefloe.base.tablestats import current_partitions
from icefloe.service.decider.wiring import open_decider
from icefloe.service.observe.tables import table_summary
from icefloe.state.layout import LayoutDelta, depths, signature
from icefloe.state.layout.memory import MemoryLayouts
from icefloe.state.layout.scan import partition_bounds
from icefloe.state.rolling.memory import MemoryStats
from icefloe.state.rolling.scan import catch_up, snapshot_delta
from tests.support.config import make_config, part

pytestmark = [pytest.mark.redis, pytest.mark.integration]

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "region", StringType(), required=False),
)
SPEC = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "region"))
REGIONS = [f"r{i}" for i in range(6)]
T0 = 1_790_000_000.0


def rows(ids_by_region: dict[str, range]) -> pa.Table:
    ids = [i for r in ids_by_region.values() for i in r]
    regions = [reg for reg, r in ids_by_region.items() for _ in r]
    return pa.table({"id": pa.array(ids, pa.int64()), "region": pa.array(regions, pa.string())})


def in_order(table: Any, rounds: range) -> None:
    """One file per region per append, each round's ids above the last's."""
    for i in rounds:
        table.append(rows({reg: range(i * 100, i * 100 + 100) for reg in REGIONS}))


POLICY = {
    "target_file_size_bytes": 1 << 20,
    "tolerance_bytes": 1 << 20,  # no merge is due: only the layout decides
    "min_input_files": 2,
    "actions": ["sort"],
    "sort_order": ["id"],
    "clustering_tolerance": 1.5,
}


@pytest.fixture
def setup(lake_home: Path, catalog: Any, namespace: str, redis_client: Any) -> Any:
    cfg = make_config(lake_home, managed={"namespaces": [namespace]}, defaults=POLICY)
    tables = {
        name: catalog.create_table(f"{namespace}.{name}", schema=SCHEMA, partition_spec=SPEC)
        for name in ("events", "ordered")
    }
    decider = open_decider(
        cfg, catalog, redis_client, settings=DeciderSettings(ready_depth=0), clock=lambda: T0
    )
    return cfg, tables, decider


def test_one_out_of_order_append_queues_one_sort_for_its_partition(
    setup: Any, namespace: str
) -> None:
    cfg, tables, decider = setup
    events, ordered = f"{namespace}.events", f"{namespace}.ordered"
    for table in tables.values():
        in_order(table, range(3))
    report = decider.step()
    assert all(r.full_scan for r in report.applied) and report.enqueued == 0
    assert set(decider.layouts.partitions(events)) == {part(region=r) for r in REGIONS}
    # one partition gets an append whose ids overlap every file it has
    tables["events"].append(rows({"r3": range(5, 295, 10)}))
    in_order(tables["ordered"], range(3, 5))
    report = decider.step()
    assert not any(r.full_scan for r in report.applied)
    assert report.enqueued == 1
    key = part(region="r3")
    touched = {r.table: r.layout_touched for r in report.applied}  # rolling, not rebuilt
    assert touched == {events: {key}, ordered: {part(region=r) for r in REGIONS}}
    item = decider.queue.get(f"sort:{events}:{key}")
    assert item is not None and item.action == "sort" and item.partition == key
    assert item.reason.startswith("depth 2 > 1.5 (max 2) over 4 files"), item.reason
    for name in (events, ordered):
        found = depths(decider.layouts.files(name))
        assert {k for k, d in found.items() if d.mean > 1} == ({key} if name == events else set())
    # the rolling bounds are the full rebuild's
    table = tables["events"]
    spec = decided_layout(table, cfg.policy_for(events, table.properties))
    assert spec is not None
    rebuilt = partition_bounds(spec, current_partitions(table, layout=spec))
    assert decider.layouts.files(events) == rebuilt
    # replaying the last snapshot (a crash before the stats' transaction) changes nothing
    files: dict[str, LayoutDelta] = {}
    snapshot_delta(table, table.current_snapshot().snapshot_id, None, spec, files)
    assert list(files) == [key] and len(files[key].added) == 1
    decider.layouts.update(events, signature(spec), files)
    assert decider.layouts.files(events) == rebuilt
    report = decider.step()
    assert report.applied == [] and report.enqueued == 0
    assert decider.layouts.files(events) == rebuilt


def test_a_new_layout_rebuilds_and_no_layout_forgets(catalog: Any, namespace: str) -> None:
    """On the scan alone (in-memory stores): the first catch-up rebuilds; a changed layout
    (sort → z-order) is rebuilt from the current files while the stats roll on; a table
    that no longer has a layout has its bounds dropped."""
    table = catalog.create_table(f"{namespace}.t", schema=SCHEMA, partition_spec=SPEC)
    name, stats, layouts = f"{namespace}.t", MemoryStats(), MemoryLayouts()
    sort = LayoutSpec("sort", ("id",), (1,), (LongType(),), 1.5)
    zorder = LayoutSpec("zorder", ("id", "region"), (1, 2), (LongType(), StringType()), 1.5)
    in_order(table, range(2))
    first = catch_up(stats, name, table, 1 << 20, T0, sort, layouts)
    assert first.full_scan and first.layout_touched == {part(region=r) for r in REGIONS}
    assert layouts.signature(name) == "sort:id"
    in_order(table, range(2, 3))
    result = catch_up(stats, name, table, 1 << 20, T0, zorder, layouts)
    assert not result.full_scan and result.snapshots_applied == 1
    assert result.layout_touched == first.layout_touched and layouts.signature(name) == (
        "zorder:id,region;boxes"
    )
    assert all(len(fs) == 3 and len(fs[0].lower or ()) == 2 for fs in layouts.files(name).values())
    in_order(table, range(3, 4))
    assert catch_up(stats, name, table, 1 << 20, T0, None, layouts).layout_touched == set()
    assert layouts.signature(name) is None and layouts.files(name) == {}


def test_a_layout_new_to_a_quiet_table_is_built_and_decided(
    lake_home: Path, catalog: Any, namespace: str, redis_client: Any
) -> None:
    """The policy turns to sort with no snapshot since the last pass: the next pass builds
    the layout from the current files and queues the partition clustered too deep."""
    table = catalog.create_table(f"{namespace}.events", schema=SCHEMA, partition_spec=SPEC)
    in_order(table, range(3))
    table.append(rows({"r1": range(5, 295, 10)}))
    managed = {"namespaces": [namespace]}
    merging = make_config(lake_home, managed=managed, defaults={**POLICY, "actions": ["merge"]})
    settings = DeciderSettings(ready_depth=0)
    kw: dict[str, Any] = {"settings": settings, "clock": lambda: T0, "consumer": "d1"}
    first = open_decider(merging, catalog, redis_client, **kw)
    assert first.step().enqueued == 0
    assert first.layouts.signature(f"{namespace}.events") is None
    cfg = make_config(lake_home, managed=managed, defaults=POLICY)
    decider = open_decider(cfg, catalog, redis_client, **kw)  # the same one, restarted
    report = decider.step()
    assert report.applied == [] and report.enqueued == 1
    assert decider.queue.get(f"sort:{namespace}.events:{part(region='r1')}") is not None
    assert decider.step().enqueued == 0  # built once


def test_a_sorted_partition_is_merged_only_where_small_neighbours_are(
    lake_home: Path, catalog: Any, namespace: str, redis_client: Any
) -> None:
    """Two small files with a near-target one between them in key order (region r0) hold
    a merge for the sums, but the actor merges neighbours only: not queued. Side by side
    (r1) they are. Neither partition is clustered too deep."""
    table = catalog.create_table(f"{namespace}.events", schema=SCHEMA, partition_spec=SPEC)
    table.append(rows({"r0": range(0, 10), "r1": range(0, 10)}))
    table.append(rows({"r0": range(5000, 5010), "r1": range(10, 20)}))
    table.append(rows({"r0": range(100, 3100), "r1": range(100, 3100)}))
    sizes = {f.file.file_size_in_bytes for f in table.scan().plan_files()}
    big, small = max(sizes), min(sizes)
    target = int(big / 0.8)  # the big file is not small (>= 0.75 T), the small ones are
    assert 2 * max(sizes - {big}) <= target and 4 * small < 3 * target
    policy = {**POLICY, "target_file_size_bytes": target, "tolerance_bytes": 0}
    cfg = make_config(lake_home, managed={"namespaces": [namespace]}, defaults=policy)
    decider = open_decider(
        cfg, catalog, redis_client, settings=DeciderSettings(ready_depth=0), clock=lambda: T0
    )
    assert decider.step().enqueued == 1
    name = f"{namespace}.events"
    assert decider.queue.get(f"sort:{name}:{part(region='r1')}") is not None
    assert decider.queue.get(f"sort:{name}:{part(region='r0')}") is None
    # `icefloe tables` (from metadata) says the same of what the decider would queue
    parts = table_summary(cfg, catalog, name)["partitions"]
    assert {p["key"]: p["needs_work"] for p in parts} == {
        part(region="r0"): False,
        part(region="r1"): True,
    }
