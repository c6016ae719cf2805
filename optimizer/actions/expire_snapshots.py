"""``expire_snapshots``: due when some snapshot beyond the newest ``retain_last`` is older
than ``snapshot_max_age_hours``, and the last expiry is ``expire_interval_hours`` ago."""

from __future__ import annotations

from icefloe.optimizer.actions.spec import TABLE, ActionSpec
from icefloe.optimizer.maintenance_rules import MaintenanceRules, MetadataHealth, Need

NAME = "expire_snapshots"


def due(
    health: MetadataHealth, rules: MaintenanceRules, now_ms: int, last_run_ms: int | None
) -> Need | None:
    cutoff = now_ms - rules.snapshot_max_age_ms
    old = [t for t in health.expirable if t < cutoff]
    if not old:
        return None
    if last_run_ms is not None and now_ms - last_run_ms < rules.expire_interval_ms:
        return None
    return Need(
        NAME,
        health.metadata_bytes,
        float(len(old)),
        f"{len(old)} of {health.snapshots} snapshots past retention",
    )


SPEC = ActionSpec(
    NAME,
    TABLE,
    "expire old snapshots, keeping the newest retain_last",
    keys=(
        "maintenance.snapshot_max_age_hours",
        "maintenance.retain_last",
        "maintenance.expire_interval_hours",
    ),
    due=due,
    runner="icefloe.jobs.maintenance.runners:expire_snapshots",
    history=("deleted_data_files_count", "deleted_manifest_files_count"),
)
