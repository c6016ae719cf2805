"""``compute_stats``: Iceberg's table statistics (Puffin NDV sketches, ``compute_table_stats``)
and partition statistics (``compute_partition_stats``) computed again once the table has
changed enough since the statistics' snapshot: ``stats_changed_ratio`` of its rows added,
deleted or rewritten (a compaction's ``replace`` counts its rows twice: read and written),
and not more often than ``stats_interval_hours``. A table with rows and no statistics yet is
due at once. Engines' cost-based optimizers read both; compaction changes the files they
describe.

The first action built on the registry: this module and one line in
:mod:`icefloe.optimizer.actions` (its facts -- the snapshot the statistics describe and the rows
changed since -- are read with every table's health, ``icefloe.optimizer.maintenance_rules``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from icefloe.optimizer.actions.spec import TABLE, ActionSpec, Call, Setting
from icefloe.optimizer.maintenance_rules import MaintenanceRules, MetadataHealth, Need

NAME = "compute_stats"
RATIO, INTERVAL = "stats_changed_ratio", "stats_interval_hours"
DEFAULT_RATIO, DEFAULT_INTERVAL_HOURS = 0.2, 1.0
HOUR_MS = 3_600_000


def due(
    health: MetadataHealth, rules: MaintenanceRules, now_ms: int, last_run_ms: int | None
) -> Need | None:
    if health.data_rows <= 0 or health.snapshot_id is None:
        return None
    if health.stats_snapshot_id == health.snapshot_id:
        return None  # current
    interval_ms = int(rules.setting(INTERVAL, DEFAULT_INTERVAL_HOURS) * HOUR_MS)
    if last_run_ms is not None and now_ms - last_run_ms < interval_ms:
        return None
    cost = health.data_bytes
    if health.stats_snapshot_id is None:
        return Need(NAME, cost, 1.0, f"no table statistics yet ({health.data_rows} rows)")
    share = health.stats_changed_rows / health.data_rows
    if share < rules.setting(RATIO, DEFAULT_RATIO):
        return None
    return Need(
        NAME,
        cost,
        share,
        f"{health.stats_changed_rows} rows changed since the statistics "
        f"({share:.0%} of {health.data_rows})",
    )


def calls(facts: Mapping[str, Any]) -> tuple[Call, ...]:
    """Table statistics; partition statistics too where the table is partitioned (Iceberg
    refuses them on a table that never was); both of the snapshot read (a commit meanwhile
    is left for the next pass)."""
    at = {"snapshot_id": facts["snapshot"]}
    if facts["partitioned"]:
        return (Call("compute_table_stats", at), Call("compute_partition_stats", at))
    return (Call("compute_table_stats", at),)


def verify(before: Mapping[str, Any], after: Mapping[str, Any]) -> str | None:
    """The newest statistics in the current ancestry describe the snapshot that was current
    (both procedures commit metadata only; a writer's commit meanwhile keeps that snapshot
    in the ancestry, and the next pass sees the statistics behind it)."""
    kinds = ("statistics", "partition_statistics") if before["partitioned"] else ("statistics",)
    for kind in kinds:
        if after[kind] != before["snapshot"]:
            return f"no {kind.replace('_', ' ')} registered for snapshot {before['snapshot']}"
    return None


SPEC = ActionSpec(
    NAME,
    TABLE,
    "compute Iceberg's table and partition statistics for the current snapshot",
    settings=(
        Setting(
            RATIO, DEFAULT_RATIO, "fraction", "rows changed since the statistics, of the table's"
        ),
        Setting(
            INTERVAL, DEFAULT_INTERVAL_HOURS, "hours", "at most one refresh a table this often"
        ),
    ),
    due=due,
    calls=calls,
    verify=verify,
    history=("statistics_file", "partition_statistics_file"),
    maintain_when_due=False,  # a Spark job over every row: when enabled, or named
)
