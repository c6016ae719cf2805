"""``icefloe.jobs.maintenance.orphans``: an abandoned attempt's files that no retained snapshot
references are deleted; every referenced one stays (PyIceberg tables, no Spark)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.jobs.maintenance.orphans import list_prefix, referenced, remove_unreferenced

pytestmark = [pytest.mark.integration]


def small_table(catalog: Any, ident: str, appends: int = 3) -> Any:
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField

    table = catalog.create_table(ident, schema=Schema(NestedField(1, "id", LongType())))
    for i in range(appends):
        table.append(pa.table({"id": pa.array([i], pa.int64())}))
    return catalog.load_table(ident)


def data_files(table: Any) -> list[str]:
    return [t.file.file_path for t in table.scan().plan_files()]


def stray(location: str) -> str:
    path = Path(location.removeprefix("file:").removeprefix("//"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"PAR1 half a file")
    return location


def test_strays_go_and_referenced_files_stay(catalog: Any, namespace: str) -> None:
    table = small_table(catalog, f"{namespace}.t")
    started = time.time()
    live = data_files(table)
    data = f"{table.location()}/data"
    exact = stray(f"{data}/icefloe-x-00000.parquet")
    prefix = f"{data}/icefloe-r1/"
    under = [stray(f"{prefix}day=1/a.parquet"), stray(f"{prefix}day=2/b.parquet")]
    # a file of the attempt that was committed (then replaced: an older snapshot keeps it)
    table.append(pa.table({"id": pa.array([9], pa.int64())}))
    table = catalog.load_table(f"{namespace}.t")
    committed = (set(data_files(table)) - set(live)).pop()
    kept_by = table.current_snapshot().snapshot_id
    table.overwrite(pa.table({"id": pa.array([7], pa.int64())}))

    removed = remove_unreferenced(
        table, [exact, committed, f"{data}/never-written.parquet"], [prefix], started
    )
    assert sorted(removed.deleted) == sorted([exact, *under])
    assert removed.referenced == [committed] and removed.missing == 1
    for path in [exact, *under]:
        assert not Path(path.removeprefix("file:").removeprefix("//")).exists()
    assert catalog.load_table(f"{namespace}.t").scan().to_arrow().num_rows == 1
    assert len(table.scan(snapshot_id=kept_by).to_arrow()) == 4  # time travel still reads


def test_referenced_reads_only_new_manifests_and_agrees_with_all(
    catalog: Any, namespace: str
) -> None:
    """The cut-off (manifests added before the attempt are skipped) finds the same files as
    reading every manifest, for files written after the attempt began."""
    table = small_table(catalog, f"{namespace}.r", appends=4)
    old = set(data_files(table))
    started = time.time()
    for i in range(3):
        table.append(pa.table({"id": pa.array([10 + i], pa.int64())}))
    table = catalog.load_table(f"{namespace}.r")
    new = set(data_files(table)) - old
    candidates = sorted(new) + [f"{table.location()}/data/other.parquet"]
    assert referenced(table, candidates, since=started) == new
    assert referenced(table, candidates, since=0.0) == new


def test_list_prefix_keeps_the_prefix_spelling(catalog: Any, namespace: str) -> None:
    table = small_table(catalog, f"{namespace}.l", appends=1)
    prefix = f"{table.location()}/data/icefloe-q/"
    assert list_prefix(table.io, prefix) == []  # not there at all
    made = stray(f"{prefix}p=1/f.parquet")
    assert list_prefix(table.io, prefix) == [made]
