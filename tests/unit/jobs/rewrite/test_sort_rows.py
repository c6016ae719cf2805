"""#47: a declared write order, field by field, as the Arrow engine orders rows: each
field's direction and null order, NaN above every number (Iceberg's comparators), and a
bucket field by Iceberg's bucket value; a differential test against a plain comparator."""

from __future__ import annotations

import functools
import math
import random
from datetime import date
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from icefloe.jobs.rewrite.sort_rows import bucket_keys, row_order, sorted_batches
from icefloe.optimizer.sortorder import SortField

pytestmark = pytest.mark.unit


def _cmp_value(a: Any, b: Any, f: SortField) -> int:
    """Iceberg's order of one field's values: nulls where the field says, NaN above every
    number, the rest ascending; then the direction (which leaves nulls where they are)."""
    if a is None or b is None:
        if a is None and b is None:
            return 0
        return (-1 if a is None else 1) * (1 if f.nulls_first else -1)

    def rank(v: Any) -> tuple[int, Any]:
        return (1, 0) if isinstance(v, float) and math.isnan(v) else (0, v)

    ra, rb = rank(a), rank(b)
    c = (ra > rb) - (ra < rb)
    return -c if f.descending else c


def reference(rows: list[dict[str, Any]], fields: list[SortField]) -> list[tuple[Any, ...]]:
    def cmp(x: dict[str, Any], y: dict[str, Any]) -> int:
        for f in fields:
            c = _cmp_value(x[f.column], y[f.column], f)
            if c:
                return c
        return 0

    return [_key(r, fields) for r in sorted(rows, key=functools.cmp_to_key(cmp))]


def _key(row: dict[str, Any], fields: list[SortField]) -> tuple[Any, ...]:
    return tuple(
        "NaN" if isinstance(row[f.column], float) and math.isnan(row[f.column]) else row[f.column]
        for f in fields
    )


VALUES = {
    "i": (pa.int64(), [None, -(2**63), -1, 0, 7, 2**63 - 1]),
    "f": (pa.float64(), [None, float("nan"), float("-inf"), -0.5, 0.0, 2.5, float("inf")]),
    "s": (pa.string(), [None, "", "a", "é", "z", "\U0001f600", "Ab"]),
    "d": (pa.date32(), [None, date(1970, 1, 1), date(2026, 11, 28), date(1, 1, 1)]),
    "m": (pa.decimal128(10, 2), [None, Decimal("-1.25"), Decimal("0.00"), Decimal("99.99")]),
}


@pytest.mark.parametrize("seed", range(12))
def test_rows_come_out_in_the_declared_order(seed: int) -> None:
    rng = random.Random(seed)
    names = rng.sample(sorted(VALUES), k=rng.randint(1, 3))
    fields = [SortField(n, rng.random() < 0.5, rng.random() < 0.5) for n in names]
    rows = [{n: rng.choice(VALUES[n][1]) for n in VALUES} for _ in range(300)]
    table = pa.Table.from_pylist(rows, schema=pa.schema([(n, t) for n, (t, _) in VALUES.items()]))
    ordered = table.take(row_order(table, fields)).to_pylist()
    assert [_key(r, fields) for r in ordered] == reference(rows, fields), [str(f) for f in fields]


def test_descending_nulls_first_then_ascending_nulls_last() -> None:
    """The issue's order: ``s DESC NULLS FIRST, f ASC NULLS LAST``."""
    table = pa.table(
        {
            "s": pa.array(["a", None, "b", "b", "b", "b"]),
            "f": pa.array([1.0, 2.0, None, float("nan"), float("-inf"), 0.0]),
        }
    )
    fields = [SortField("s", True, True), SortField("f", False, False)]
    out = table.take(row_order(table, fields)).to_pylist()
    assert [r["s"] for r in out] == [None, "b", "b", "b", "b", "a"]
    assert [str(r["f"]) for r in out[1:5]] == ["-inf", "0.0", "nan", "None"]


def test_a_bucket_field_orders_by_icebergs_bucket_value() -> None:
    ids = pa.array([34, 1, None, 2, 17], pa.int64())
    buckets = bucket_keys(ids, 8).to_pylist()
    assert buckets[:2] == [3, 4]  # Iceberg's spec: bucket(34) of a long is 3 of 8
    table = pa.table({"id": ids})
    out = table.take(row_order(table, [SortField("id", transform="bucket[8]")]))
    got = bucket_keys(out.column("id"), 8).to_pylist()
    assert got == sorted(buckets, key=lambda b: (b is not None, b if b is not None else 0))


def test_sorted_batches_put_a_stream_of_batches_in_order() -> None:
    table = pa.table({"a": [3, None, 1, 2], "b": ["c", "n", "a", "b"]})
    batches = iter(table.to_batches(max_chunksize=2))
    rows = pa.Table.from_batches(list(sorted_batches(batches, [SortField("a")])))
    assert rows.column("b").to_pylist() == ["n", "a", "b", "c"]
    assert list(sorted_batches(iter([]), [SortField("a")])) == []
