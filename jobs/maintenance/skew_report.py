"""The ``skew_report`` action's runner (``icefloe.optimizer.actions.skew_report``): the hot-key
reports of the policy's ``maintenance.skew_keys`` counted again at the table's current
snapshot and published as its ``icefloe.skew.hot-keys.<column>`` properties
(:func:`icefloe.jobs.skew.detect.detect_table` with ``refresh``), then verified from the metadata:
each column's property decodes and describes the snapshot counted (or a later report
written meanwhile)."""

from __future__ import annotations

import time

from icefloe.base.catalog import load_table
from icefloe.base.errors import OperationFailed, UsageError
from icefloe.jobs.maintenance.run import Ran, TableRun
from icefloe.jobs.skew.detect import detect_table
from icefloe.optimizer.actions.skew_report import KEYS, NAME
from icefloe.optimizer.skew_report import reports_in


def refresh_reports(run: TableRun) -> Ran:
    """Count and publish the reports of the policy's ``skew_keys`` on the table; a dry run:
    the columns it would count, nothing counted."""
    spark, cfg, catalog, name, before = run.spark, run.cfg, run.catalog, run.name, run.before
    columns = list(run.maintenance.column_settings()[KEYS])
    if not columns:
        raise UsageError(
            f"{NAME} on {name}: no maintenance.skew_keys in its policy (the columns whose "
            "hot keys to report)"
        )
    if before.current_snapshot() is None:
        raise UsageError(f"{NAME} on {name}: the table has no snapshot yet (no data)")
    if run.dry_run:
        return Ran({"columns": columns, "published": []}, checked=False)
    started_ms = int(time.time() * 1000)
    report = detect_table(spark, cfg, catalog, name, columns, refresh=True)
    have = reports_in(load_table(catalog, name).properties)
    for column in columns:
        r = have.get(column)
        if r is None or (r.snapshot_id != report["snapshot_id"] and r.computed_at_ms < started_ms):
            raise OperationFailed(
                f"{NAME} on {name}: no hot-key report of {column!r} for snapshot "
                f"{report['snapshot_id']} in the table's properties"
            )
    result = {
        "columns": columns,
        "published": report["published"],
        "hot_keys": sum(len(have[c].keys) for c in columns),
    }
    return Ran(result, {"reports_of_snapshot": report["snapshot_id"]})
