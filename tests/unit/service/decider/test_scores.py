"""The decider's health scores (``icefloe.service.decider.scores``): the documented score of what
the rolling stats hold, the partitions read once per snapshot, not once per pass."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from icefloe.base.tablestats import table_score
from icefloe.optimizer import stats_from_sizes
from icefloe.optimizer.health_score import removable_mse
from icefloe.optimizer.maintenance_rules import MetadataHealth
from icefloe.service.decider.scores import Scores
from icefloe.state.rolling.memory import MemoryStats
from tests.support.config import make_config

pytestmark = [pytest.mark.unit]
T = 1 << 20


class CountingStats(MemoryStats):
    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    def partitions(self, table: str) -> Any:
        self.reads += 1
        return super().partitions(table)


def test_scores_follow_the_stats_and_read_them_once_per_snapshot(tmp_path: Path) -> None:
    policy = make_config(tmp_path).policy_for("db.t")
    stats = CountingStats()
    small = {"a": stats_from_sizes([T // 10] * 8, T), "b": stats_from_sizes([T], T)}
    stats.replace("db.t", 1, T, small, 0.0)
    health = MetadataHealth.of(1, [8 << 20], 8 << 20, [1_000], 4096, retain_last=1)
    scores = Scores(stats)
    first = scores.update("db.t", policy, health, 10.0)
    assert first == table_score(policy, removable_mse(small.values(), T), health, 10.0)
    assert first.total < 100 and first.worst == "data_files"
    scores.update("db.t", policy, health, 20.0)  # the same snapshot: no second read
    assert stats.reads == 1

    merged = {"a": stats_from_sizes([T // 10 * 8], T), "b": stats_from_sizes([T], T)}
    stats.replace("db.t", 2, T, merged, 30.0)
    later = MetadataHealth.of(2, [8 << 20], 8 << 20, [1_000, 2_000], 4096, retain_last=1)
    after = scores.update("db.t", policy, later, 30.0)
    assert stats.reads == 2
    assert after.total > first.total
    assert scores.totals() == {"db.t": after.total}
