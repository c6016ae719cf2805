"""A streaming-ingest workload generator: the small-file shape icefloe exists to fix (the
tests' warehouses; the demo's own workload is :mod:`icefloe.app.demo.workload`).

Each simulated micro-batch commit appends a few thousand rows for the "current" day across
every region, so each commit adds one small file per (day, region) partition. A share of
commits arrives late and lands on an older day. The oldest days are written as a few
large files first, so some partitions start healthy. Everything is seeded and written
with PyIceberg (no JVM), one Iceberg commit per micro-batch, like a real streaming writer.
"""

from __future__ import annotations

import datetime as dt
import random
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from icefloe.base.config import parse_table_identifier

if TYPE_CHECKING:
    import pyarrow as pa
    from pyiceberg.catalog import Catalog
    from pyiceberg.partitioning import PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.table import Table

EPOCH_DAY = dt.date(2026, 11, 1)
BYTES_PER_ROW = 28  # measured: parquet+zstd of this schema stores ~28 bytes per row


@dataclass(frozen=True)
class TableSpec:
    """One table of the workload. Sizes are in bytes of Parquet output (approximate)."""

    name: str
    days: int = 4
    regions: tuple[str, ...] = ("eu", "us", "apac")
    commits: int = 24
    small_file_bytes: tuple[int, int] = (8 << 10, 400 << 10)  # log-uniform range
    late_share: float = 0.25
    healthy_days: int = 1
    target_file_size_bytes: int = 2 << 20
    properties: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class CommitInfo:
    table: str
    snapshot_id: int
    rows: int
    late: bool


def schema() -> Schema:
    # pyiceberg: only when a catalog, table or file is used
    from pyiceberg.schema import Schema
    from pyiceberg.types import (
        DoubleType,
        LongType,
        NestedField,
        StringType,
        TimestamptzType,
    )

    return Schema(
        NestedField(1, "event_id", LongType(), required=False),
        NestedField(2, "event_ts", TimestamptzType(), required=False),
        NestedField(3, "region", StringType(), required=False),
        NestedField(4, "user_id", LongType(), required=False),
        NestedField(5, "amount", DoubleType(), required=False),
        NestedField(6, "payload", StringType(), required=False),
    )


def partition_spec() -> PartitionSpec:
    # pyiceberg: only when a catalog, table or file is used
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.transforms import DayTransform, IdentityTransform

    return PartitionSpec(
        PartitionField(source_id=2, field_id=1000, transform=DayTransform(), name="day"),
        PartitionField(source_id=3, field_id=1001, transform=IdentityTransform(), name="region"),
    )


def create_table(catalog: Catalog, spec: TableSpec, replace: bool = True) -> Table:
    """(Re)create ``spec.name`` with the workload's schema, partitioning and target size."""
    parts = parse_table_identifier(spec.name)
    namespace = parts[:-1]
    catalog.create_namespace_if_not_exists(namespace)
    if replace and catalog.table_exists(parts):
        catalog.purge_table(parts)
    props = {
        # PyIceberg splits writes by in-memory Arrow size (2-3x the Parquet size), so the
        # ingest writes under a large limit; ``ingest`` sets the real target when done.
        "write.target-file-size-bytes": str(spec.target_file_size_bytes * 8),
        "format-version": "2",
        "write.parquet.compression-codec": "zstd",
        # Writers roll files on an estimate that counts the open row group uncompressed;
        # row groups well under the target keep that estimate (and file sizes) honest.
        "write.parquet.row-group-size-bytes": str(max(64 << 10, spec.target_file_size_bytes // 8)),
        **spec.properties,
    }
    return catalog.create_table(
        parts, schema=schema(), partition_spec=partition_spec(), properties=props
    )


def batch(
    rng: random.Random, day: dt.date, regions: tuple[str, ...], rows: int, first_id: int
) -> pa.Table:
    """``rows`` rows per region for ``day``; payloads are random so sizes are predictable."""
    # pyarrow: only when files are read or written
    import pyarrow as pa

    n = rows * len(regions)
    start = dt.datetime.combine(day, dt.time(), tzinfo=dt.UTC)
    seconds = [rng.randrange(86_400) for _ in range(n)]
    return pa.table(
        {
            "event_id": pa.array(range(first_id, first_id + n), pa.int64()),
            "event_ts": pa.array(
                [start + dt.timedelta(seconds=s) for s in seconds], pa.timestamp("us", tz="UTC")
            ),
            "region": pa.array([r for r in regions for _ in range(rows)], pa.string()),
            "user_id": pa.array([int(rng.paretovariate(1.2)) for _ in range(n)], pa.int64()),
            "amount": pa.array(
                [round(rng.lognormvariate(3, 1), 2) for _ in range(n)], pa.float64()
            ),
            "payload": pa.array([rng.randbytes(12).hex() for _ in range(n)], pa.string()),
        }
    )


def plan_commits(spec: TableSpec, seed: int) -> Iterator[tuple[dt.date, int, bool]]:
    """The (day, rows per region, late?) of every commit: healthy days first, then a stream."""
    rng = random.Random(seed)
    days = [EPOCH_DAY + dt.timedelta(days=d) for d in range(spec.days)]
    healthy, streaming = days[: spec.healthy_days], days[spec.healthy_days :]
    full_rows = spec.target_file_size_bytes // BYTES_PER_ROW
    for day in healthy:
        for _ in range(2):
            yield day, int(full_rows * 1.15), False
    lo, hi = spec.small_file_bytes
    for i in range(spec.commits):
        current = streaming[min(len(streaming) - 1, i * len(streaming) // spec.commits)]
        late = rng.random() < spec.late_share and current != streaming[0]
        day = rng.choice([d for d in streaming if d < current]) if late else current
        size = int(lo * (hi / lo) ** rng.random())
        yield day, max(1, size // BYTES_PER_ROW), late


class CommitStream:
    """A table's commits in order (:func:`plan_commits`), each batch generated when taken:
    the same seed gives the same batches, however the commits are split into rounds."""

    def __init__(self, spec: TableSpec, seed: int) -> None:
        self.spec = spec
        self.plan = list(plan_commits(spec, seed))
        self.rng = random.Random(seed * 7919 + 1)
        self.next_id = 0
        self.taken = 0

    def take(self) -> tuple[pa.Table, bool]:
        """The next commit's rows and whether it is late."""
        day, rows, late = self.plan[self.taken]
        data = batch(self.rng, day, self.spec.regions, rows, self.next_id)
        self.next_id += data.num_rows
        self.taken += 1
        return data, late

    def round_sizes(self, rounds: int) -> list[int]:
        """How many commits each of ``rounds`` rounds takes: the healthy days' large files
        and an equal share of the streaming commits in the first, an equal share after."""
        streaming = self.spec.commits
        healthy = len(self.plan) - streaming
        shares = [streaming * (r + 1) // rounds - streaming * r // rounds for r in range(rounds)]
        return [healthy + shares[0], *shares[1:]]


def ingest(
    catalog: Catalog,
    spec: TableSpec,
    seed: int = 7,
    on_commit: Callable[[CommitInfo], None] | None = None,
    stream: CommitStream | None = None,
    commits: int | None = None,
) -> list[CommitInfo]:
    """Create the table afresh and stream its commits into it (the first ``commits`` of
    ``stream``, by default all of a new one); returns one info per commit."""
    # PyIceberg writes its own row groups and says so about the row-group property: fine.
    warnings.filterwarnings("ignore", message=r"Parquet writer option", category=UserWarning)
    table = create_table(catalog, spec)
    stream = stream or CommitStream(spec, seed)
    out: list[CommitInfo] = []
    for _ in range(len(stream.plan) if commits is None else commits):
        data, late = stream.take()
        table.append(data)
        snap = table.current_snapshot()
        assert snap is not None
        info = CommitInfo(spec.name, snap.snapshot_id, data.num_rows, late)
        out.append(info)
        if on_commit:
            on_commit(info)
    with table.transaction() as tx:
        tx.set_properties({"write.target-file-size-bytes": str(spec.target_file_size_bytes)})
    return out
