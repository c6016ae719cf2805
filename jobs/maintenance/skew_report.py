"""The ``skew_report`` action's runner (``icefloe.optimizer.actions.skew_report``): the hot-key
reports of the policy's ``maintenance.skew_keys`` counted again at the table's current
snapshot and published as its ``icefloe.skew.hot-keys.<column>`` properties
(:func:`icefloe.jobs.skew.detect.detect_table` with ``refresh``), then verified from the metadata:
each column's property decodes and describes the snapshot counted (or a later report
written meanwhile)."""

from __future__ import annotations

import time
from typing import Any

from icefloe.base.catalog import load_table
from icefloe.base.config import Config
from icefloe.base.errors import OperationFailed, UsageError
from icefloe.jobs.skew.detect import detect_table
from icefloe.optimizer.actions.skew_report import KEYS, NAME
from icefloe.optimizer.skew_report import reports_in


def refresh_reports(
    spark: Any, cfg: Config, catalog: Any, name: str, before: Any, dry_run: bool
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Count and publish the reports of the policy's ``skew_keys`` on ``name``: (result,
    what was verified). ``dry_run``: the columns it would count, nothing counted."""
    columns = list(cfg.policy_for(name, before.properties).maintenance.column_settings()[KEYS])
    if not columns:
        raise UsageError(
            f"{NAME} on {name}: no maintenance.skew_keys in its policy (the columns whose "
            "hot keys to report)"
        )
    if before.current_snapshot() is None:
        raise UsageError(f"{NAME} on {name}: the table has no snapshot yet (no data)")
    if dry_run:
        return {"columns": columns, "published": []}, {}
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
    return result, {"reports_of_snapshot": report["snapshot_id"]}
