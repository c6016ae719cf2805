"""Hot-key reports published as table properties, for the JVM's ``SkewRule``.

:func:`publish_report` turns the single-column keys of a
:func:`icefloe.jobs.skew.detect.detect_table` report into ``icefloe.skew.hot-keys.<column>``
properties (the codec: :mod:`icefloe.optimizer.skew_report`; the format: ``jvm/README.md``) and sets
them on the analysed table in one metadata commit (no snapshot is added). Each names the column's
Spark type, the snapshot the report was computed at, when, and for how long it is trusted.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from zoneinfo import ZoneInfo

from icefloe.base.catalog import load_table
from icefloe.optimizer.skew_report import (
    HotKeyReport,
    build,
    encode,
    parse_value,
    reports_in,
    supported,
)

COMMIT_ATTEMPTS = 3  # a writer's commit meanwhile: the properties are set again on its metadata
_NATIVE_AS_TEXT = ("decimal", "date", "timestamp")  # a stored report keeps these as str(value)


def spark_type(df: Any, column: str) -> str:
    """The column's Spark type as the JVM rule compares it (``catalogString``; for the key
    types written it equals ``simpleString``)."""
    return str(df.schema[column].dataType.simpleString())


def session_clock(spark: Any) -> Callable[[Any], Any]:
    """Timestamps as Spark returns them to Python (naive, in the process's time zone) → their
    wall clock in the session's time zone, which ``CAST(... AS timestamp)`` reads; other
    values unchanged (and every value when the session's zone is not a zone name)."""
    try:
        zone = ZoneInfo(str(spark.conf.get("spark.sql.session.timeZone")))
    except (ValueError, KeyError, OSError):  # an offset such as "+01:00", or none known
        return lambda v: v

    def wall(value: Any) -> Any:
        if isinstance(value, dt.datetime) and value.tzinfo is None:
            return value.astimezone(zone).replace(tzinfo=None)
        return value

    return wall


def _native(key: Any, type_: str) -> Any:
    """A key of a report (``KeyReport.as_json``, fresh or stored) as Spark returned it:
    decimals, dates and timestamps are kept as their ``str``, which :func:`parse_value`
    reads."""
    if isinstance(key, str) and type_.startswith(_NATIVE_AS_TEXT) and supported(type_):
        try:
            return parse_value(key, type_)
        except ValueError:
            return None
    return key


def column_reports(
    report: Mapping[str, Any],
    types: Mapping[str, str],
    now_ms: int,
    max_age_ms: int,
    clock: Callable[[Any], Any] = lambda v: v,
) -> list[HotKeyReport]:
    """The property report of each single-column key of ``report`` (``detect_table``'s,
    fresh or stored) whose Spark type is in ``types``; none before the table's first
    snapshot. ``clock``: :func:`session_clock`."""
    snapshot_id = report.get("snapshot_id")
    if snapshot_id is None:
        return []
    out = []
    for entry in report["keys"].values():
        columns = entry.get("columns") or []
        if len(columns) != 1 or columns[0] not in types:
            continue
        column, type_ = columns[0], types[columns[0]]
        keys = [(clock(_native(h["key"], type_)), int(h["rows"])) for h in entry["hot_keys"]]
        out.append(
            build(
                column,
                type_,
                int(snapshot_id),
                now_ms,
                max_age_ms,
                int(entry["rows"]),
                int(entry["null_rows"]),
                keys,
            )
        )
    return out


def unpublished(properties: Mapping[str, str], columns: Sequence[str], snapshot_id: int) -> bool:
    """Whether one of ``columns`` has no report property, or one of another snapshot."""
    have = reports_in(properties)
    return any(c not in have or have[c].snapshot_id != snapshot_id for c in columns)


def write_properties(catalog: Any, table: str, reports: Sequence[HotKeyReport]) -> list[str]:
    """Set the reports' properties on ``table`` in one metadata commit (again on the new
    metadata when a writer committed meanwhile); the property names, sorted."""
    # pyiceberg: only when a catalog, table or file is used
    from pyiceberg.exceptions import CommitFailedException

    props = {r.name: encode(r) for r in reports}
    if not props:
        return []
    for attempt in range(COMMIT_ATTEMPTS):
        tbl = load_table(catalog, table)
        try:
            with tbl.transaction() as tx:
                tx.set_properties(props)
            break
        except CommitFailedException:
            if attempt == COMMIT_ATTEMPTS - 1:
                raise
    return sorted(props)


def publish_report(
    spark: Any,
    df: Any,
    catalog: Any,
    table: str,
    report: Mapping[str, Any],
    now_ms: int,
    max_age_ms: int,
) -> list[str]:
    """Publish ``report``'s single-column keys on ``table`` (``df``: its rows, for the
    columns' types); the property names written."""
    columns = [e["columns"][0] for e in report["keys"].values() if len(e["columns"]) == 1]
    types = {c: spark_type(df, c) for c in columns}
    reports = column_reports(report, types, now_ms, max_age_ms, session_clock(spark))
    return write_properties(catalog, table, reports)
