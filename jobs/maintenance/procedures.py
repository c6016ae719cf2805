"""Metadata maintenance through Iceberg's own Spark procedures, with safe defaults.

Iceberg already does these well; what this module adds is the guard rails:

* procedures are called by their fully qualified name (``lake.system.expire_snapshots``),
  so the session's current catalog never matters;
* the table identifier is validated (letters, digits, underscores) before it is quoted
  into the ``CALL``; timestamps are formatted here, never taken as text;
* ``older_than`` cannot be too recent. Expiring snapshots newer than ``MIN_SNAPSHOT_AGE``
  could break readers and time travel in flight; removing "orphan" files newer than
  ``MIN_ORPHAN_AGE`` could delete the files of a write (or of an actor's rewrite) that
  has not committed yet, which is data loss. Both limits are hard: a UsageError;
* orphan removal never runs on a location another table shares
  (``icefloe.jobs.maintenance.sharing``: a ``register_table`` clone, a table nested
  inside, or around, this one) unless each such table is explicitly allowed.

``now`` is a parameter (UTC) so that the limits are testable without a clock.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from icefloe.base.catalog import load_catalog, load_table
from icefloe.base.config import Config, parse_table_identifier
from icefloe.base.errors import OperationFailed, UsageError
from icefloe.jobs.maintenance.sharing import guard_orphan_removal
from icefloe.jobs.rewrite.locations import local_path

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

MIN_SNAPSHOT_AGE = timedelta(hours=1)
MIN_ORPHAN_AGE = timedelta(days=1)
DEFAULT_SNAPSHOT_AGE = timedelta(days=5)
DEFAULT_ORPHAN_AGE = timedelta(days=3)  # Iceberg's own default
DEFAULT_RETAIN_LAST = 5


@dataclass(frozen=True)
class MaintenanceReport:
    table: str
    procedure: str
    result: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"table": self.table, "procedure": self.procedure, "result": dict(self.result)}


def _now(now: datetime | None) -> datetime:
    now = now or datetime.now(UTC)
    if now.tzinfo is None:
        raise UsageError("now must be timezone-aware (UTC)")
    return now


def _cutoff(
    older_than: datetime | None, now: datetime, default: timedelta, minimum: timedelta, what: str
) -> datetime:
    cutoff = older_than or now - default
    if cutoff.tzinfo is None:
        raise UsageError(f"{what}: older_than must be timezone-aware (UTC), got {cutoff}")
    if cutoff > now - minimum:
        raise UsageError(
            f"{what}: older_than {cutoff.isoformat()} is too recent; it must be at least "
            f"{minimum} before now ({now.isoformat()})"
        )
    return cutoff


def _sql_timestamp(ts: datetime) -> str:
    return "TIMESTAMP '" + ts.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f") + "'"


def call_procedure(
    spark: SparkSession, cfg: Config, table: str, procedure: str, args: str = ""
) -> MaintenanceReport:
    """``CALL <catalog>.system.<procedure>(table => '<table>'<args>)``: its rows' numbers
    summed, other values listed by column (a registered action's procedures,
    ``icefloe.optimizer.actions``, go through here: the identifier is checked first)."""
    parse_table_identifier(table)
    load_table(load_catalog(cfg), table)  # TableNotFound before any SQL
    sql = f"CALL {cfg.catalog.name}.system.{procedure}(table => '{table}'{args})"
    try:
        rows = spark.sql(sql).collect()
    except Exception as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise OperationFailed(f"{procedure} on {table} failed: {first}") from e
    result: dict[str, Any] = {}
    for row in rows:
        for key, value in row.asDict().items():
            if isinstance(value, int | float) and not isinstance(value, bool):
                result[key] = result.get(key, 0) + value
            else:
                result.setdefault(key, []).append(value)  # e.g. each orphan file's location
    result["rows"] = len(rows)
    return MaintenanceReport(table, procedure, result)


def expire_snapshots(
    spark: SparkSession,
    cfg: Config,
    table: str,
    older_than: datetime | None = None,
    retain_last: int = DEFAULT_RETAIN_LAST,
    now: datetime | None = None,
) -> MaintenanceReport:
    """Expire snapshots older than ``older_than`` (default 5 days), keeping ``retain_last``."""
    if retain_last < 1:
        raise UsageError(f"expire_snapshots: retain_last must be >= 1, got {retain_last}")
    cutoff = _cutoff(
        older_than, _now(now), DEFAULT_SNAPSHOT_AGE, MIN_SNAPSHOT_AGE, "expire_snapshots"
    )
    args = f", older_than => {_sql_timestamp(cutoff)}, retain_last => {int(retain_last)}"
    return call_procedure(spark, cfg, table, "expire_snapshots", args)


def rewrite_manifests(spark: SparkSession, cfg: Config, table: str) -> MaintenanceReport:
    """Regroup manifests by partition (faster planning after many small commits)."""
    return call_procedure(spark, cfg, table, "rewrite_manifests", "")


def remove_orphan_files(
    spark: SparkSession,
    cfg: Config,
    table: str,
    older_than: datetime | None = None,
    dry_run: bool = False,
    now: datetime | None = None,
    allow_shared: Collection[str] = (),
) -> MaintenanceReport:
    """Delete files under the table location that no snapshot references and that are
    older than ``older_than`` (default 3 days, never less than one day). Refused
    (:class:`OperationFailed`, nothing deleted) while another table of the catalog has
    files under that location, unless each such table is in ``allow_shared``
    (``icefloe.jobs.maintenance.sharing``)."""
    cutoff = _cutoff(
        older_than, _now(now), DEFAULT_ORPHAN_AGE, MIN_ORPHAN_AGE, "remove_orphan_files"
    )
    args = f", older_than => {_sql_timestamp(cutoff)}, dry_run => {str(bool(dry_run)).lower()}"
    parse_table_identifier(table)
    catalog = load_catalog(cfg)
    loaded = load_table(catalog, table)
    guard_orphan_removal(catalog, table, loaded, allow_shared)
    location = loaded.location()
    if local_path(location) is None:
        # object storage: list through the table's FileIO (S3FileIO lists by prefix); the
        # default listing goes through Hadoop's file systems, which need not reach it
        args += ", prefix_listing => true"
    return call_procedure(spark, cfg, table, "remove_orphan_files", args)
