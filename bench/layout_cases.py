"""The ``late`` case of ``bench/layout_bench.py`` (issue #47): its table and data.

A table partitioned by ``day`` and sorted by ``k`` (its declared write order). Day ``p``
holds the keys ``[p * RANGE, (p + 1) * RANGE)``, written in key order as ``FILL`` files of
``rows`` rows (one append per file, one file per partition each: about one target file,
none overlapping another, depth 1). Then day ``late_day`` receives ``LATE`` small files
(one append each, ``rows // 20`` rows) whose keys fall anywhere in the top fifth of its
key range: each overlaps the two fill files there and every other late file. The
queries: ``QUERIES`` ranges on ``k`` inside the late day's key range, of widths
``RANGE / 64`` to ``RANGE / 4`` in turn.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
from pyiceberg.expressions import And, GreaterThanOrEqual, LessThan
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

FILL = 10  # files each day is first filled with, in key order
LATE = 8  # small late files, into one day
QUERIES = 20
SPAN = 1 << 20  # keys one fill file covers
RANGE = FILL * SPAN  # keys one day covers
SCHEMA = Schema(
    NestedField(1, "day", StringType(), required=False),
    NestedField(2, "k", LongType(), required=False),
    NestedField(3, "x", LongType(), required=False),
    NestedField(4, "y", LongType(), required=False),
    NestedField(5, "kind", StringType(), required=False),
    NestedField(6, "payload", StringType(), required=False),
)


def late_day(partitions: int) -> str:
    return f"d{partitions // 2}"


def _rows(rng: np.random.Generator, days: list[int], lo: int, hi: int, n: int) -> pa.Table:
    """``n`` rows of each of ``days``, keys in ``[lo, hi)`` of that day's range, sorted."""
    parts = []
    for p in days:
        k = np.sort(rng.integers(p * RANGE + lo, p * RANGE + hi, n))
        parts.append(
            pa.table(
                {
                    "day": pa.array([f"d{p}"] * n),
                    "k": pa.array(k, pa.int64()),
                    "x": pa.array(rng.integers(0, 8 * SPAN, n), pa.int64()),
                    "y": pa.array(rng.integers(0, 8 * SPAN, n), pa.int64()),
                    "kind": pa.array([f"k{int(v) >> 16}" for v in k]),  # follows the key
                    "payload": pa.array(rng.integers(0, 1 << 40, n).astype(str)),
                }
            )
        )
    return pa.concat_tables(parts).cast(SCHEMA.as_arrow())


def fill(partitions: int, rows: int, seed: int) -> list[pa.Table]:
    """The appends that fill every day in key order: file ``i`` of a day holds keys
    ``[i * SPAN, (i + 1) * SPAN)`` of its range."""
    rng = np.random.default_rng(seed * 1000 + 1)
    days = list(range(partitions))
    return [_rows(rng, days, i * SPAN, (i + 1) * SPAN, rows) for i in range(FILL)]


def late(partitions: int, rows: int, seed: int) -> list[pa.Table]:
    """The late appends: ``LATE`` small files of one day, keys in its top fifth."""
    rng = np.random.default_rng(seed * 1000 + 2)
    p = partitions // 2
    return [_rows(rng, [p], RANGE - RANGE // 5, RANGE, max(rows // 20, 1)) for _ in range(LATE)]


def queries(partitions: int, seed: int) -> list[tuple[str, Any]]:
    """(Spark SQL predicate, PyIceberg filter): ranges on ``k`` in the late day's range."""
    rng = np.random.default_rng(seed)
    base = (partitions // 2) * RANGE
    out: list[tuple[str, Any]] = []
    for q in range(QUERIES):
        width = RANGE // (64, 16, 8, 4)[q % 4]
        lo = base + int(rng.integers(0, RANGE - width))
        out.append(
            (
                f"k >= {lo} AND k < {lo + width}",
                And(GreaterThanOrEqual("k", lo), LessThan("k", lo + width)),
            )
        )
    return out
