"""The action history as an Iceberg table: its schema, one row per action, the append.

Actors hand each action's record to Redis (a stream, ``icefloe.base.keys.Keys.history``);
the decider's leader appends them here in batches, one commit per flush. Exactly once: the
append and the id of the newest record it holds go into one commit (the rows and the
table property :data:`LAST_ID` in one transaction), so a flush that died after the
commit but before trimming the stream finds, on its next run, which records the table
already holds and skips them; one that died before the commit appended nothing.

The table is partitioned by day of ``ended_at`` and sorted by nothing (records arrive in
time order); icefloe manages it like any other table (its small files merged, its
snapshots expired), and the property survives those rewrites: Iceberg carries table
properties from one metadata version to the next.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from icefloe.base.tablestats import REWRITE_ID_PROPERTY
from icefloe.state.ledger import stream_order

if TYPE_CHECKING:
    import pyarrow as pa
    from pyiceberg.catalog import Catalog
    from pyiceberg.table import Table

LAST_ID = "icefloe.history.last-id"  # the newest record (a Redis stream id) the table holds
NO_RETRY = {"commit.retry.num-retries": "0"}
"""The history table's commits are never retried by PyIceberg: a retry re-applies the
append to the refreshed table without re-reading :data:`LAST_ID`, so a flusher that
stalled while another appended the same records would append them twice. A conflict
fails the commit instead, and the flusher reads the table's newest id again."""


@dataclass(frozen=True)
class Column:
    name: str
    kind: str  # string, long, int, double, bool, timestamptz, strings
    required: bool = False
    doc: str = ""


COLUMNS: tuple[Column, ...] = (
    Column("record_id", "string", True, "the record's Redis stream id: unique, in time order"),
    Column("table_name", "string", True, "the table the action ran on"),
    Column("action", "string", True, "merge, sort, compact_deletes or a maintenance action"),
    Column("ok", "bool", True, "the action did what it set out to do"),
    Column("outcome", "string", False, "acked, dead-lettered, lease lost, ..."),
    Column("partitions", "strings", False, "the partitions rewritten, as displayed"),
    Column("partition_keys", "strings", False, "the same partitions' typed keys"),
    Column("engine", "string", False, "spark or arrow"),
    Column("started_at", "timestamptz", True),
    Column("ended_at", "timestamptz", True),
    Column("seconds", "double", False),
    Column("files_rewritten", "long", False),
    Column("bytes_rewritten", "long", False),
    Column("files_added", "long", False),
    Column("mse_before", "double", False, "the worst partition's file-size MSE before"),
    Column("mse_after", "double", False, "and after"),
    Column("manifests_before", "int", False),
    Column("manifests_after", "int", False),
    Column("snapshot_id", "long", False, "the commit's snapshot (the last one of a batch)"),
    Column("rewrite_id", "string", False),
    Column("batch_items", "int", False, "queue items the action carried"),
    Column("attempt", "int", False),
    Column("error_class", "string", False),
    Column("error", "string", False, "its first line"),
    Column("actor_id", "string", False),
    Column("decider_id", "string", False, "who appended it: the leader, or the actor at exit"),
    Column("item_id", "string", False, "the queue item (the first one of a batch)"),
    Column("detail", "string", False, "the whole record, JSON"),
)


def iceberg_schema() -> Any:
    """The table's Iceberg schema (field ids 1..n; list elements after them)."""
    from pyiceberg.schema import Schema
    from pyiceberg.types import (
        BooleanType,
        DoubleType,
        IntegerType,
        ListType,
        LongType,
        NestedField,
        StringType,
        TimestamptzType,
    )

    scalar = {
        "string": StringType,
        "long": LongType,
        "int": IntegerType,
        "double": DoubleType,
        "bool": BooleanType,
        "timestamptz": TimestamptzType,
    }
    fields = []
    next_id = len(COLUMNS) + 1
    for i, c in enumerate(COLUMNS, start=1):
        if c.kind == "strings":
            kind: Any = ListType(next_id, StringType(), element_required=True)
            next_id += 1
        else:
            kind = scalar[c.kind]()
        fields.append(NestedField(i, c.name, kind, required=c.required, doc=c.doc or None))
    return Schema(*fields)


def ensure_table(catalog: Catalog, identifier: str) -> Table:
    """The history table, created (and its namespace) on first use."""
    from pyiceberg.exceptions import NamespaceAlreadyExistsError, TableAlreadyExistsError
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.transforms import DayTransform

    namespace = tuple(identifier.split(".")[:-1])
    try:
        catalog.create_namespace(namespace)
    except NamespaceAlreadyExistsError:
        pass
    ended = [c.name for c in COLUMNS].index("ended_at") + 1
    spec = PartitionSpec(PartitionField(ended, 1000, DayTransform(), "ended_day"))
    try:
        return catalog.create_table(
            identifier, iceberg_schema(), partition_spec=spec, properties=NO_RETRY
        )
    except TableAlreadyExistsError:
        return catalog.load_table(identifier)


def without_retries(table: Table) -> Table:
    """The table with :data:`NO_RETRY` set (one commit of that property, once, for a table
    created before it was); call it before reading :func:`last_appended`."""
    if all(table.properties.get(k) == v for k, v in NO_RETRY.items()):
        return table
    with table.transaction() as tx:
        tx.set_properties(NO_RETRY)
    return table


def last_appended(table: Table) -> str | None:
    """The newest record id the table holds (None: no record yet)."""
    return table.properties.get(LAST_ID)


def _moment(epoch: Any) -> datetime:
    return datetime.fromtimestamp(float(epoch), tz=UTC)


def _strings(values: Any) -> list[str] | None:
    if values is None:
        return None
    if isinstance(values, str):
        return [values]
    return [str(v) for v in values]


def to_row(record_id: str, entry: Mapping[str, Any], decider_id: str | None) -> dict[str, Any]:
    """One action record (the actor's entry, as ``status`` shows it) as a history row."""
    ended = entry.get("finished_at")
    seconds = entry.get("seconds")
    if ended is None:  # an older record: the stream id holds its time in milliseconds
        ended = int(record_id.split("-")[0]) / 1000
    started = float(ended) - float(seconds or 0)
    batch = entry.get("batch") or {}
    error = entry.get("error")
    return {
        "record_id": record_id,
        "table_name": str(entry.get("table") or ""),
        "action": str(entry.get("action") or ""),
        "ok": bool(entry.get("ok")),
        "outcome": entry.get("outcome"),
        "partitions": _strings(entry.get("partitions") or entry.get("partition")),
        "partition_keys": _strings(entry.get("keys") or entry.get("key")),
        "engine": entry.get("engine"),
        "started_at": _moment(started),
        "ended_at": _moment(ended),
        "seconds": None if seconds is None else float(seconds),
        "files_rewritten": _int(entry.get("files_rewritten")),
        "bytes_rewritten": _int(entry.get("bytes_rewritten")),
        "files_added": _int(entry.get("files_added")),
        "mse_before": _float(entry.get("mse_before")),
        "mse_after": _float(entry.get("mse_after")),
        "manifests_before": _int(entry.get("manifests_before")),
        "manifests_after": _int(entry.get("manifests_after")),
        "snapshot_id": _int((entry.get("snapshot_ids") or [None])[-1]),
        "rewrite_id": entry.get("rewrite_id"),
        "batch_items": _int(batch.get("items")) if batch else 1,
        "attempt": _int(entry.get("attempt")),
        "error_class": entry.get("error_class") or (_error_class(error) if error else None),
        "error": None if error is None else str(error).splitlines()[0][:500],
        "actor_id": entry.get("actor"),
        "decider_id": decider_id,
        "item_id": entry.get("id"),
        "detail": json.dumps(entry, sort_keys=True, default=str),
    }


PREDICTIONS = ("mse_predicted", "bytes_added", "bytes_added_predicted")
"""What a rewrite's plan predicted beside what it measured (issue #46): kept in each
record's ``detail`` (no column of their own: every history table holds them as it is)."""


def with_predictions(row: Mapping[str, Any]) -> dict[str, Any]:
    """``row`` with :data:`PREDICTIONS` read out of its ``detail`` (None where absent)."""
    try:
        detail = json.loads(row.get("detail") or "{}")
    except ValueError:
        detail = {}
    found = detail if isinstance(detail, dict) else {}
    return dict(row) | {k: found.get(k) for k in PREDICTIONS}


def _int(v: Any) -> int | None:
    return None if v is None or v == "" else int(v)


def _float(v: Any) -> float | None:
    return None if v is None or v == "" else float(v)


def _error_class(error: str) -> str | None:
    """``OperationFailed: ...`` → ``OperationFailed`` (the actor's one-line errors)."""
    head = str(error).split(":", 1)[0].strip()
    return head if head.isidentifier() else None


def to_arrow(rows: Sequence[Mapping[str, Any]]) -> pa.Table:
    import pyarrow as pa
    from pyiceberg.io.pyarrow import schema_to_pyarrow

    return pa.Table.from_pylist(list(rows), schema=schema_to_pyarrow(iceberg_schema()))


def append(table: Table, rows: Sequence[Mapping[str, Any]], last_id: str) -> bool:
    """The rows and the newest id among them in one commit (one ``append`` snapshot), on
    the condition that the table is still as ``table`` holds it (with :data:`NO_RETRY`
    set); False, with nothing committed, when another commit came first."""
    from pyiceberg.exceptions import CommitFailedException

    try:
        with table.transaction() as tx:
            tx.set_properties({LAST_ID: last_id})
            tx.append(to_arrow(rows), snapshot_properties={LAST_ID: last_id})
    except CommitFailedException:
        return False
    return True


def read(
    table: Table, name: str | None = None, since: datetime | None = None
) -> list[dict[str, Any]]:
    """The records of ``name`` (every table when None) ended at or after ``since``,
    oldest first."""
    from pyiceberg import expressions as ex

    terms: Any = ex  # pydantic models: their generated signatures confuse strict typing
    cond: Any = ex.AlwaysTrue()
    if name is not None:
        cond = ex.And(cond, terms.EqualTo("table_name", name))
    if since is not None:
        cond = ex.And(cond, terms.GreaterThanOrEqual("ended_at", since.isoformat()))
    rows = table.scan(row_filter=cond).to_arrow().to_pylist()
    return sorted(rows, key=lambda r: stream_order(r["record_id"]))


def load(catalog: Catalog, identifier: str) -> Table | None:
    """The history table, or None before its first record (nothing is created)."""
    from pyiceberg.exceptions import NoSuchTableError

    try:
        return catalog.load_table(identifier)
    except NoSuchTableError:
        return None


def commit_facts(table: Table, start_id: int | None, end_id: int) -> dict[str, Any]:
    """What a record says of a rewrite's commit: the table's manifests before and after,
    and the rewrite id the commit carries in its summary (``icefloe.jobs.rewrite.commit``)."""
    before = None if start_id is None else table.snapshot_by_id(start_id)
    after = table.snapshot_by_id(end_id)
    summary = None if after is None else after.summary
    return {
        "manifests_before": 0 if before is None else len(before.manifests(table.io)),
        "manifests_after": None if after is None else len(after.manifests(table.io)),
        "rewrite_id": None
        if summary is None
        else summary.additional_properties.get(REWRITE_ID_PROPERTY),
    }
