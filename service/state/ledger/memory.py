"""The ledger in memory, for unit tests: the semantics of
:class:`service.state.ledger.redis.RedisLedger` in plain Python (one call, one step)."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

from service.state.ledger import RECENT_CAP, action_counts


class MemoryLedger:
    """Plain dicts and a list; recent actions kept as the JSON Redis would hold."""

    def __init__(self) -> None:
        self._counters: dict[str, int] = {}
        self._recent: list[str] = []
        self._scheduler: dict[str, Any] | None = None
        self._actors: dict[str, float] = {}
        self._launch_until = float("-inf")

    def count(self, increments: Mapping[str, int]) -> None:
        for name, by in increments.items():
            if by:
                self._counters[name] = self._counters.get(name, 0) + int(by)

    def counters(self) -> dict[str, int]:
        return dict(self._counters)

    def record_action(self, entry: Mapping[str, Any], cap: int = RECENT_CAP) -> None:
        self._recent.insert(0, json.dumps(entry, sort_keys=True, default=str))
        del self._recent[cap:]
        counts = action_counts(entry)
        for name, by in counts.items():  # zero increments still create the field, as HINCRBY
            self._counters[name] = self._counters.get(name, 0) + by

    def recent(self, n: int) -> list[dict[str, Any]]:
        return [json.loads(raw) for raw in self._recent[:n]]

    def scheduler_state(self) -> dict[str, Any] | None:
        return copy.deepcopy(self._scheduler)

    def save_scheduler_state(self, state: dict[str, Any]) -> None:
        self._scheduler = copy.deepcopy(state)

    def heartbeat(self, actor_id: str, now: float) -> None:
        self._actors[actor_id] = float(now)

    def forget_actor(self, actor_id: str) -> None:
        self._actors.pop(actor_id, None)

    def actors(self) -> dict[str, float]:
        return dict(self._actors)

    def claim_launch(self, now: float, ttl_seconds: float) -> bool:
        if now < self._launch_until:
            return False
        self._launch_until = now + max(1, int(ttl_seconds))
        return True
