"""Per-partition file stats of an Iceberg table, read from metadata only (no data files).

One PyIceberg ``inspect.files()`` call lists the current data and delete files, grouped by
their typed partition identity (:class:`icefloe.base.partition_key.PartitionKey`); the entropy
itself is the pure core's (:func:`icefloe.optimizer.stats_from_sizes`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from icefloe.base.layoutspec import Bound, LayoutSpec
from icefloe.base.partition_key import FieldSpec, PartitionKey
from icefloe.optimizer import FileBounds, PartitionStats, stats_from_sizes
from icefloe.optimizer.health_score import HealthInputs, Score, health_score
from icefloe.optimizer.maintenance_rules import MetadataHealth

if TYPE_CHECKING:
    from pyiceberg.table import Table

    from icefloe.base.config import TablePolicy

DATA, POSITION_DELETES, EQUALITY_DELETES = 0, 1, 2
REWRITE_ID_PROPERTY = "icefloe.rewrite-id"
"""Set in the summary of every data rewrite icefloe commits (``icefloe.jobs.rewrite.commit``)."""


def own_rewrite(table: Table, snapshot_id: int) -> bool:
    """Whether the snapshot is a data rewrite icefloe committed (its summary says so)."""
    snap = table.metadata.snapshot_by_id(snapshot_id)
    summary = None if snap is None else snap.summary
    return summary is not None and REWRITE_ID_PROPERTY in summary.additional_properties


def ancestry(table: Table) -> Iterator[Any]:
    """The current snapshot, then its parent and theirs, newest first: the current history."""
    by_id = {s.snapshot_id: s for s in table.metadata.snapshots}
    node = table.current_snapshot()
    while node is not None:
        yield node
        parent = node.parent_snapshot_id
        node = None if parent is None else by_id.get(parent)


@dataclass(frozen=True)
class PartitionFiles:
    """The current files of one partition: ``key`` is its :class:`PartitionKey`'s
    encoding (the identity stats, queue items and plans use), ``partition`` the key."""

    key: str
    spec_id: int
    paths: tuple[str, ...]
    sizes: tuple[int, ...]
    records: tuple[int, ...]
    delete_files: int
    delete_bytes: int = 0
    deleted_rows: int = 0  # the delete files' rows: positions, or equality rows
    partition: PartitionKey = PartitionKey(0)
    bounds: tuple[tuple[Bound | None, Bound | None], ...] = ()  # with a layout, per path

    def stats(self, target: int) -> PartitionStats:
        rows = (sum(self.records), self.delete_bytes, self.deleted_rows)
        return stats_from_sizes(self.sizes, target, self.delete_files, rows)

    def file_bounds(self) -> list[FileBounds[str]]:
        """The files with their key bounds (read with a layout: ``bounds``)."""
        return [
            FileBounds(path, int(size), lower, upper)
            for path, size, (lower, upper) in zip(self.paths, self.sizes, self.bounds, strict=True)
        ]


def spec_fields(table: Table) -> dict[int, tuple[FieldSpec, ...]]:
    """Each partition spec's fields: (name, Iceberg result type), in spec order."""
    schema = table.metadata.schema()
    out: dict[int, tuple[FieldSpec, ...]] = {}
    for spec_id, spec in table.metadata.specs().items():
        struct = spec.partition_type(schema)
        out[spec_id] = tuple((f.name, str(f.field_type)) for f in struct.fields)
    return out


def split_selector(selector: str) -> list[tuple[str, str]]:
    """``"day=1/path=a/b"`` → ``[("day", "1"), ("path", "a/b")]``: a ``--partition``
    selector's (field, displayed value) pairs (:meth:`PartitionKey.matches`).

    A ``/`` followed by text without ``=`` belongs to the value before it, so a value with
    a slash can be given as is. A piece with no ``=`` at the start gives ``("", piece)``
    for the caller to reject."""
    pairs: list[list[str]] = []
    for piece in selector.split("/"):
        col, sep, value = piece.partition("=")
        if sep or not pairs:
            pairs.append([col, value] if sep else ["", piece])
        else:
            pairs[-1][1] += "/" + piece
    return [(c, v) for c, v in pairs]


def current_partitions(
    table: Table, snapshot_id: int | None = None, layout: LayoutSpec | None = None
) -> list[PartitionFiles]:
    """Data files grouped by (spec, partition), with the count of delete files beside them;
    with ``layout``, each data file's key bounds too (one read of the manifests)."""
    snap = snapshot_id if snapshot_id is not None else _current_snapshot_id(table)
    if snap is None:
        return []
    columns = ["content", "file_path", "spec_id", "partition", "record_count", "file_size_in_bytes"]
    if layout is not None:
        columns += ["lower_bounds", "upper_bounds", "null_value_counts", "nan_value_counts"]
    rows = table.inspect.files(snapshot_id=snap).select(columns).to_pylist()
    fields = spec_fields(table)
    data: dict[PartitionKey, list[dict[str, Any]]] = defaultdict(list)
    deletes: dict[PartitionKey, list[int]] = defaultdict(lambda: [0, 0, 0])
    for row in rows:
        spec_id = int(row["spec_id"])
        group = PartitionKey.from_mapping(spec_id, fields[spec_id], row["partition"])
        if row["content"] == DATA:
            data[group].append(row)
        else:
            d = deletes[group]
            d[0] += 1
            d[1] += int(row["file_size_in_bytes"])
            d[2] += int(row["record_count"])
    out = []
    for partition, files in sorted(data.items(), key=lambda kv: kv[0].encode()):
        files.sort(key=lambda r: r["file_path"])
        counts = deletes.get(partition, [0, 0, 0])
        out.append(
            PartitionFiles(
                key=partition.encode(),
                spec_id=partition.spec_id,
                paths=tuple(r["file_path"] for r in files),
                sizes=tuple(int(r["file_size_in_bytes"]) for r in files),
                records=tuple(int(r["record_count"]) for r in files),
                delete_files=counts[0],
                delete_bytes=counts[1],
                deleted_rows=counts[2],
                partition=partition,
                bounds=()
                if layout is None
                else tuple(
                    layout.bounds(
                        r["lower_bounds"],
                        r["upper_bounds"],
                        r["null_value_counts"],
                        r["nan_value_counts"],
                    )
                    for r in files
                ),
            )
        )
    return out


def rewrite_outputs(table: Table, most: int = 16) -> list[tuple[int, int]]:
    """(bytes, rows) the table's newest ``replace`` snapshots that wrote data added, newest
    first, at most ``most``: what its rewrites (icefloe's, Iceberg's or any engine's) write
    per row, from the snapshot summaries in the table's metadata (no file is read). A
    manifest rewrite adds no rows and is not counted."""
    out: list[tuple[int, int]] = []
    ordered = sorted(  # v1 tables number no snapshot: their time orders them
        table.metadata.snapshots,
        key=lambda s: (s.sequence_number or 0, s.timestamp_ms),
        reverse=True,
    )
    for snap in ordered:
        summary = snap.summary
        if summary is None or summary.operation.value != "replace":
            continue
        props = summary.additional_properties
        added, rows = int(props.get("added-files-size", 0)), int(props.get("added-records", 0))
        if added > 0 and rows > 0:
            out.append((added, rows))
            if len(out) >= most:
                break
    return out


def _current_snapshot_id(table: Table) -> int | None:
    snap = table.current_snapshot()
    return None if snap is None else snap.snapshot_id


def table_score(policy: TablePolicy, data_mse: float, health: MetadataHealth, now: float) -> Score:
    """The table's health score (``icefloe.optimizer.health_score``) against its own policy:
    ``data_mse`` what merging could remove from its data files' MSE
    (``icefloe.optimizer.health_score.removable_mse`` of its partitions' stats), ``health`` its
    metadata health, ``now`` in seconds."""
    return health_score(score_inputs(policy, data_mse, health, now))


def score_inputs(
    policy: TablePolicy, data_mse: float, health: MetadataHealth, now: float
) -> HealthInputs:
    """What :func:`table_score` scores (``icefloe.optimizer.health_score.HealthInputs``)."""
    rules = policy.maintenance.rules(health.manifest_target)
    return HealthInputs.of(
        data_mse, policy.target, policy.tolerance_bytes, health, rules, int(now * 1000)
    )
