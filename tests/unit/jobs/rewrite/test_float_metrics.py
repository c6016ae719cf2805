"""icefloe.jobs.rewrite.float_metrics: a file's floating-point columns counted as Iceberg's writer
counts them (NaN counts; bounds without NaN, -0.0 below 0.0; a struct's nulls its fields'
nulls; nothing for list elements). The integration test compares them with Iceberg's."""

from __future__ import annotations

import math

import pyarrow as pa
import pytest

from icefloe.jobs.rewrite.float_metrics import FloatMetrics, float_metrics

pytestmark = pytest.mark.unit

NAN = float("nan")


def field(name: str, kind: pa.DataType, field_id: int) -> pa.Field:
    return pa.field(name, kind, metadata={b"PARQUET:field_id": str(field_id).encode()})


def test_counts_and_bounds_as_icebergs_writer_keeps_them():
    struct = pa.struct([field("x", pa.float32(), 4), field("n", pa.int32(), 5)])
    schema = pa.schema(
        [
            field("d", pa.float64(), 1),
            field("f", pa.float32(), 2),
            field("s", struct, 3),
            field("l", pa.list_(field("element", pa.float64(), 7)), 6),
            field("i", pa.int64(), 8),
        ]
    )
    rows = pa.Table.from_pydict(
        {
            "d": [NAN, None, -0.0, 0.0, 2.5],
            "f": [NAN, NAN, None, None, NAN],
            "s": [{"x": -0.0, "n": 1}, None, {"x": NAN, "n": 2}, {"x": None, "n": 3}, None],
            "l": [[NAN], [], None, [1.0], [2.0]],
            "i": [1, 2, 3, 4, 5],
        },
        schema=schema,
    )
    got = {m.field_id: m for m in float_metrics(rows)}
    assert set(got) == {1, 2, 4}
    assert got[1] == FloatMetrics(1, True, 5, 1, 1, -0.0, 2.5)
    assert math.copysign(1, got[1].lower) == -1 and math.copysign(1, got[1].upper) == 1
    assert got[2] == FloatMetrics(2, False, 5, 2, 3, None, None)
    assert got[4] == FloatMetrics(4, False, 5, 3, 1, -0.0, -0.0)
    assert math.copysign(1, got[4].upper) == -1  # only -0.0: it is both bounds


def test_zeros_of_one_sign_and_infinities():
    schema = pa.schema([field("d", pa.float64(), 1)])
    (plus,) = float_metrics(pa.Table.from_pydict({"d": [0.0, 1.0, -math.inf]}, schema=schema))
    assert (plus.lower, plus.upper) == (-math.inf, 1.0)
    (zero,) = float_metrics(pa.Table.from_pydict({"d": [0.0, 0.0]}, schema=schema))
    assert math.copysign(1, zero.lower) == 1 and math.copysign(1, zero.upper) == 1
    (mixed,) = float_metrics(pa.Table.from_pydict({"d": [0.0, -0.0, NAN]}, schema=schema))
    assert math.copysign(1, mixed.lower) == -1 and math.copysign(1, mixed.upper) == 1
    assert mixed.nans == 1 and mixed.values == 3 and mixed.nulls == 0
    (empty,) = float_metrics(pa.Table.from_pydict({"d": []}, schema=schema))
    assert empty == FloatMetrics(1, True, 0, 0, 0, None, None)
