"""A table's metadata health in memory, for unit tests."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from icefloe.optimizer.maintenance_rules import MetadataHealth
from icefloe.state.health import HealthStore, summary, to_fields


class MemoryHealth(HealthStore):
    def __init__(self) -> None:
        self.data: dict[str, dict[str, str]] = {}
        self.kept: dict[str, str] = {}  # table → its record, as JSON (as Redis keeps it)
        self.listed: list[str] | None = None
        self.ranked: dict[str, str] = {}  # table → its record's rank, as JSON

    def save(self, table: str, health: MetadataHealth) -> None:
        self.data.setdefault(table, {}).update(to_fields(health))

    def load(self, table: str) -> dict[str, Any] | None:
        raw = self.data.get(table, {})
        return summary(raw) if "manifests" in raw else None

    def last_runs(self, table: str) -> dict[str, int]:
        raw = self.data.get(table, {})
        return {k[4:]: int(v) for k, v in raw.items() if k.startswith("run:")}

    def mark_run(self, table: str, action: str, now_ms: int, only_if_unset: bool = False) -> None:
        fields = self.data.setdefault(table, {})
        if not (only_if_unset and f"run:{action}" in fields):
            fields[f"run:{action}"] = str(now_ms)

    def holds(self, table: str) -> dict[str, str]:
        raw = self.data.get(table, {})
        return {k[5:]: v for k, v in raw.items() if k.startswith("hold:")}

    def mark_hold(self, table: str, action: str, reason: str | None) -> None:
        fields = self.data.setdefault(table, {})
        if reason is None:
            fields.pop(f"hold:{action}", None)
        else:
            fields[f"hold:{action}"] = reason

    def save_record(
        self, table: str, record: Mapping[str, Any], rank: Mapping[str, Any] | None = None
    ) -> None:
        self.kept[table] = json.dumps(record, sort_keys=True)
        if rank is None:
            self.ranked.pop(table, None)
        else:
            self.ranked[table] = json.dumps(rank, sort_keys=True)

    def ranks(self, tables: Sequence[str]) -> dict[str, dict[str, Any]]:
        return {t: json.loads(self.ranked[t]) for t in tables if t in self.ranked}

    def records(
        self, tables: Sequence[str] | None = None, verdicts: bool = True
    ) -> dict[str, dict[str, Any]]:
        names = sorted(self.kept) if tables is None else [t for t in tables if t in self.kept]
        out = {t: json.loads(self.kept[t]) for t in names}
        if not verdicts:
            for record in out.values():
                record.pop("verdicts", None)
        return out

    def drop_records(self, tables: Sequence[str]) -> None:
        for table in tables:
            self.kept.pop(table, None)
            self.ranked.pop(table, None)

    def save_managed(self, tables: Sequence[str]) -> None:
        self.listed = sorted(tables)

    def managed(self) -> list[str] | None:
        return None if self.listed is None else list(self.listed)
