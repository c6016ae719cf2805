"""Z-order keys over Arrow columns (:mod:`icefloe.jobs.rewrite.zorder_rows`) against the pure
reference (:func:`icefloe.optimizer.zorder.zorder_bytes` of ``ordered_value``), row for row; their
sort; and the Arrow engine writing a group in z-order (no Spark)."""

from __future__ import annotations

import dataclasses
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe.jobs.rewrite import arrow_engine as ar
from icefloe.jobs.rewrite.zorder_rows import (
    _interleave,
    aligned_cuts,
    cut_levels,
    keys_of,
    ordered,
    zorder_keys,
    zorder_sort_indices,
    zordered_files,
)
from icefloe.optimizer.zorder import ordered_value, zorder_bytes
from tests.support.arrow import arrow_group, arrow_table, make_table, read_files
from tests.support.zorder import assert_zordered

pytestmark = pytest.mark.unit

SETTINGS = settings(max_examples=300, deadline=None, database=None)

# Each kind of column: the Arrow type, and its values (None: null)
KINDS: dict[str, tuple[pa.DataType, st.SearchStrategy[Any]]] = {
    "int64": (pa.int64(), st.integers(-(2**63), 2**63 - 1)),
    "int32": (pa.int32(), st.integers(-(2**31), 2**31 - 1)),
    "int8": (pa.int8(), st.integers(-128, 127)),
    "uint32": (pa.uint32(), st.integers(0, 2**32 - 1)),
    "float64": (pa.float64(), st.floats() | st.sampled_from([0.0, -0.0, float("-inf")])),
    "float32": (pa.float32(), st.floats(width=32)),
    "string": (pa.string(), st.text() | st.sampled_from(["", "é", "exactly8", "日本語の文字列"])),
    "large_string": (pa.large_string(), st.text(max_size=12)),
    "binary": (pa.binary(), st.binary(max_size=12)),
    "fixed_binary": (pa.binary(3), st.binary(min_size=3, max_size=3)),
    "date": (pa.date32(), st.dates()),
    "timestamp": (pa.timestamp("us"), st.datetimes()),
    "timestamptz": (pa.timestamp("us", "UTC"), st.datetimes(timezones=st.just(UTC))),
    "timestamp_ns": (pa.timestamp("ns"), st.integers(-(2**63) + 1, 2**63 - 1)),
    "bool": (pa.bool_(), st.booleans()),
}


def reference(table: pa.Table, columns: list[str]) -> list[bytes]:
    """``icefloe.optimizer.zorder``'s key of each row, from its Python values."""
    return [
        zorder_bytes([ordered_value(row[c]) for c in columns])
        for row in table.select(columns).to_pylist()
    ]


@st.composite
def tables(draw: st.DrawFn) -> pa.Table:
    """2..4 columns of random kinds (sometimes dictionary-encoded, sometimes in several
    chunks), 0..40 rows, any value possibly null."""
    kinds = draw(st.lists(st.sampled_from(sorted(KINDS)), min_size=2, max_size=4))
    rows = draw(st.integers(0, 40))
    columns = {}
    for i, kind in enumerate(kinds):
        arrow_type, values = KINDS[kind]
        cells = draw(st.lists(st.none() | values, min_size=rows, max_size=rows))
        array = pa.array(cells, arrow_type)
        if kind == "string" and draw(st.booleans()):
            array = array.dictionary_encode()
        cut = draw(st.integers(0, rows))
        columns[f"c{i}_{kind}"] = pa.chunked_array([array[:cut], array[cut:]], array.type)
    return pa.table(columns)


@SETTINGS
@given(tables())
def test_keys_equal_the_reference_row_for_row(table: pa.Table) -> None:
    columns = table.column_names
    keys = zorder_keys(table, columns)
    assert keys.type == pa.binary(8 * len(columns))
    assert keys.to_pylist() == reference(table, columns)


@SETTINGS
@given(tables())
def test_sort_indices_put_the_keys_in_ascending_order_stably(table: pa.Table) -> None:
    columns = table.column_names
    keys = reference(table, columns)
    order = zorder_sort_indices(table, columns).to_pylist()
    assert order == sorted(range(len(keys)), key=lambda i: keys[i])  # Python's sort is stable
    one_file = list(zordered_files(iter(table.to_batches(max_chunksize=7)), columns, 1))
    if order:  # NaN != NaN in Arrow's equality: compared bit for bit
        assert ar._bitwise(pa.concat_tables(one_file)).equals(ar._bitwise(table.take(order)))
    else:
        assert one_file == []


def test_a_sliced_string_array_reads_its_own_bytes() -> None:
    """An array with an offset into shared buffers (a slice) maps its own values."""
    whole = pa.array(["zzzzzzzzzz", "apple", None, "b", "", "longer than eight"])
    part = whole[1:5]
    assert part.offset == 1
    ints = pa.array([1, 2, 3, 4], pa.int64())
    assert keys_of([part, ints]).to_pylist() == [
        zorder_bytes([ordered_value(s), ordered_value(i)])
        for s, i in zip(part.to_pylist(), ints.to_pylist(), strict=True)
    ]


def test_types_without_a_mapping_and_no_columns_are_refused() -> None:
    decimals = pa.table({"d": pa.array([Decimal("1.5")]), "i": pa.array([1])})
    with pytest.raises(TypeError, match="no z-order mapping"):
        zorder_keys(decimals, ["d", "i"])
    with pytest.raises(TypeError, match="no z-order mapping"):
        zorder_keys(decimals.slice(0, 0), ["d", "i"])  # not even with no rows
    with pytest.raises(ValueError, match="at least one column"):
        zorder_keys(decimals, [])
    nulls = pa.table({"n": pa.nulls(2), "i": pa.array([1, None])})
    assert zorder_keys(nulls, ["n", "i"]).to_pylist() == reference(nulls, ["n", "i"])


def test_many_rows_of_mixed_types_come_out_ascending() -> None:
    """Vectorized over many rows of four columns of different types."""
    rng = np.random.default_rng(3)
    n = 200_000
    table = pa.table(
        {
            "a": rng.integers(-(10**9), 10**9, n),
            "b": rng.random(n),
            "c": pa.array(rng.integers(0, 10**6, n)).cast(pa.string()),
            "d": pa.array(rng.integers(0, 20_000, n).astype("int32")).cast(pa.date32()),
        }
    )
    keys = zorder_keys(table, table.column_names)
    order = zorder_sort_indices(table, table.column_names)
    ordered = keys.take(order)
    head = ordered.slice(0, 1000).to_pylist()
    assert head == sorted(head) and len(ordered) == n


def test_the_arrow_engine_writes_a_group_in_zorder(tmp_path: Path) -> None:
    """Three output files of the five input files' rows: every row once, each file in
    z-order, the files' key ranges apart."""
    table = make_table(tmp_path)
    columns = ("name", "x")
    group = dataclasses.replace(arrow_group(table, 3, tmp_path), zorder_columns=columns)
    result = ar.rewrite_group(arrow_table(table), group)
    counts = [n for _, n in result.files]  # cut at cell edges within a quarter of a share
    assert sum(counts) == 1500 and all(375 <= n <= 625 for n in counts), counts
    files = [pq.read_table(p.removeprefix("file://")) for p, _ in result.files]
    assert all(f.column_names == ["id", "name", "x"] for f in files)  # no key column
    assert_zordered(files, columns)
    written = read_files([p for p, _ in result.files]).sort_by("id")
    before = table.scan().to_arrow().sort_by("id")
    assert written.column("id").equals(before.column("id"))
    assert written.column("name").equals(before.column("name"))
    same_x = written.column("x").to_numpy().view("int64") == before.column("x").to_numpy().view(
        "int64"
    )
    assert same_x.all()


def test_the_zorder_key_is_the_same_for_dates_and_timestamps_as_stored() -> None:
    """Dates are days and timestamps microseconds since the epoch, as Iceberg stores them."""
    day, moment = date(1969, 12, 31), datetime(1970, 1, 1, 0, 0, 0, 1)
    table = pa.table({"d": pa.array([day]), "t": pa.array([moment], pa.timestamp("us"))})
    want = zorder_bytes([(1 << 63) - 1, (1 << 63) + 1])
    assert zorder_keys(table, ["d", "t"]).to_pylist() == [want]


def _key_ints(words: list[Any]) -> list[int]:
    return [sum(int(w[i]) << (64 * j) for j, w in enumerate(words)) for i in range(len(words[0]))]


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1)), max_size=40))
def test_cut_levels_are_the_highest_differing_bit(points: list[tuple[int, int]]) -> None:
    xs = np.array([p[0] for p in points], np.uint64)
    ys = np.array([p[1] for p in points], np.uint64)
    words = _interleave([xs, ys])
    keys = _key_ints(words)
    want = [(a ^ b).bit_length() - 1 for a, b in zip(keys, keys[1:], strict=False)]
    assert cut_levels(words).tolist() == want


def _zordered(xs: list[int], ys: list[int]) -> list[Any]:
    words = _interleave([np.array(xs, np.uint64), np.array(ys, np.uint64)])
    order = sorted(range(len(xs)), key=_key_ints(words).__getitem__)
    return [w[order] for w in words]


def test_files_are_cut_at_the_coarsest_cell_edge_near_an_equal_share() -> None:
    """50 rows in one x block, 40 in the next: two files cut between the blocks (at 50,
    not 45), so their boxes do not overlap; a share's quarter is as far as a cut moves."""
    rng = np.random.default_rng(1)
    xs = [*rng.integers(0, 1024, 50).tolist(), *rng.integers(1024, 2048, 40).tolist()]
    ys = rng.integers(0, 1024, 90).tolist()
    words = _zordered(xs, ys)
    assert aligned_cuts(words, 2) == [50]
    assert aligned_cuts(words, 2, slack=0.0) == [45]  # no slack: by row count
    cuts = aligned_cuts(words, 4)
    assert cuts == sorted(set(cuts)) and all(
        abs(c - round(i * 22.5)) <= 5 for i, c in enumerate(cuts, 1)
    )
    assert aligned_cuts(words, 1) == [] and aligned_cuts(_zordered([1], [1]), 3) == []


def test_equal_keys_are_cut_by_row_count() -> None:
    words = _zordered([7] * 10, [7] * 10)
    assert aligned_cuts(words, 3) == [3, 7]
    assert aligned_cuts(words, 12) == list(range(1, 10))  # more files than rows: one each


def test_zordered_files_cover_every_row_in_order() -> None:
    """Rows as read (any order) come out z-ordered, cut where the sorted keys say."""
    rng = np.random.default_rng(2)
    table = pa.table({"x": rng.integers(0, 1 << 20, 200), "y": rng.integers(0, 1 << 20, 200)})
    in_order = table.take(zorder_sort_indices(table, ["x", "y"]))
    parts = list(zordered_files(iter(table.to_batches(max_chunksize=37)), ["x", "y"], 3))
    assert len(parts) == 3 and pa.concat_tables(parts).equals(in_order)
    words = _interleave([ordered(in_order.column(c)) for c in ("x", "y")])
    assert [len(p) for p in parts[:-1]] == np.diff([0, *aligned_cuts(words, 3)]).tolist()


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 255), st.integers(0, 255)), min_size=2, max_size=300),
    st.integers(1, 12),
)
def test_every_file_keeps_within_the_slack_of_a_share(
    points: list[tuple[int, int]], files: int
) -> None:
    words = _zordered([p[0] for p in points], [p[1] for p in points])
    n = len(points)
    cuts = aligned_cuts(words, files)
    assert cuts == sorted(set(cuts)) and all(0 < c < n for c in cuts)
    assert len(cuts) == min(files, n) - 1
    if files <= n // 8:  # enough rows a file for the rounding not to matter
        sizes = [b - a for a, b in zip([0, *cuts], [*cuts, n], strict=True)]
        share = n / files
        assert all(0.75 * share - 1 <= s <= 1.25 * share + 1 for s in sizes), sizes
