"""Skew detection over Iceberg tables, and the stored reports later jobs reuse.

Storage skew per partition comes from Iceberg metadata only (``inspect.partitions()``, no
data file is opened); key skew is counted with Spark by :mod:`icefloe.jobs.skew.hot_keys` (exact or
sample-then-verify). The report is persisted per table snapshot in
``<namespace>.skew_reports`` so later jobs (and :func:`salted_join`) reuse it instead of
recounting, and each single-column key's hot keys are published as the table property
``icefloe.skew.hot-keys.<column>`` the JVM's ``SkewRule`` salts by
(:mod:`icefloe.jobs.skew.publish`).

Run as ``icefloe skew detect TABLE --key COL [--key COL] [--join-with T2 --on COL] [--json]``,
or under ``spark-submit app/scripts/skew_detect.py`` with the same arguments.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from icefloe.base.catalog import load_table, spark_table_name
from icefloe.base.config import parse_table_identifier
from icefloe.base.errors import UsageError
from icefloe.base.partition_key import PartitionKey
from icefloe.base.tablestats import spec_fields
from icefloe.jobs.skew.hot_keys import KeyReport, detect_hot_keys, jsonable, measure_keys
from icefloe.jobs.skew.publish import publish_report, unpublished
from icefloe.optimizer.actions.skew_report import HOUR_MS, MAX_AGE
from icefloe.optimizer.skew_stats import HotKeyRules, SkewMetrics, sigma_outliers, skew_metrics

if TYPE_CHECKING:
    from icefloe.base.config import Config

REPORTS_NAMESPACE = "icefloe"
REPORTS_TABLE = "skew_reports"


def storage_skew(table: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]], SkewMetrics]:
    """Bytes, rows and files per partition from ``inspect.partitions()`` (metadata only).

    Returns every partition, the flagged ones (2σ rule on bytes or rows), and the
    robust measures of the byte sizes.
    """
    if table.current_snapshot() is None:
        return [], [], skew_metrics([])
    parts: list[dict[str, Any]] = []
    fields = spec_fields(table)
    for row in table.inspect.partitions().to_pylist():
        spec_id = int(row.get("spec_id") or 0)
        key = PartitionKey.from_mapping(spec_id, fields[spec_id], row.get("partition"))
        parts.append(
            {
                "partition": key.display(),
                "key": key.encode(),
                "bytes": int(row["total_data_file_size_in_bytes"] or 0),
                "rows": int(row["record_count"] or 0),
                "files": int(row["file_count"] or 0),
            }
        )
    parts.sort(key=lambda p: (p["partition"], p["key"]))
    by_bytes = sigma_outliers({p["key"]: p["bytes"] for p in parts})
    by_rows = sigma_outliers({p["key"]: p["rows"] for p in parts})
    flagged = set(by_bytes) | set(by_rows)
    skewed = sorted((p for p in parts if p["key"] in flagged), key=lambda p: -p["bytes"])
    return parts, skewed, skew_metrics(p["bytes"] for p in parts)


def _key_sets(
    tbl: Any, table: str, keys: Sequence[str], other: Any, join_with: str | None, on: str | None
) -> list[list[str]]:
    """The key sets to analyse (``keys``, then ``on``), each column checked (UsageError)."""
    key_sets = [[k] for k in dict.fromkeys(keys)]
    if on and [on] not in key_sets:
        key_sets.append([on])
    if not key_sets:
        raise UsageError("give at least one --key column")
    columns = {f.name for f in tbl.schema().fields}
    for ks in key_sets:
        for c in ks:
            if c not in columns:
                raise UsageError(f"column {c!r} not found in table {table!r}")
    if join_with and not on:
        raise UsageError("--join-with needs --on COL")
    if other is not None and on not in {f.name for f in other.schema().fields}:
        raise UsageError(f"column {on!r} not found in table {join_with!r}")
    return key_sets


def detect_table(
    spark: Any,
    cfg: Config,
    catalog: Any,
    table: str,
    keys: Sequence[str],
    join_with: str | None = None,
    on: str | None = None,
    rules: HotKeyRules = HotKeyRules(),
    method: str = "auto",
    reports_namespace: str = REPORTS_NAMESPACE,
    refresh: bool = False,
) -> dict[str, Any]:
    """The skew report of ``table`` at its current snapshot (reused when already stored),
    its single-column keys published as table properties (``published``: the properties
    written; a reused report's only where they are missing or of another snapshot)."""
    tbl = load_table(catalog, table)
    snap = tbl.current_snapshot()
    snapshot_id = None if snap is None else snap.snapshot_id
    other = load_table(catalog, join_with) if join_with else None
    key_sets = _key_sets(tbl, table, keys, other, join_with, on)
    tag = ",".join(keys) + (f"|{join_with}.{on}" if join_with else "") + f"|{rules}"
    df = _rows_at(spark, spark_table_name(cfg, table), snapshot_id)
    max_age_h = cfg.policy_for(table, tbl.properties).maintenance.settings()[MAX_AGE]
    max_age_ms = int(max_age_h * HOUR_MS)
    if not refresh and snapshot_id is not None:
        cached = load_report(catalog, table, snapshot_id, tag, reports_namespace)
        if cached is not None:
            cached["cached"], cached["published"] = True, []
            single = [ks[0] for ks in key_sets if len(ks) == 1]
            if unpublished(tbl.properties, single, snapshot_id):
                now_ms = int(time.time() * 1000)
                cached["published"] = publish_report(
                    spark, df, catalog, table, cached, now_ms, max_age_ms
                )
            return cached
    parts, skewed, part_metrics = storage_skew(tbl)
    total = int(snap.summary.get("total-records") or 0) if snap and snap.summary else 0
    report: dict[str, Any] = {
        "table": table,
        "snapshot_id": snapshot_id,
        "rows": total,
        "keys": {},
        "partitions": len(parts),
        "skewed_partitions": skewed,
        "metrics": {"partition_bytes": asdict(part_metrics)},
        "cached": False,
    }
    for ks in key_sets:
        kr = detect_hot_keys(
            df, ks, rules, method=method, total_rows=total or None, with_metrics=method != "sample"
        )
        entry = kr.as_json()
        if other is not None and ks == [on]:
            entry["join"] = _join_estimate(spark, cfg, join_with or "", on or "", kr)
        report["keys"][",".join(ks)] = entry
    if snapshot_id is not None:
        save_report(catalog, report, tag, reports_namespace)
    now_ms = int(time.time() * 1000)  # published after it is stored: the stored one says none
    report["published"] = publish_report(spark, df, catalog, table, report, now_ms, max_age_ms)
    return report


def _rows_at(spark: Any, name: str, snapshot_id: int | None) -> Any:
    """The table's rows at ``snapshot_id`` (the snapshot its report names), else as now."""
    reader = spark.read if snapshot_id is None else spark.read.option("versionAsOf", snapshot_id)
    return reader.table(name)


def _join_estimate(spark: Any, cfg: Config, other: str, on: str, kr: KeyReport) -> dict[str, Any]:
    """Output rows each hot key would produce joined with ``other`` (rows × other rows)."""
    keys = [h.key for h in kr.hot]
    odf = spark.table(spark_table_name(cfg, other))
    counts, _, other_rows = measure_keys(odf, [on], keys) if keys else ({}, 0, odf.count())
    per_key = [
        {
            "key": jsonable(h.key),
            "rows": h.rows,
            "other_rows": counts.get(h.key, 0),
            "output_rows": h.rows * counts.get(h.key, 0),
        }
        for h in kr.hot
    ]
    return {
        "with": other,
        "on": on,
        "other_rows": other_rows,
        "hot_keys": per_key,
        "hot_output_rows": sum(p["output_rows"] for p in per_key),
    }


def _reports_table(catalog: Any, namespace: str, create: bool) -> Any:
    # pyiceberg: only when a catalog, table or file is used
    from pyiceberg.exceptions import NamespaceAlreadyExistsError, NoSuchTableError
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField, StringType, TimestamptzType

    ident = (namespace, REPORTS_TABLE)
    try:
        return catalog.load_table(ident)
    except NoSuchTableError:
        if not create:
            return None
    except Exception as e:  # a missing namespace: no reports yet
        if type(e).__name__ != "NoSuchNamespaceError":
            raise
        if not create:
            return None
    try:
        catalog.create_namespace(namespace)
    except NamespaceAlreadyExistsError:
        pass
    schema = Schema(
        NestedField(1, "table_name", StringType(), required=False),
        NestedField(2, "snapshot_id", LongType(), required=False),
        NestedField(3, "tag", StringType(), required=False),
        NestedField(4, "created_at", TimestamptzType(), required=False),
        NestedField(5, "report", StringType(), required=False),
    )
    return catalog.create_table_if_not_exists(ident, schema)


def save_report(catalog: Any, report: dict[str, Any], tag: str, namespace: str) -> None:
    """Append one report row (table, snapshot, tag, JSON) to ``<namespace>.skew_reports``."""
    # pyarrow: only when files are read or written
    import pyarrow as pa

    tbl = _reports_table(catalog, namespace, create=True)
    row = pa.table(
        {
            "table_name": pa.array([report["table"]], pa.string()),
            "snapshot_id": pa.array([report["snapshot_id"]], pa.int64()),
            "tag": pa.array([tag], pa.string()),
            "created_at": pa.array([dt.datetime.now(dt.UTC)], pa.timestamp("us", tz="UTC")),
            "report": pa.array([json.dumps(report, default=str, sort_keys=True)], pa.string()),
        }
    )
    tbl.append(row)


def load_report(
    catalog: Any,
    table: str,
    snapshot_id: int | None = None,
    tag: str | None = None,
    namespace: str = REPORTS_NAMESPACE,
) -> dict[str, Any] | None:
    """The newest stored report of ``table`` (at ``snapshot_id`` / with ``tag`` if given)."""
    parse_table_identifier(table)  # safe to quote into the filter below
    tbl = _reports_table(catalog, namespace, create=False)
    if tbl is None:
        return None
    cond = f"table_name = '{table}'"
    if snapshot_id is not None:
        cond += f" AND snapshot_id = {int(snapshot_id)}"
    rows = tbl.scan(row_filter=cond).to_arrow().to_pylist()
    rows = [r for r in rows if tag is None or r["tag"] == tag]
    if not rows:
        return None
    newest = max(rows, key=lambda r: r["created_at"])
    result: dict[str, Any] = json.loads(newest["report"])
    return result


def stored_reports(catalog: Any, namespace: str = REPORTS_NAMESPACE) -> list[dict[str, Any]]:
    """The newest stored report of every table (by table name): what the dashboard lists."""
    tbl = _reports_table(catalog, namespace, create=False)
    if tbl is None:
        return []
    newest: dict[str, dict[str, Any]] = {}
    for row in tbl.scan().to_arrow().to_pylist():
        seen = newest.get(row["table_name"])
        if seen is None or row["created_at"] > seen["created_at"]:
            newest[row["table_name"]] = row
    return [
        json.loads(r["report"]) | {"created_at": r["created_at"].isoformat(), "tag": r["tag"]}
        for _, r in sorted(newest.items())
    ]


def reports_version(catalog: Any, namespace: str = REPORTS_NAMESPACE) -> str | None:
    """The reports table's metadata location (None before the first report): it changes
    exactly when a report is stored, so a reader that polls reads the reports again then."""
    tbl = _reports_table(catalog, namespace, create=False)
    return None if tbl is None else str(tbl.metadata_location)


def stored_hot_keys(
    catalog: Any, table: str, column: str, namespace: str = REPORTS_NAMESPACE
) -> list[Any] | None:
    """Hot keys of ``column`` from the newest report at the table's current snapshot."""
    snap = load_table(catalog, table).current_snapshot()
    report = load_report(
        catalog, table, None if snap is None else snap.snapshot_id, None, namespace
    )
    if report is None or column not in report.get("keys", {}):
        return None
    return [h["key"] for h in report["keys"][column]["hot_keys"]]


def render_text(report: dict[str, Any]) -> str:
    """A short human summary of a report (the CLI prints this without ``--json``)."""
    lines = [
        f"{report['table']} @ {report['snapshot_id']}: {report['rows']} rows, "
        f"{report['partitions']} partitions" + (" (cached)" if report.get("cached") else "")
    ]
    for col, entry in report["keys"].items():
        hot = ", ".join(f"{h['key']!r} {h['rows']} ({h['share']:.1%})" for h in entry["hot_keys"])
        lines.append(f"  key {col}: {hot or 'no hot keys'} [{entry['method']}]")
        if "join" in entry:
            j = entry["join"]
            lines.append(
                f"    join with {j['with']} on {j['on']}: hot keys produce "
                f"{j['hot_output_rows']} rows"
            )
    for p in report["skewed_partitions"]:
        lines.append(
            f"  skewed partition {p['partition']}: {p['bytes']} bytes, "
            f"{p['rows']} rows, {p['files']} files"
        )
    if not report["skewed_partitions"]:
        lines.append("  no skewed partitions")
    if report.get("published"):
        lines.append(f"  published {', '.join(report['published'])}")
    return "\n".join(lines)
