"""Each observed table's health score (``icefloe.optimizer.health_score``), for the Prometheus
gauge ``icefloe_table_health_score`` and ``status``.

The data-file part is read from the rolling stats (every partition of the table) only when
the table's snapshot changed; the rest (manifests, deletes, the age of the oldest snapshot)
comes from the metadata health the decider keeps anyway, so a score is current at every
pass and costs nothing for a table nobody wrote to.
"""

from __future__ import annotations

from icefloe.base.config import TablePolicy
from icefloe.base.tablestats import table_score
from icefloe.optimizer.health_score import Score, removable_mse
from icefloe.optimizer.maintenance_rules import MetadataHealth
from icefloe.state.rolling import StatsStore


class Scores:
    def __init__(self, stats: StatsStore) -> None:
        self.stats = stats
        self._data: dict[str, tuple[int | None, float]] = {}  # table → (snapshot, MSE)
        self.current: dict[str, Score] = {}

    def update(self, name: str, policy: TablePolicy, health: MetadataHealth, now: float) -> Score:
        snapshot = health.snapshot_id
        known = self._data.get(name)
        if known is None or known[0] != snapshot:
            parts = self.stats.partitions(name).values()
            known = (snapshot, removable_mse(parts, policy.target))
            self._data[name] = known
        score = table_score(policy, known[1], health, now)
        self.current[name] = score
        return score

    def totals(self) -> dict[str, float]:
        return {name: s.total for name, s in self.current.items()}
