"""The ledger in memory, for unit tests: the semantics of
:class:`icefloe.state.ledger.redis.RedisLedger` in plain Python (one call, one step)."""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Mapping
from typing import Any

from icefloe.state.ledger import RECENT_CAP, Ledger, action_counts, stream_order


class MemoryLedger(Ledger):
    """Plain dicts and a list; recent actions kept as the JSON Redis would hold."""

    def __init__(self) -> None:
        self._counters: dict[str, int] = {}
        self._recent: list[str] = []
        self._scheduler: dict[str, Any] | None = None
        self._actors: dict[str, float] = {}
        self._launch_until = float("-inf")
        self._history: list[tuple[tuple[int, int], str]] = []  # ((ms, seq), JSON), as a stream
        self._clock = time.time

    def count(self, increments: Mapping[str, int]) -> None:
        for name, by in increments.items():
            if by:
                self._counters[name] = self._counters.get(name, 0) + int(by)

    def counters(self) -> dict[str, int]:
        return dict(self._counters)

    def record_action(
        self, entry: Mapping[str, Any], cap: int = RECENT_CAP, history: bool = False
    ) -> None:
        raw = json.dumps(entry, sort_keys=True, default=str)
        self._recent.insert(0, raw)
        del self._recent[cap:]
        if history:  # a stream id: milliseconds, then a sequence within the millisecond
            ms = int(self._clock() * 1000)
            last = self._history[-1][0] if self._history else (0, 0)
            self._history.append(((ms, 0) if ms > last[0] else (last[0], last[1] + 1), raw))
        counts = action_counts(entry)
        for name, by in counts.items():  # zero increments still create the field, as HINCRBY
            self._counters[name] = self._counters.get(name, 0) + by

    def recent(self, n: int) -> list[dict[str, Any]]:
        return [json.loads(raw) for raw in self._recent[:n]]

    def history_after(self, last_id: str | None, count: int) -> list[tuple[str, dict[str, Any]]]:
        after = (-1, -1) if last_id is None else stream_order(last_id)
        found = [(f"{i[0]}-{i[1]}", json.loads(raw)) for i, raw in self._history if i > after]
        return found[:count]

    def trim_history(self, upto_id: str) -> None:
        upto = stream_order(upto_id)
        self._history = [(i, raw) for i, raw in self._history if i >= upto]  # as XTRIM MINID

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
