"""When the hot-key reports are computed again (``icefloe.optimizer.actions.skew_report``): never
without ``skew_keys``; at once for a key without a report; otherwise only off the report's
snapshot, once enough rows changed or half its trusted age passed. And the action is
registered: its settings in the policy, its name where table actions are listed."""

from __future__ import annotations

import pytest

from icefloe.optimizer.actions import BY_NAME, SETTINGS, TABLE_ACTIONS, table_needs
from icefloe.optimizer.actions.skew_report import KEYS, MAX_AGE, NAME, RATIO
from icefloe.optimizer.maintenance_rules import MaintenanceRules, MetadataHealth
from icefloe.optimizer.skew_report import ReportAge

pytestmark = pytest.mark.unit

HOUR = 3_600_000
NOW = 10_000 * HOUR
DAY = 24 * HOUR


def rules(keys: tuple[str, ...] = ("k",), ratio: float = 0.2) -> MaintenanceRules:
    return MaintenanceRules(
        manifest_tolerance=1,
        min_manifests=8,
        snapshot_max_age_ms=120 * HOUR,
        retain_last=5,
        expire_interval_ms=HOUR,
        orphan_interval_ms=24 * HOUR,
        delete_ratio=0.1,
        settings={RATIO: ratio, MAX_AGE: 24.0},
        columns={KEYS: keys},
    )


def health(*reports: ReportAge, rows: int = 1000, snapshot: int | None = 9) -> MetadataHealth:
    return MetadataHealth(
        snapshot_id=snapshot,
        manifest_target=8 << 20,
        manifests=MetadataHealth.of(None, [], 8 << 20, [], 0, 5).manifests,
        snapshots=3,
        oldest_snapshot_ms=0,
        data_rows=rows,
        data_bytes=12345,
        skew_reports=reports,
    )


def age(
    column: str = "k", snapshot: int = 8, hours_old: float = 1.0, changed: int = 0
) -> ReportAge:
    return ReportAge(column, snapshot, NOW - int(hours_old * HOUR), DAY, changed)


def reasons(h: MetadataHealth, r: MaintenanceRules) -> list[str]:
    return [n.reason for n in table_needs(h, r, [NAME], NOW, {})]


def test_never_due_without_keys_or_rows() -> None:
    assert reasons(health(), rules(keys=())) == []
    assert reasons(health(rows=0), rules()) == []
    assert reasons(health(snapshot=None), rules()) == []


def test_a_key_without_a_report_is_due_at_once() -> None:
    (need,) = table_needs(health(age("other")), rules(("k", "other")), [NAME], NOW, {})
    assert need.action == NAME and need.reason == "k: no hot-key report"
    assert need.benefit == 1.0 and need.cost_bytes == 12345


def test_a_report_of_the_current_snapshot_is_never_due() -> None:
    assert reasons(health(age(snapshot=9, hours_old=1000, changed=10**6)), rules()) == []


@pytest.mark.parametrize(
    ("changed", "hours_old", "due"),
    [
        (199, 1.0, False),  # under the ratio, young
        (200, 1.0, True),  # the ratio reached
        (0, 11.9, False),  # under half of its 24 h
        (0, 12.5, True),  # past half: refreshed before the JVM stops trusting it
        (199, 23.0, True),
    ],
)
def test_off_its_snapshot_a_report_is_due_by_rows_changed_or_age(
    changed: int, hours_old: float, due: bool
) -> None:
    found = reasons(health(age(changed=changed, hours_old=hours_old)), rules())
    assert bool(found) is due
    if changed >= 200:
        assert found == ["k: 20% of the rows changed since"]
    elif due:
        assert found == [f"k: {hours_old:.1f} h old"]


def test_the_ratio_is_the_policys() -> None:
    h = health(age(changed=300))
    assert reasons(h, rules(ratio=0.2)) and not reasons(h, rules(ratio=0.5))


def test_several_keys_make_one_need_naming_each() -> None:
    h = health(age("a", changed=500), age("b", snapshot=9))
    (need,) = table_needs(h, rules(("a", "b", "c")), [NAME], NOW, {})
    assert need.reason == "a: 50% of the rows changed since; c: no hot-key report"
    assert need.benefit == 1.0


def test_only_when_enabled() -> None:
    assert table_needs(health(), rules(), ["expire_snapshots"], NOW, {}) == []


def test_the_action_is_registered_with_its_settings() -> None:
    assert NAME in TABLE_ACTIONS and BY_NAME[NAME].calls is None
    keys = {s.key: s for s in SETTINGS}
    assert keys[KEYS].default == () and keys[KEYS].kind == "columns"
    assert keys[RATIO].default == 0.2 and keys[MAX_AGE].default == 24.0
