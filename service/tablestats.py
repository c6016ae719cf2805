"""Per-partition file stats of an Iceberg table, read from metadata only (no data files).

One PyIceberg ``inspect.files()`` call lists the current data and delete files; the entropy
itself is the pure core's (:func:`optimizer.stats_from_sizes`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from optimizer import PartitionStats, stats_from_sizes

if TYPE_CHECKING:
    from pyiceberg.table import Table

DATA, POSITION_DELETES, EQUALITY_DELETES = 0, 1, 2


@dataclass(frozen=True)
class PartitionFiles:
    """The current files of one partition: ``key`` is ``col=value/...`` ('' unpartitioned)."""

    key: str
    spec_id: int
    paths: tuple[str, ...]
    sizes: tuple[int, ...]
    records: tuple[int, ...]
    delete_files: int
    delete_bytes: int = 0
    deleted_rows: int = 0  # the delete files' rows: positions, or equality rows

    def stats(self, target: int) -> PartitionStats:
        rows = (sum(self.records), self.delete_bytes, self.deleted_rows)
        return stats_from_sizes(self.sizes, target, self.delete_files, rows)


def partition_key(partition: Mapping[str, Any] | None) -> str:
    """A stable, readable key for a partition tuple: ``day=2026-11-01/region=eu``.

    ``partition`` is a ``{field: value}`` mapping as PyIceberg's ``inspect.files()`` and
    ``inspect.partitions()`` rows give it (or any other mapping of field names to values:
    dates, numbers and strings all print with ``str``; ``None`` is ``null``). A ``/`` inside
    a value is written ``%2F`` (as in Iceberg's partition paths), so the key splits back into
    its fields (:func:`parse_partition_key`); an ``=`` in a value needs no escape (a field
    ends at its first ``=``)."""
    if not partition:
        return ""
    return "/".join(f"{k}={key_value('null' if v is None else v)}" for k, v in partition.items())


def key_value(value: Any) -> str:
    """A partition value as it appears in a key (``/`` escaped)."""
    return str(value).replace("/", "%2F")


def parse_partition_key(key: str) -> dict[str, str]:
    """:func:`partition_key` backwards: ``{field: value as text}`` (``null`` for NULL)."""
    return {c: v.replace("%2F", "/") for c, v in split_selector(key)} if key else {}


def split_selector(selector: str) -> list[tuple[str, str]]:
    """``"day=1/path=a/b"`` → ``[("day", "1"), ("path", "a%2Fb")]``, values key-escaped.

    A ``/`` followed by text without ``=`` belongs to the value before it, so a value with
    a slash can be given as is (or already escaped, as it appears in keys and queue items).
    A piece with no ``=`` at the start gives ``("", piece)`` for the caller to reject."""
    pairs: list[list[str]] = []
    for piece in selector.split("/"):
        col, sep, value = piece.partition("=")
        if sep or not pairs:
            pairs.append([col, value] if sep else ["", piece])
        else:
            pairs[-1][1] += "/" + piece
    return [(c, key_value(v)) for c, v in pairs]


def current_partitions(table: Table, snapshot_id: int | None = None) -> list[PartitionFiles]:
    """Data files grouped by (spec, partition), with the count of delete files beside them."""
    snap = snapshot_id if snapshot_id is not None else _current_snapshot_id(table)
    if snap is None:
        return []
    rows = (
        table.inspect.files(snapshot_id=snap)
        .select(
            ["content", "file_path", "spec_id", "partition", "record_count", "file_size_in_bytes"]
        )
        .to_pylist()
    )
    data: dict[tuple[int, str], list[dict[str, Any]]] = defaultdict(list)
    deletes: dict[tuple[int, str], list[int]] = defaultdict(lambda: [0, 0, 0])
    for row in rows:
        group = (int(row["spec_id"]), partition_key(row["partition"]))
        if row["content"] == DATA:
            data[group].append(row)
        else:
            d = deletes[group]
            d[0] += 1
            d[1] += int(row["file_size_in_bytes"])
            d[2] += int(row["record_count"])
    out = []
    for (spec_id, key), files in sorted(data.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        files.sort(key=lambda r: r["file_path"])
        out.append(
            PartitionFiles(
                key=key,
                spec_id=spec_id,
                paths=tuple(r["file_path"] for r in files),
                sizes=tuple(int(r["file_size_in_bytes"]) for r in files),
                records=tuple(int(r["record_count"]) for r in files),
                delete_files=deletes.get((spec_id, key), [0, 0, 0])[0],
                delete_bytes=deletes.get((spec_id, key), [0, 0, 0])[1],
                deleted_rows=deletes.get((spec_id, key), [0, 0, 0])[2],
            )
        )
    return out


def _current_snapshot_id(table: Table) -> int | None:
    snap = table.current_snapshot()
    return None if snap is None else snap.snapshot_id
