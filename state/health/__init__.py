"""A table's metadata health, read from its metadata and kept in Redis beside its stats.

:func:`read_health` builds :class:`icefloe.optimizer.maintenance_rules.MetadataHealth` from the
current snapshot's manifest list (each manifest's length: one small Avro read, no manifest and no
data file opened), the snapshot log and properties (hot-key reports) in the table metadata,
and the size of the metadata JSON. It depends only on the snapshot (and properties) it
describes, so reading it again after any sequence of commits equals reading it once: the
incremental form *is* the full recompute.

The store (:class:`HealthStore`: :class:`icefloe.state.health.redis.RedisHealth`, in the
table's own ``{t:<table>}`` slot; and :class:`icefloe.state.health.memory.MemoryHealth`
for unit tests) keeps the latest health for ``status`` and the
metrics, when each maintenance action last ran (orphan removal: from when the table
was first seen), and why an action is held (orphan removal on a location another table
shares: ``icefloe.jobs.maintenance.sharing``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from icefloe.base.tablestats import ancestry
from icefloe.optimizer import PartitionStats
from icefloe.optimizer.maintenance_rules import MetadataHealth
from icefloe.optimizer.skew_report import ReportAge, reports_in

if TYPE_CHECKING:
    from pyiceberg.table import Table


def summary_deletes(snap: Any) -> tuple[int, int, int]:
    """(rows, delete files, deleted rows: positions + equality rows) from a snapshot's
    summary totals; zeros where a writer left them out."""
    deleted = _summary_int(snap, "total-position-deletes")
    deleted += _summary_int(snap, "total-equality-deletes")
    return _summary_int(snap, "total-records"), _summary_int(snap, "total-delete-files"), deleted


def _summary_int(snap: Any, key: str) -> int:
    """A number of a snapshot's summary; 0 where a writer left it out."""
    props = snap.summary.additional_properties if snap is not None and snap.summary else {}
    raw = props.get(key, "0")
    return int(raw) if str(raw).isdigit() else 0


_CHANGED_ROWS = (  # a snapshot's summary: rows it added, removed, or deleted by delete files
    "added-records",
    "deleted-records",
    "added-position-deletes",
    "added-equality-deletes",
)


def statistics_facts(table: Table) -> dict[str, Any]:
    """What the table's Iceberg statistics describe (``compute_stats``): ``statistics`` and
    ``partition_statistics``, the snapshot the newest of each in the current ancestry was
    computed at (None: none), ``changed_rows`` since the table statistics' snapshot (rows
    added, removed or deleted by delete files in each snapshot since: a compaction's replace
    counts twice;
    every row of the ancestry when there are none), ``partitioned`` (a partition spec with
    fields: Iceberg's partition statistics need one), the current ``snapshot`` and the
    count of ``snapshots``. Table metadata only (in memory once loaded)."""
    meta = table.metadata
    snap = table.current_snapshot()
    table_stats = {f.snapshot_id for f in meta.statistics}
    part_stats = {f.snapshot_id for f in meta.partition_statistics}
    found: dict[str, int | None] = {"statistics": None, "partition_statistics": None}
    changed, history = 0, ancestry(table)
    for node in history:
        sid = node.snapshot_id
        if found["partition_statistics"] is None and sid in part_stats:
            found["partition_statistics"] = sid
        if sid in table_stats:
            found["statistics"] = sid
            break
        changed += sum(_summary_int(node, key) for key in _CHANGED_ROWS)
    if found["partition_statistics"] is None:  # past the table statistics' snapshot
        older = (s.snapshot_id for s in history if s.snapshot_id in part_stats)
        found["partition_statistics"] = next(older, None)
    return {
        **found,
        "changed_rows": changed,
        "partitioned": any(not spec.is_unpartitioned() for spec in meta.partition_specs),
        "snapshot": None if snap is None else snap.snapshot_id,
        "snapshots": len(meta.snapshots),
    }


def changed_rows_since(table: Table, snapshot_ids: Collection[int]) -> dict[int, int]:
    """snapshot → the rows added, removed or deleted by delete files in the snapshots of
    the current ancestry after it (one walk for all); every row of the ancestry for one
    that is not in it (expired, or of another branch). Table metadata only."""
    wanted, changed = set(snapshot_ids), 0
    out: dict[int, int] = {}
    for node in ancestry(table):
        if len(out) == len(wanted):
            break
        if node.snapshot_id in wanted:
            out[node.snapshot_id] = changed
        changed += sum(_summary_int(node, key) for key in _CHANGED_ROWS)
    return {sid: out.get(sid, changed) for sid in wanted}


def skew_report_ages(table: Table) -> tuple[ReportAge, ...]:
    """The hot-key reports in the table's properties (``skew_report``), by column: each
    one's snapshot, age and the rows changed since (:func:`changed_rows_since`); a property
    that does not decode is left out (as if missing)."""
    reports = reports_in(table.properties)
    since = changed_rows_since(table, {r.snapshot_id for r in reports.values()})
    return tuple(
        ReportAge(c, r.snapshot_id, r.computed_at_ms, r.max_age_ms, since[r.snapshot_id])
        for c, r in sorted(reports.items())
    )


def read_health(
    table: Table,
    manifest_target: int,
    retain_last: int,
    known: Mapping[str, Any] | None = None,
) -> MetadataHealth:
    """The table's metadata health at its current snapshot. ``known``: the stored
    :func:`summary`; when it is of this snapshot, its manifests are taken from it and only
    the snapshot log and summary (already in memory) are read."""
    snap = table.current_snapshot()
    snapshot_id = None if snap is None else snap.snapshot_id
    times = [int(s.timestamp_ms) for s in table.metadata.snapshots]
    deletes = summary_deletes(snap)
    facts = statistics_facts(table)
    statistics = (
        facts["statistics"],
        facts["changed_rows"],
        _summary_int(snap, "total-files-size"),
    )
    same = known is not None and known["manifest_target"] == manifest_target
    if known is not None and same and known["snapshot"] == snapshot_id:
        return MetadataHealth(
            snapshot_id,
            manifest_target,
            known["manifest_stats"],
            len(times),
            min(times, default=None),
            tuple(sorted(times)[: max(0, len(times) - retain_last)]),
            known["metadata_bytes"],
            *deletes,
            *statistics,
            skew_report_ages(table),
        )
    sizes = [int(m.manifest_length) for m in snap.manifests(table.io)] if snap else []
    try:
        metadata_bytes = len(table.io.new_input(table.metadata_location))
    except (OSError, ValueError):  # a catalog without a reachable metadata file
        metadata_bytes = 0
    return MetadataHealth.of(
        snapshot_id,
        sizes,
        manifest_target,
        times,
        metadata_bytes,
        retain_last,
        deletes,
        statistics,
        skew_report_ages(table),
    )


def statistics_age(h: MetadataHealth) -> dict[str, Any]:
    """How far the table's Iceberg statistics are behind (``compute_stats``): the snapshot
    they describe (None: none yet), whether that is the current one, and the rows changed
    since, also as a share of the table's rows."""
    current = h.stats_snapshot_id is not None and h.stats_snapshot_id == h.snapshot_id
    return {
        "snapshot": h.stats_snapshot_id,
        "current": current,
        "changed_rows": h.stats_changed_rows,
        "changed_share": round(h.stats_changed_rows / h.data_rows, 4) if h.data_rows else 0.0,
    }


def statistics_text(age: Mapping[str, Any]) -> str:
    """:func:`statistics_age` in a few words: ``none``, ``current``, ``12% behind``."""
    if age["snapshot"] is None:
        return "none"
    return "current" if age["current"] else f"{age['changed_share']:.0%} behind"


def to_fields(h: MetadataHealth) -> dict[str, str]:
    """The stored form: the manifests' stats and the counts (not the snapshot times)."""
    m = h.manifests
    return {
        "snapshot": "" if h.snapshot_id is None else str(h.snapshot_id),
        "manifest_target": str(h.manifest_target),
        "manifests": f"{m.n} {m.sse} {m.total_bytes} {m.undersized}",
        "snapshots": str(h.snapshots),
        "oldest_snapshot_ms": "" if h.oldest_snapshot_ms is None else str(h.oldest_snapshot_ms),
        "expirable": str(len(h.expirable)),
        "metadata_bytes": str(h.metadata_bytes),
        "deletes": f"{h.data_rows} {h.delete_files} {h.deleted_rows}",
        # the statistics' snapshot ("-": none), rows changed since, the data's bytes
        "statistics": f"{'-' if h.stats_snapshot_id is None else h.stats_snapshot_id} "
        f"{h.stats_changed_rows} {h.data_bytes}",
    }


def summary(fields: Mapping[str, str]) -> dict[str, Any]:
    """What ``status``, ``tables`` and the metrics show of a stored health. Numbers a newer
    icefloe appends to a field are not read; a value that is not numbers raises
    ``ValueError``."""
    n, sse, total, under = (int(v) for v in fields["manifests"].split()[:4])
    deletes = [int(v) for v in fields.get("deletes", "0 0 0").split()[:3]]
    stats_at, changed, data_bytes = (fields.get("statistics") or "- 0 0").split()[:3]
    stats = PartitionStats(n, sse, total, under)
    return {
        "snapshot": int(fields["snapshot"]) if fields.get("snapshot") else None,
        "manifest_stats": stats,
        "manifests": n,
        "manifests_undersized": under,
        "manifest_bytes": total,
        "manifest_mse": stats.mse,
        "manifest_target": int(fields["manifest_target"]),
        "snapshots": int(fields["snapshots"]),
        "oldest_snapshot_ms": int(fields["oldest_snapshot_ms"])
        if fields.get("oldest_snapshot_ms")
        else None,
        "expirable_snapshots": int(fields.get("expirable", "0")),
        "metadata_bytes": int(fields["metadata_bytes"]),
        **dict(zip(("data_rows", "delete_files", "deleted_rows"), deletes, strict=True)),
        "stats_snapshot": None if stats_at == "-" else int(stats_at),
        "stats_changed_rows": int(changed),
        "data_bytes": int(data_bytes),
    }


class HealthStore(Protocol):
    def save(self, table: str, health: MetadataHealth) -> None: ...

    def load(self, table: str) -> dict[str, Any] | None:
        """:func:`summary` of the stored health, or None."""
        ...

    def last_runs(self, table: str) -> dict[str, int]:
        """action → unix ms it last ran (``remove_orphan_files``: the table's first sighting
        until it first runs)."""
        ...

    def mark_run(
        self, table: str, action: str, now_ms: int, only_if_unset: bool = False
    ) -> None: ...

    def holds(self, table: str) -> dict[str, str]:
        """action → why the decider holds it (orphan removal on a shared location)."""
        ...

    def mark_hold(self, table: str, action: str, reason: str | None) -> None:
        """Keep why ``action`` is held (None: it is not)."""
        ...

    def save_record(
        self, table: str, record: Mapping[str, Any], rank: Mapping[str, Any] | None = None
    ) -> None:
        """Keep the table's record (``icefloe.service.observe.kept``), replacing the last, and
        what it is ranked by (``rank``: a few fields; None: none, the reader ranks it
        from the record)."""
        ...

    def ranks(self, tables: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The kept ranks of ``tables``, those there are (a damaged one left out): one
        round trip a thousand tables, a few dozen bytes a table."""
        ...

    def records(
        self, tables: Sequence[str] | None = None, verdicts: bool = True
    ) -> dict[str, dict[str, Any]]:
        """The kept records of ``tables`` (None: every table's), those there are; one
        round trip a thousand tables. A damaged record is left out (logged): the decider
        writes it again. ``verdicts`` False: without their ``verdicts`` (kept apart: the
        bulk of a big table's record), for a list that shows none."""
        ...

    def drop_records(self, tables: Sequence[str]) -> None:
        """Forget the records of tables no longer managed."""
        ...

    def save_managed(self, tables: Sequence[str]) -> None:
        """Keep the managed tables as the decider listed them."""
        ...

    def managed(self) -> list[str] | None:
        """The managed tables the decider last listed (None: never listed)."""
        ...


def from_summary(stored: Mapping[str, Any]) -> MetadataHealth:
    """A stored health (:func:`summary`) as a :class:`MetadataHealth` again (the snapshot
    times are not stored: ``expirable`` holds as many zeros as there were)."""
    return MetadataHealth(
        snapshot_id=stored["snapshot"],
        manifest_target=stored["manifest_target"],
        manifests=stored["manifest_stats"],
        snapshots=stored["snapshots"],
        oldest_snapshot_ms=stored["oldest_snapshot_ms"],
        expirable=(0,) * stored["expirable_snapshots"],
        metadata_bytes=stored["metadata_bytes"],
        data_rows=stored["data_rows"],
        delete_files=stored["delete_files"],
        deleted_rows=stored["deleted_rows"],
        stats_snapshot_id=stored["stats_snapshot"],
        stats_changed_rows=stored["stats_changed_rows"],
        data_bytes=stored["data_bytes"],
    )
