"""Z-order keys: order-preserving column maps, interleaving against a bit-by-bit reference,
and the point of it all: z-ordered files span less of every column than a plain sort."""

from __future__ import annotations

import math
from datetime import UTC, date, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe.optimizer import FileBounds, clustering_depth
from icefloe.optimizer.zorder import (
    ordered_bytes,
    ordered_date,
    ordered_float,
    ordered_int,
    ordered_str,
    ordered_timestamp,
    ordered_value,
    zorder_bytes,
    zorder_key,
)

pytestmark = pytest.mark.unit

SETTINGS = settings(max_examples=300, deadline=None, database=None)


def slow_interleave(values: list[int], bits: int) -> int:
    """Column 0's top bit, column 1's top bit, ..., then the next bit of each: as a string."""
    out = ""
    for b in range(bits - 1, -1, -1):
        for v in values:
            out += str((v >> b) & 1)
    return int(out, 2)


@SETTINGS
@given(
    st.integers(1, 70).flatmap(
        lambda bits: st.tuples(
            st.just(bits), st.lists(st.integers(0, 2**bits - 1), min_size=1, max_size=5)
        )
    )
)
def test_interleave_matches_the_bit_by_bit_reference(case: tuple[int, list[int]]) -> None:
    bits, values = case
    assert zorder_key(values, bits) == slow_interleave(values, bits)


def test_interleave_puts_column_zero_first() -> None:
    assert zorder_key([0b10, 0b00], bits=2) == 0b1000
    assert zorder_key([0b00, 0b10], bits=2) == 0b0100
    assert zorder_key([0b01, 0b01], bits=2) == 0b0011
    assert zorder_bytes([0xFF, 0x00], bits=8) == bytes([0xAA, 0xAA])
    with pytest.raises(ValueError):
        zorder_key([4], bits=2)
    with pytest.raises(ValueError):
        zorder_key([])


def check_order(a: object, b: object, key: int, other: int) -> None:
    if a < b:  # type: ignore[operator]
        assert key < other
    elif b < a:  # type: ignore[operator]
        assert other < key


@SETTINGS
@given(st.integers(-(2**63), 2**63 - 1), st.integers(-(2**63), 2**63 - 1))
def test_ints_keep_their_order(a: int, b: int) -> None:
    check_order(a, b, ordered_int(a), ordered_int(b))
    assert 0 <= ordered_int(a) < 2**64


@SETTINGS
@given(st.floats(allow_nan=False), st.floats(allow_nan=False))
def test_floats_keep_their_order(a: float, b: float) -> None:
    check_order(a, b, ordered_float(a), ordered_float(b))


@SETTINGS
@given(st.dates(), st.dates())
def test_dates_keep_their_order(a: date, b: date) -> None:
    check_order(a, b, ordered_date(a), ordered_date(b))


@SETTINGS
@given(st.datetimes(), st.datetimes(), st.sampled_from([None, UTC, timezone(timedelta(hours=-7))]))
def test_timestamps_keep_their_order(a: datetime, b: datetime, tz: timezone | None) -> None:
    a, b = a.replace(tzinfo=tz), b.replace(tzinfo=tz)
    check_order(a, b, ordered_timestamp(a), ordered_timestamp(b))


@SETTINGS
@given(st.text(), st.text(), st.binary(), st.binary())
def test_strings_and_bytes_keep_their_order_up_to_ties(s: str, t: str, x: bytes, y: bytes) -> None:
    if s < t:
        assert ordered_str(s) <= ordered_str(t)
    if x < y:
        assert ordered_bytes(x) <= ordered_bytes(y)


def test_iceberg_byte_layout() -> None:
    """The values Iceberg's ZOrderByteUtils writes for the same inputs."""
    assert ordered_int(0) == 0x8000_0000_0000_0000
    assert ordered_int(-1) == 0x7FFF_FFFF_FFFF_FFFF
    assert ordered_float(1.0) == 0xBFF0_0000_0000_0000
    assert ordered_float(-1.0) == 0x400F_FFFF_FFFF_FFFF
    assert ordered_float(-0.0) < ordered_float(0.0)
    assert ordered_float(-math.inf) < ordered_float(-1e308) and ordered_float(math.inf) > 1 << 63
    assert ordered_str("ab") == 0x6162_0000_0000_0000
    assert ordered_str("abcdefghij") == ordered_str("abcdefgh")  # truncated to 8 bytes
    assert ordered_date(date(1970, 1, 2)) == (1 << 63) + 1
    assert ordered_timestamp(datetime(1970, 1, 1, 0, 0, 1)) == (1 << 63) + 1_000_000
    aware = datetime(1970, 1, 1, 1, tzinfo=timezone(timedelta(hours=1)))
    assert ordered_timestamp(aware) == 1 << 63


def test_ordered_value_dispatches_by_type() -> None:
    assert ordered_value(None) == 0
    assert ordered_value(True) == ordered_int(1)
    assert ordered_value(-5) == ordered_int(-5)
    assert ordered_value(2.5) == ordered_float(2.5)
    assert ordered_value("x") == ordered_str("x")
    assert ordered_value(b"x") == ordered_bytes(b"x")
    assert ordered_value(date(2020, 1, 1)) == ordered_date(date(2020, 1, 1))
    assert ordered_value(datetime(2020, 1, 1, 5)) == ordered_timestamp(datetime(2020, 1, 1, 5))
    with pytest.raises(TypeError):
        ordered_value(object())


def files_of(points: list[tuple[int, int]], per_file: int) -> list[list[tuple[int, int]]]:
    return [points[k : k + per_file] for k in range(0, len(points), per_file)]


def column_depth(files: list[list[tuple[int, int]]], column: int) -> int:
    bounds = [
        FileBounds(k, 1, (min(p[column] for p in f),), (max(p[column] for p in f),))
        for k, f in enumerate(files)
    ]
    return clustering_depth(bounds).max


def test_zorder_files_span_less_of_each_column_than_a_sort() -> None:
    """A 16x16 grid cut into 16 files of 16 rows: sorted by (x, y), every file spans all
    of y (a filter on y opens all 16 files); z-ordered, every file is a 4x4 square, so
    a filter on either column opens at most 4."""
    grid = [(x, y) for x in range(16) for y in range(16)]
    by_x = files_of(sorted(grid), 16)
    by_z = files_of(sorted(grid, key=lambda p: zorder_key([p[0], p[1]], bits=4)), 16)
    assert (column_depth(by_x, 0), column_depth(by_x, 1)) == (1, 16)
    assert (column_depth(by_z, 0), column_depth(by_z, 1)) == (4, 4)
    extent = [max(p[c] for p in f) - min(p[c] for p in f) + 1 for f in by_z for c in (0, 1)]
    assert extent == [4] * 32
