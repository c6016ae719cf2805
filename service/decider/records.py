"""Each table's kept record (:mod:`icefloe.service.observe.kept`), written by the decider that
refreshes it: what ``tables``, ``status`` and the dashboard read instead of the catalog.

A record is built again from the kept state (the partitions' rolling stats, the layout's
bounds and depths, the holds; no catalog call) only when the table's snapshot or metadata
health changed since this process last wrote it, the pass enqueued something for it, or
the record is ``RECORD_MAX_AGE_S`` old: a table nobody writes to costs nothing most passes.
Each record carries its health score and the times it holds over
(:func:`~icefloe.service.observe.kept.kept_score`), so its readers need not score it again. A table
whose refresh failed gets a record of its error.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from icefloe.base.config import PlanInputs
from icefloe.base.errors import ServiceUnavailable
from icefloe.base.layoutspec import LayoutSpec
from icefloe.base.verdicts import rules_of
from icefloe.optimizer.maintenance_rules import MetadataHealth
from icefloe.service.observe.kept import (
    RECORD_MAX_AGE_S,
    build_record,
    clustering_of,
    kept_verdicts,
    rank_of,
)
from icefloe.state.health import HealthStore, to_fields
from icefloe.state.layout import LayoutStore
from icefloe.state.rolling import StatsStore


class Records:
    """Writes the records of the tables this decider refreshes."""

    def __init__(self, stats: StatsStore, health: HealthStore, layouts: LayoutStore) -> None:
        self.stats, self.health, self.layouts = stats, health, layouts
        self._written: dict[str, tuple[Any, float]] = {}  # table → (what it was of, when)
        self._listed: list[str] | None = None

    def update(
        self,
        name: str,
        inputs: PlanInputs,
        layout: LayoutSpec | None,
        health: MetadataHealth,
        now: float,
        enqueued: bool = False,
    ) -> bool:
        """Write ``name``'s record when it may have changed; whether it was written."""
        of = (to_fields(health), inputs.target, inputs.tolerance, layout)
        last = self._written.get(name)
        fresh = last is not None and last[0] == of and now - last[1] < RECORD_MAX_AGE_S
        if fresh and not enqueued:
            return False
        parts = self.stats.partitions(name)
        rules = rules_of(inputs, layout)
        verdicts = kept_verdicts(self.layouts, name, rules, parts, layout)
        tolerance = inputs.policy.clustering_tolerance
        clustering = None if layout is None else clustering_of(self.layouts, name, tolerance, False)
        held = self.health.holds(name)
        record = build_record(inputs, parts, health, verdicts, clustering, held, now)
        self.health.save_record(name, record, rank_of(record))
        self._written[name] = (of, now)
        return True

    def listed(self, names: Sequence[str]) -> set[str]:
        """``names`` (the managed tables just listed), kept for the dashboard when they
        changed since this process last kept them; the records of tables gone are dropped."""
        now = sorted(names)
        if now != self._listed:
            # first listing of this process: the records of tables unmanaged meanwhile too
            before = set(self.health.records()) if self._listed is None else set(self._listed)
            gone = sorted(before - set(now))
            self.health.save_managed(now)
            self.health.drop_records(gone)
            for name in gone:
                self._written.pop(name, None)
            self._listed = now
        return set(now)

    def failed(self, name: str, error: str, now: float) -> None:
        """Keep that ``name`` could not be refreshed, and why (best effort: Redis may be
        what failed); not for a table no longer listed (dropped during the pass)."""
        self._written.pop(name, None)
        if self._listed is not None and name not in self._listed:
            return
        try:
            record = {"v": 1, "at": now, "error": error}
            self.health.save_record(name, record, rank_of(record))
        except ServiceUnavailable:
            pass
