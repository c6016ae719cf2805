"""Position deletes in the Arrow engine (no Spark): the rows a position delete file names
are exactly the rows left out, whatever batch they fall in, and nothing else is."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icefloe.jobs.rewrite import arrow_deletes
from icefloe.jobs.rewrite import arrow_engine as ar
from icefloe.jobs.rewrite.arrow_deletes import DeleteIndex, drop_positions
from tests.support.arrow import arrow_group, arrow_table, make_table, read_files

pytestmark = pytest.mark.unit


@pytest.fixture
def table(tmp_path: Path) -> Any:
    """Five appends (five files) of 300 rows, with nulls, NaN and -0.0."""
    return make_table(tmp_path)


def _deletes(path: Path, rows: list[tuple[str, int]]) -> str:
    """A position delete file (file_path, pos) at ``path``; its location."""
    data = pa.table(
        {
            "file_path": pa.array([p for p, _ in rows], pa.string()),
            "pos": pa.array([n for _, n in rows], pa.int64()),
        }
    )
    pq.write_table(data, path)
    return f"file://{path}"


def _with_deletes(group: ar.ArrowGroup, by_path: dict[str, tuple[str, ...]]) -> ar.ArrowGroup:
    """``group`` with the position delete files of each input named in ``by_path``."""
    deletes = tuple(by_path.get(path, ()) for path, _ in group.inputs)
    return ar.ArrowGroup(group.group_id, group.spec_id, group.inputs, group.outputs, (), deletes)


def _io() -> Any:
    from pyiceberg.io.pyarrow import PyArrowFileIO

    return PyArrowFileIO()


def test_positions_are_this_files_distinct_in_range_ones(tmp_path: Path) -> None:
    a = _deletes(tmp_path / "a.parquet", [("f1", 3), ("f2", 1), ("f1", 0), ("f1", 3)])
    b = _deletes(tmp_path / "b.parquet", [("f1", 9), ("f1", 10), ("f1", -1), ("f1", 5)])
    index = DeleteIndex(_io())
    assert index.positions("f1", [a, b], records=10).to_pylist() == [0, 3, 5, 9]
    assert index.positions("f2", [a, b], records=10).to_pylist() == [1]
    assert index.positions("f3", [a], records=10).to_pylist() == []


@pytest.mark.parametrize("few", [0, 3, 64])  # filtered by a mask / sliced out / mixed
@pytest.mark.parametrize("sizes", [[10], [3, 3, 4], [1] * 10, [0, 5, 0, 5], [300, 1, 200]])
def test_drop_positions_across_batches_equals_a_brute_force_filter(
    sizes: list[int], few: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(arrow_deletes, "FEW", few)
    rng = np.random.default_rng(sum(sizes) + len(sizes))
    values = np.arange(sum(sizes))
    batches, start = [], 0
    for n in sizes:
        batches.append(pa.record_batch({"v": pa.array(values[start : start + n])}))
        start += n
    for _ in range(20):
        positions = np.unique(rng.integers(0, len(values), rng.integers(0, len(values) + 1)))
        shuffled = pa.array(rng.permutation(positions), pa.int64())  # order does not matter
        kept = pa.Table.from_batches(drop_positions(batches, shuffled)).column("v").to_pylist()
        assert kept == [v for v in values.tolist() if v not in set(positions.tolist())]


def test_a_group_with_position_deletes_writes_exactly_the_live_rows(table, tmp_path):
    files = [t.file for t in table.scan().plan_files()]
    first, second = files[0].file_path, files[1].file_path
    # two delete files on the first data file (one position twice), one on the second that
    # deletes every one of its rows, and an entry for a file outside the group
    d1 = _deletes(tmp_path / "d1.parquet", [(first, 0), (first, 299), ("elsewhere", 1)])
    d2 = _deletes(tmp_path / "d2.parquet", [(first, 150), (first, 0)])
    d3 = _deletes(tmp_path / "d3.parquet", [(second, n) for n in range(300)])
    group = _with_deletes(arrow_group(table, 2, tmp_path), {first: (d1, d2), second: (d3,)})
    result = ar.rewrite_group(arrow_table(table), group)
    written = read_files([p for p, _ in result.files])
    by_file = {f.file_path: pq.read_table(f.file_path.removeprefix("file://")) for f in files}
    gone = set(by_file[first].column("id").to_pylist()[i] for i in (0, 150, 299))
    gone |= set(by_file[second].column("id").to_pylist())
    want = sorted(i for t in by_file.values() for i in t.column("id").to_pylist() if i not in gone)
    assert sorted(written.column("id").to_pylist()) == want
    assert result.rows_in == sum(n for _, n in result.files) == 1500 - 303


def test_a_delete_naming_a_row_the_file_lacks_fails_nothing_and_drops_nothing(table, tmp_path):
    files = [t.file for t in table.scan().plan_files()]
    only = files[0].file_path
    d = _deletes(tmp_path / "d.parquet", [(only, 300), (only, 10**9)])
    group = _with_deletes(arrow_group(table, 1, tmp_path), {only: (d,)})
    result = ar.rewrite_group(arrow_table(table), group)
    assert result.rows_in == 1500


def test_row_numbers_grow_and_are_sliced() -> None:
    assert arrow_deletes._row_numbers(5).to_pylist() == [0, 1, 2, 3, 4]
    big = arrow_deletes._row_numbers(300_000)  # longer than the first build: rebuilt
    assert len(big) == 300_000 and big[0].as_py() == 0 and big[-1].as_py() == 299_999
    assert arrow_deletes._row_numbers(3).to_pylist() == [0, 1, 2]
