"""``skew_report``: the hot-key reports the JVM's ``SkewRule`` salts by (table properties
``icefloe.skew.hot-keys.<column>``, :mod:`icefloe.optimizer.skew_report`) computed again before they
go stale, for the policy's ``skew_keys`` columns.

Due when a key column has no report, or its report is not of the current snapshot and
either ``skew_report_changed_ratio`` of the table's rows were added or removed since the
report's snapshot, or more than half its trusted age (``max_age_ms``: the policy's
``skew_report_max_age_hours`` when it was written) has passed -- refreshed before the JVM
stops trusting it. No ``skew_keys``, or a table without rows: never due.

Its facts (each report's snapshot, age and the rows changed since) come with every table's
health (``MetadataHealth.skew_reports``, from the table's properties and snapshot log); it
runs ``icefloe skew detect`` for the key columns (``icefloe.jobs.maintenance.skew_report``)."""

from __future__ import annotations

from icefloe.optimizer.actions.spec import COLUMNS, TABLE, ActionSpec, Setting
from icefloe.optimizer.maintenance_rules import MaintenanceRules, MetadataHealth, Need

NAME = "skew_report"
KEYS, RATIO, MAX_AGE = "skew_keys", "skew_report_changed_ratio", "skew_report_max_age_hours"
DEFAULT_RATIO, DEFAULT_MAX_AGE_HOURS = 0.2, 24.0
HOUR_MS = 3_600_000
REFRESH_AT_AGE = 0.5  # of a report's trusted age: refreshed then, if not of the snapshot


def stale(
    health: MetadataHealth, rules: MaintenanceRules, now_ms: int
) -> list[tuple[str, float, str]]:
    """The key columns whose report is due: (column, benefit, why), in the policy's order."""
    reports = {r.column: r for r in health.skew_reports}
    ratio = rules.setting(RATIO, DEFAULT_RATIO)
    out = []
    for column in rules.names(KEYS):
        r = reports.get(column)
        if r is None:
            out.append((column, 1.0, f"{column}: no hot-key report"))
            continue
        if r.snapshot_id == health.snapshot_id:
            continue  # current
        share = r.changed_rows / health.data_rows
        if share >= ratio:
            out.append((column, share, f"{column}: {share:.0%} of the rows changed since"))
        elif r.older_than(REFRESH_AT_AGE, now_ms):
            hours = (now_ms - r.computed_at_ms) / HOUR_MS
            out.append((column, REFRESH_AT_AGE, f"{column}: {hours:.1f} h old"))
    return out


def due(
    health: MetadataHealth, rules: MaintenanceRules, now_ms: int, last_run_ms: int | None
) -> Need | None:
    if health.data_rows <= 0 or health.snapshot_id is None:
        return None
    found = stale(health, rules, now_ms)
    if not found:
        return None
    benefit = max(b for _, b, _ in found)
    return Need(NAME, health.data_bytes, benefit, "; ".join(why for _, _, why in found))


SPEC = ActionSpec(
    NAME,
    TABLE,
    "compute the hot-key reports of skew_keys again (the JVM SkewRule's table properties)",
    settings=(
        Setting(KEYS, (), COLUMNS, "the columns whose hot keys are reported (none: never due)"),
        Setting(
            RATIO,
            DEFAULT_RATIO,
            "fraction",
            "rows added or removed since a report's snapshot, of the table's",
        ),
        Setting(
            MAX_AGE,
            DEFAULT_MAX_AGE_HOURS,
            "hours",
            "a report is trusted this long after it was computed (refreshed at half)",
        ),
    ),
    due=due,
    runner="icefloe.jobs.maintenance.skew_report:refresh_reports",
    history=("published",),
    maintain_when_due=False,  # a Spark job over every row: when enabled, or named
)
