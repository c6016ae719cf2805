"""``remove_orphan_files``: every ``orphan_interval_hours``, counted from the last run -- or,
never run yet, from when the decider first saw the table (a new table has nothing to clean
yet; ``icefloe maintain`` passes 0: due now). Never while it is *held*: another table's
files lie under its location (``icefloe.optimizer.locations``)."""

from __future__ import annotations

from icefloe.optimizer.actions.spec import TABLE, ActionSpec
from icefloe.optimizer.maintenance_rules import MaintenanceRules, MetadataHealth, Need

NAME = "remove_orphan_files"
NEVER_RUN = 0  # a last run at the epoch: due now (what ``maintain`` assumes of a new table)


def due(
    health: MetadataHealth, rules: MaintenanceRules, now_ms: int, last_run_ms: int | None
) -> Need | None:
    last = now_ms if last_run_ms is None else last_run_ms  # not seen before: from now
    if now_ms - last < rules.orphan_interval_ms:
        return None
    hours = (now_ms - last) / 3_600_000
    since = f"last orphan scan {hours:.1f} h ago" if last > NEVER_RUN else "no orphan scan yet"
    return Need(NAME, 0, 1.0, since)


SPEC = ActionSpec(
    NAME,
    TABLE,
    "delete files under the table's location that no snapshot references",
    keys=(
        "maintenance.orphan_interval_hours",
        "maintenance.orphan_min_age_hours",
        "maintenance.allow_shared_location",
    ),
    due=due,
    runner="icefloe.jobs.maintenance.runners:remove_orphan_files",
    history=("orphan_file_location",),
    dry_run=True,
)
