"""The table health score (``icefloe.optimizer.health_score``): the formula by hand on worked
examples, bounds and monotonicity over generated tables, and the worst-first ranking."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from icefloe.optimizer import stats_from_sizes
from icefloe.optimizer.health_score import (
    WEIGHTS,
    HealthInputs,
    Score,
    health_score,
    ramp,
    rank_worst,
    removable_mse,
    steady_ages,
)
from icefloe.optimizer.maintenance_rules import MaintenanceRules, MetadataHealth

pytestmark = [pytest.mark.unit]

HOUR = 3_600_000
T = 300  # a target of 300 bytes keeps the arithmetic by hand short
RULES = MaintenanceRules(
    manifest_tolerance=100,
    min_manifests=8,
    snapshot_max_age_ms=100 * HOUR,
    retain_last=5,
    expire_interval_ms=HOUR,
    orphan_interval_ms=24 * HOUR,
    delete_ratio=0.1,
)
NOW = 10_000 * HOUR

PERFECT = HealthInputs(
    data_mse=0.0,
    target_bytes=T,
    tolerance_bytes=100,
    delete_ratio=0.0,
    delete_ratio_threshold=0.1,
    manifests_undersized=0,
    manifest_mse=0.0,
    manifest_target=T,
    manifest_tolerance=100,
    min_manifests=8,
    snapshots=3,
    oldest_snapshot_age_ms=2 * HOUR,
    retain_last=5,
    snapshot_max_age_ms=100 * HOUR,
    expire_interval_ms=HOUR,
)
# each metric at a value past its component's full point
WORST: dict[str, dict[str, Any]] = {
    "data_files": {"data_mse": float(T * T)},
    "deletes": {"delete_ratio": 0.5},
    "manifests": {"manifests_undersized": 40, "manifest_mse": float(T * T)},
    "snapshots": {"snapshots": 9, "oldest_snapshot_age_ms": 500 * HOUR},
}


def test_a_perfectly_compacted_table_scores_100() -> None:
    score = health_score(PERFECT)
    assert score == Score(100.0, dict.fromkeys(WEIGHTS, 0.0))
    assert score.worst is None


def test_weights_sum_to_100() -> None:
    assert sum(WEIGHTS.values()) == 100


def test_worked_example_by_hand() -> None:
    """Data files all 60 of 300 bytes, 20% of rows deleted, 20 manifests of 60 bytes, the
    oldest of 50 snapshots 151 h old (policy: 100 h, one hour's grace)."""
    data = [stats_from_sizes([60] * 10, T), stats_from_sizes([60] * 4, T)]
    health = MetadataHealth(
        snapshot_id=1,
        manifest_target=T,
        manifests=stats_from_sizes([60] * 20 + [300] * 3, T),
        snapshots=50,
        oldest_snapshot_ms=NOW - 151 * HOUR,
        data_rows=1000,
        delete_files=4,
        deleted_rows=200,
    )
    inputs = HealthInputs.of(removable_mse(data, T), T, 100, health, RULES, NOW)
    score = health_score(inputs)
    # data: merging removes 240² from the ten (600 bytes: two full files) and 240² - 60²
    #   from the four (one 240-byte file); over the 14 files: (10·240² + 4·(240² - 60²)) / 14
    #   = 56,571.4 → x = sqrt(that) / 300 = 0.793; healthy 1/3, full 1 → 0.689 → 27.6
    # deletes: 0.2 against 0.1 .. 0.3 → 0.5 → 12.5
    # manifests: 20 undersized in 8 .. 32 → 0.5; RMSE sqrt(20·240²/23) = 223.8 → x 0.746,
    #   size ramp (0.746 - 1/3) / (2/3) = 0.619 → 20 · 0.5 · 0.619 = 6.19
    # snapshots: 151 h in 101 .. 201 h → 0.5 → 7.5
    size = (math.sqrt(20 * 240**2 / 23) / T - 1 / 3) / (2 / 3)
    removable = (10 * 240**2 + 4 * (240**2 - 60**2)) / 14
    assert removable_mse(data, T) == pytest.approx(removable)
    assert score.components == {
        "data_files": round(40 * (math.sqrt(removable) / T - 1 / 3) / (2 / 3), 1),
        "deletes": 12.5,
        "manifests": round(10 * size, 1),
        "snapshots": 7.5,
    }
    assert score.components["manifests"] == 6.2
    assert score.components["data_files"] == 27.6
    assert score.total == round(100 - 27.6 - 12.5 - 10 * size - 7.5, 1) == 46.2
    assert score.worst == "data_files"
    assert score.to_dict() == {"score": 46.2, "penalties": score.components, "worst": "data_files"}


def test_a_small_file_with_nothing_to_merge_costs_nothing() -> None:
    """One small file per partition (a small table, a fresh day): the decider has nothing
    to do there, so the data files cost no points; two small files in one partition do."""
    alone = [stats_from_sizes([10], T), stats_from_sizes([300, 20], T)]
    assert removable_mse(alone, T) == 0.0
    pair = [stats_from_sizes([10, 20], T)]
    assert removable_mse(pair, T) == pytest.approx(((290**2 + 280**2) / 2 - 270**2) * 2 / 2)


def test_streaming_table_of_1_mib_files_against_128_mib() -> None:
    """The docs' example: the default policy (tolerance a third of the target)."""
    target = 128 << 20
    inputs = dataclasses.replace(
        PERFECT,
        data_mse=float((target - (1 << 20)) ** 2),
        target_bytes=target,
        tolerance_bytes=target // 3,
    )
    # x = 127/128; (0.9922 - 1/3) / (2/3) = 0.9883 → 39.5 points
    assert health_score(inputs).components["data_files"] == 39.5
    assert health_score(inputs).total == 60.5


@pytest.mark.parametrize("component", sorted(WORST))
def test_each_component_moves_the_score_by_its_weight(component: str) -> None:
    score = health_score(dataclasses.replace(PERFECT, **WORST[component]))
    assert score.total == 100 - WEIGHTS[component]
    assert score.worst == component
    assert {k for k, v in score.components.items() if v} == {component}


def test_everything_at_its_worst_scores_0() -> None:
    changes = {k: v for change in WORST.values() for k, v in change.items()}
    assert health_score(dataclasses.replace(PERFECT, **changes)).total == 0.0


def test_what_the_policy_allows_costs_nothing() -> None:
    """Under tolerance, under the delete ratio, fewer small manifests than min_manifests,
    snapshots within their age (or no more than retain_last): 100."""
    inside = dataclasses.replace(
        PERFECT,
        data_mse=99.0**2,
        delete_ratio=0.1,
        manifests_undersized=8,
        manifest_mse=float(T * T),
        snapshots=500,
        oldest_snapshot_age_ms=101 * HOUR,
    )
    assert health_score(inside).total == 100.0
    few = dataclasses.replace(PERFECT, snapshots=5, oldest_snapshot_age_ms=10_000 * HOUR)
    assert health_score(few).total == 100.0
    # many undersized manifests but each nearly full: the size factor keeps them free
    near_full = dataclasses.replace(PERFECT, manifests_undersized=500, manifest_mse=90.0**2)
    assert health_score(near_full).total == 100.0


def test_ramp() -> None:
    assert [ramp(x, 1, 3) for x in (0, 1, 2, 3, 4)] == [0, 0, 0.5, 1, 1]
    assert [ramp(x, 2, 2) for x in (1, 2, 3)] == [0, 0, 1]  # full <= healthy: a step
    assert ramp(5, 2, 1) == 1


@pytest.mark.parametrize(
    ("field", "value"),
    [("target_bytes", 0), ("data_mse", -1.0), ("delete_ratio", math.nan), ("snapshots", -1)],
)
def test_inputs_are_checked(field: str, value: float) -> None:
    change: dict[str, Any] = {field: value}
    with pytest.raises(ValueError, match=field):
        dataclasses.replace(PERFECT, **change)


def test_rank_worst() -> None:
    scores = {
        "db.b": Score(80.0),
        "db.a": Score(80.0),
        "db.c": Score(12.5),
        "db.d": Score(100.0),
    }
    assert [t for t, _ in rank_worst(scores)] == ["db.c", "db.a", "db.b", "db.d"]
    assert [t for t, _ in rank_worst(scores, 2)] == ["db.c", "db.a"]
    assert rank_worst(scores, 0) == []
    assert rank_worst({}, 3) == []
    with pytest.raises(ValueError, match="n must be"):
        rank_worst(scores, -1)


# ---- generated tables ----------------------------------------------------------------------

METRICS: dict[str, st.SearchStrategy[Any]] = {
    "data_mse": st.floats(0, 4 * T * T),
    "delete_ratio": st.floats(0, 2),
    "manifests_undersized": st.integers(0, 100),
    "manifest_mse": st.floats(0, 4 * T * T),
    "snapshots": st.integers(0, 20),
    "oldest_snapshot_age_ms": st.none() | st.integers(0, 400 * HOUR),
}
POLICY: dict[str, st.SearchStrategy[Any]] = {
    "target_bytes": st.integers(1, 10 * T),
    "tolerance_bytes": st.integers(0, 10 * T),
    "delete_ratio_threshold": st.floats(0.001, 1),
    "manifest_tolerance": st.integers(0, 2 * T),
    "min_manifests": st.integers(1, 40),
    "retain_last": st.integers(1, 10),
    "snapshot_max_age_ms": st.integers(HOUR, 200 * HOUR),
    "expire_interval_ms": st.integers(0, 10 * HOUR),
}
tables = st.builds(
    lambda kw: dataclasses.replace(PERFECT, **kw), st.fixed_dictionaries({**METRICS, **POLICY})
)


@given(tables)
def test_bounds(inputs: HealthInputs) -> None:
    score = health_score(inputs)
    assert 0.0 <= score.total <= 100.0
    for name, penalty in score.components.items():
        assert 0.0 <= penalty <= WEIGHTS[name]
    assert score.total == pytest.approx(100 - sum(score.components.values()), abs=0.25)


def _worse(inputs: HealthInputs, field: str, value: float | int | None) -> HealthInputs:
    """``inputs`` with ``field`` moved to the worse of its value and ``value``."""
    old = getattr(inputs, field)
    if field == "oldest_snapshot_age_ms":  # None (no snapshot) is the best age there is
        worse = value if old is None else old if value is None else max(old, value)
    else:
        worse = max(old, value)
    change: dict[str, Any] = {field: worse}
    return dataclasses.replace(inputs, **change)


@given(tables, st.data())
def test_a_worse_table_never_scores_higher(inputs: HealthInputs, data: st.DataObject) -> None:
    field = data.draw(st.sampled_from(sorted(METRICS)))
    worse = _worse(inputs, field, data.draw(METRICS[field]))
    before, after = health_score(inputs), health_score(worse)
    assert after.total <= before.total
    for name in WEIGHTS:
        assert after.components[name] >= before.components[name]


@given(tables, st.integers(0, 600 * HOUR))
def test_a_score_holds_over_its_steady_ages(inputs: HealthInputs, age: int) -> None:
    """Within :func:`steady_ages` the score is the one at ``inputs``' own age (what a kept
    record reuses); only a score whose snapshot part ages has bounds. (No snapshot stays
    no snapshot: the age of none does not move.)"""
    low, high = steady_ages(inputs)
    if inputs.oldest_snapshot_age_ms is not None:
        then = health_score(dataclasses.replace(inputs, oldest_snapshot_age_ms=age))
        if (low is None or age >= low) and (high is None or age <= high):
            assert then == health_score(inputs)
    aged = inputs.oldest_snapshot_age_ms is not None and inputs.snapshots > inputs.retain_last
    assert aged or (low, high) == (None, None)


def test_steady_ages_by_hand() -> None:
    aged = dataclasses.replace(PERFECT, snapshots=9)  # over retain_last: its age counts
    healthy, full = 101 * HOUR, 201 * HOUR  # max age + the expire interval; + max age
    assert steady_ages(PERFECT) == (None, None)  # within retain_last: never ages
    assert steady_ages(dataclasses.replace(aged, oldest_snapshot_age_ms=None)) == (None, None)
    assert steady_ages(aged) == (None, healthy)
    assert steady_ages(dataclasses.replace(aged, oldest_snapshot_age_ms=healthy)) == (
        None,
        healthy,
    )
    on_ramp = dataclasses.replace(aged, oldest_snapshot_age_ms=150 * HOUR)
    assert steady_ages(on_ramp) == (150 * HOUR, 150 * HOUR)
    assert steady_ages(dataclasses.replace(aged, oldest_snapshot_age_ms=full)) == (full, None)
