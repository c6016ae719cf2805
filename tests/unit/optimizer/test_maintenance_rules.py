"""When metadata maintenance pays (``icefloe.optimizer.maintenance_rules``): each rule's threshold,
and the manifests' health equal to a direct computation."""

from __future__ import annotations

import random

import pytest

from icefloe.optimizer import PartitionStats, stats_from_sizes
from icefloe.optimizer.actions import table_needs
from icefloe.optimizer.maintenance_rules import MaintenanceRules, MetadataHealth
from icefloe.optimizer.verdict import deletes_verdict

pytestmark = [pytest.mark.unit]

HOUR = 3_600_000
T = 8 << 20
RULES = MaintenanceRules(
    manifest_tolerance=T // 3,
    min_manifests=8,
    snapshot_max_age_ms=120 * HOUR,
    retain_last=5,
    expire_interval_ms=HOUR,
    orphan_interval_ms=24 * HOUR,
    delete_ratio=0.1,
)
ALL = ("rewrite_manifests", "expire_snapshots", "remove_orphan_files")
NOW = 1_000 * HOUR


def health(
    manifests: list[int], snapshot_ages_h: list[float], retain_last: int = 5
) -> MetadataHealth:
    times = [int(NOW - a * HOUR) for a in snapshot_ages_h]
    return MetadataHealth.of(1, manifests, T, times, 4096, retain_last)


def test_health_is_the_direct_computation() -> None:
    rng = random.Random(7)
    sizes = [rng.randint(1, 3 * T) for _ in range(200)]
    ages = [rng.uniform(0, 500) for _ in range(50)]
    h = health(sizes, ages)
    assert h.manifests == stats_from_sizes(sizes, T)
    assert h.snapshots == 50 and h.oldest_snapshot_ms == int(NOW - max(ages) * HOUR)
    assert (
        len(h.expirable) == 45 and max(h.expirable) <= sorted(int(NOW - a * HOUR) for a in ages)[44]
    )


def test_manifests_wait_for_enough_small_ones() -> None:
    assert table_needs(health([6000] * 7, [1]), RULES, ALL, NOW, {"remove_orphan_files": NOW}) == []
    (need,) = table_needs(health([6000] * 8, [1]), RULES, ALL, NOW, {"remove_orphan_files": NOW})
    assert need.action == "rewrite_manifests" and "8 of 8 manifests" in need.reason
    assert need.cost_bytes == 8 * 6000  # the small manifests' bytes (equal sizes: exact)
    well_sized = [T] * 80 + [6000] * 8  # min_manifests small ones, but MSE under tolerance²
    assert table_needs(health(well_sized, [1]), RULES, ["rewrite_manifests"], NOW, {}) == []


def test_snapshots_expire_past_retention_and_not_too_often() -> None:
    young = health([T], [1, 2, 3, 4, 5, 6, 7])
    assert table_needs(young, RULES, ["expire_snapshots"], NOW, {}) == []
    old = health([T], [200, 150, 4, 3, 2, 1, 0.5])  # two past 120 h, beyond the newest 5
    (need,) = table_needs(old, RULES, ["expire_snapshots"], NOW, {})
    assert need.action == "expire_snapshots" and need.benefit == 2.0
    recent = {"expire_snapshots": NOW - HOUR // 2}
    assert table_needs(old, RULES, ["expire_snapshots"], NOW, recent) == []
    kept_by_count = health([T], [200, 150, 4])  # only three snapshots: the newest five stay
    assert table_needs(kept_by_count, RULES, ["expire_snapshots"], NOW, {}) == []


def test_orphans_on_a_slow_schedule_from_the_first_sighting() -> None:
    h = health([T], [1])
    assert table_needs(h, RULES, ["remove_orphan_files"], NOW, {}) == []  # first seen now
    seen = {"remove_orphan_files": NOW - 23 * HOUR}
    assert table_needs(h, RULES, ["remove_orphan_files"], NOW, seen) == []
    seen = {"remove_orphan_files": NOW - 25 * HOUR}
    (need,) = table_needs(h, RULES, ["remove_orphan_files"], NOW, seen)
    assert need.action == "remove_orphan_files"


def test_only_enabled_actions_are_decided() -> None:
    h = health([6000] * 40, [300, 200, 100, 4, 3, 2, 1, 0])
    runs = {"remove_orphan_files": NOW - 48 * HOUR}
    assert {n.action for n in table_needs(h, RULES, ALL, NOW, runs)} == set(ALL)
    assert [n.action for n in table_needs(h, RULES, ["expire_snapshots"], NOW, runs)] == [
        "expire_snapshots"
    ]
    assert table_needs(h, RULES, [], NOW, runs) == []


def test_deletes_are_compacted_past_the_ratio() -> None:
    def part(delete_files: int, deleted_rows: int) -> PartitionStats:
        return stats_from_sizes([T, T], T, delete_files, (1000, 500 * delete_files, deleted_rows))

    assert deletes_verdict(part(0, 0), RULES.delete_ratio) is None
    assert deletes_verdict(part(2, 99), RULES.delete_ratio) is None
    need = deletes_verdict(part(2, 100), RULES.delete_ratio)
    assert need is not None and need.action == "compact_deletes" and "10.0% of 1000" in need.reason
    assert need.cost == 2 * T  # the partition's data files are rewritten
    assert PartitionStats().delete_ratio == 0.0
