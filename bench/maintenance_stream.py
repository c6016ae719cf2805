"""The streaming table of ``bench/maintenance_bench.py``: one stream, applied to every arm.

A stream is a list of commits generated once from a seed: mostly small appends (one file
per partition each, written by PyIceberg) and every ``delete_every``-th commit a
merge-on-read ``DELETE`` through Spark SQL, so position delete files pile up. Rows carry
a ``day`` (the partition: a new day every ``per_day`` commits); every ``late_every``-th
append also brings a few late rows for the day before, as a streaming writer does. A
delete removes every ``mod``-th id of about ten earlier appends chosen among the recent
ones (a late correction of recent data), so it touches a handful of files, and its
``WHERE`` names ids only: it deletes the same rows on every copy, however the copy's files
are laid out.

:func:`live_rows` is the model's answer (rows left after every delete), checked against
every arm's table.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

DELETE_SPAN = 10  # appends a delete covers
DELETE_REACH = 50  # ... among the last this many
LATE_ROWS = 8


@dataclass(frozen=True)
class StreamShape:
    commits: int = 500
    rows: int = 200  # per append, +-30%
    per_day: int = 100  # commits per day partition
    delete_every: int = 20
    late_every: int = 5
    seed: int = 20


@dataclass(frozen=True)
class Append:
    rows: pa.Table


@dataclass(frozen=True)
class Delete:
    lo: int
    hi: int
    mod: int
    rem: int

    @property
    def where(self) -> str:
        return f"id BETWEEN {self.lo} AND {self.hi} AND id % {self.mod} = {self.rem}"

    def matches(self, ids: np.ndarray) -> np.ndarray:
        return (ids >= self.lo) & (ids <= self.hi) & (ids % self.mod == self.rem)


Commit = Append | Delete


def schema() -> Any:
    from pyiceberg.schema import Schema
    from pyiceberg.types import DoubleType, LongType, NestedField, StringType

    return Schema(
        NestedField(1, "id", LongType(), required=False),
        NestedField(2, "day", LongType(), required=False),
        NestedField(3, "user_id", LongType(), required=False),
        NestedField(4, "payload", StringType(), required=False),
        NestedField(5, "value", DoubleType(), required=False),
    )


def _rows(rng: np.random.Generator, first_id: int, days: np.ndarray) -> pa.Table:
    n = len(days)
    chars = rng.bytes(16 * n).hex().encode()  # 32 hex characters a row, one buffer
    offsets = np.arange(0, 32 * (n + 1), 32, dtype=np.int32)
    payload = pa.StringArray.from_buffers(n, pa.py_buffer(offsets.tobytes()), pa.py_buffer(chars))
    return pa.table(
        {
            "id": pa.array(np.arange(first_id, first_id + n), pa.int64()),
            "day": pa.array(days, pa.int64()),
            "user_id": pa.array(rng.integers(0, 10_000, n), pa.int64()),
            "payload": payload,
            "value": pa.array(rng.random(n)),
        }
    )


def generate(shape: StreamShape) -> list[Commit]:
    """The stream: commit ``i`` (1-based) is a delete when ``i % delete_every == 0``."""
    rng = np.random.default_rng(shape.seed)
    out: list[Commit] = []
    appended: list[tuple[int, int]] = []  # id range of each append
    next_id = 0
    for i in range(1, shape.commits + 1):
        day = (i - 1) // shape.per_day
        if shape.delete_every and i % shape.delete_every == 0 and len(appended) >= DELETE_SPAN:
            reach = appended[-DELETE_REACH:]
            start = int(rng.integers(0, len(reach) - DELETE_SPAN + 1))
            lo, hi = reach[start][0], reach[start + DELETE_SPAN - 1][1]
            out.append(Delete(lo, hi, 5, int(rng.integers(0, 5))))
            continue
        n = int(shape.rows * rng.uniform(0.7, 1.3))
        days = np.full(n, day)
        if day > 0 and shape.late_every and i % shape.late_every == 0:
            days[-LATE_ROWS:] = day - 1
        out.append(Append(_rows(rng, next_id, days)))
        appended.append((next_id, next_id + n - 1))
        next_id += n
    return out


def live_rows(stream: list[Commit]) -> int:
    """Rows left after the whole stream (a delete only names ids appended before it)."""
    ids = np.concatenate([c.rows.column("id").to_numpy() for c in stream if isinstance(c, Append)])
    alive = np.ones(len(ids), dtype=bool)
    for c in stream:
        if isinstance(c, Delete):
            alive &= ~c.matches(ids)
    return int(alive.sum())


def table_properties(target: int, writer_merges_manifests: bool) -> dict[str, str]:
    return {
        "format-version": "2",
        "write.delete.mode": "merge-on-read",
        "write.update.mode": "merge-on-read",
        "write.merge.mode": "merge-on-read",
        "write.target-file-size-bytes": str(target),
        "commit.manifest-merge.enabled": str(writer_merges_manifests).lower(),
    }


def create(catalog: Any, ident: str, properties: dict[str, str]) -> Any:
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.transforms import IdentityTransform

    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "day"))
    return catalog.create_table(ident, schema=schema(), partition_spec=spec, properties=properties)


@contextmanager
def one_metadata_copy() -> Iterator[None]:
    """PyIceberg 0.12's ``Transaction.table_metadata`` deep-copies the whole table metadata
    on each of the ~18 reads an append makes (50 ms apiece at 400 snapshots: 80% of an
    append). While the stream's own appends run (never icefloe's commits), a transaction
    reuses its copy as long as its base metadata and its updates are the same objects."""
    from pyiceberg.table import Transaction

    prop = Transaction.table_metadata

    def cached(self: Any) -> Any:
        base, last = self._table.metadata, self._updates[-1] if self._updates else None
        hit = self.__dict__.get("_stream_copy")
        if hit is None or hit[0] is not base or hit[1] is not last or hit[2] != len(self._updates):
            hit = (base, last, len(self._updates), prop.fget(self))
            self.__dict__["_stream_copy"] = hit
        return hit[3]

    Transaction.table_metadata = property(cached)  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        Transaction.table_metadata = prop  # type: ignore[method-assign]


def apply(commit: Commit, catalog: Any, spark: Any, ident: str, spark_name: str) -> None:
    """One commit on one copy: a PyIceberg append, or a Spark SQL DELETE."""
    if isinstance(commit, Append):
        table = catalog.load_table(ident)
        with one_metadata_copy():
            table.append(commit.rows.cast(table.schema().as_arrow()))
    else:
        spark.sql(f"DELETE FROM {spark_name} WHERE {commit.where}").collect()
