"""The ledger on Redis, all in the decider's ``{d}`` slot: the counters hash, the recent
actions list (JSON, newest first), the actors' heartbeat hash, the scheduler's state (one
JSON string) and the launch guard (``SET NX EX``). Every public method is an adapter
boundary: Redis library errors leave it as :class:`icefloe.base.errors.ServiceUnavailable`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from icefloe.base.keys import Keys
from icefloe.base.redis_client import text, translated
from icefloe.state.ledger import RECENT_CAP, Ledger, action_counts


class RedisLedger(Ledger):
    """The decider's and the actors' bookkeeping in Redis."""

    def __init__(self, client: Any, keys: Keys):
        self.r = client
        self.k = keys

    @translated("counters update")
    def count(self, increments: Mapping[str, int]) -> None:
        pipe = self.r.pipeline(transaction=False)
        for name, by in sorted(increments.items()):
            if by:
                pipe.hincrby(self.k.counters, name, by)
        pipe.execute()

    @translated("counters read")
    def counters(self) -> dict[str, int]:
        return {text(k): int(v) for k, v in self.r.hgetall(self.k.counters).items()}

    @translated("record action")
    def record_action(
        self, entry: Mapping[str, Any], cap: int = RECENT_CAP, history: bool = False
    ) -> None:
        """One transaction: the entry first in the list, the list trimmed, the counts, and
        with ``history`` the entry added to the history stream (same slot: ``{d}``)."""
        raw = json.dumps(entry, sort_keys=True, default=str)
        pipe = self.r.pipeline(transaction=True)
        pipe.lpush(self.k.recent, raw)
        pipe.ltrim(self.k.recent, 0, cap - 1)
        if history:
            pipe.xadd(self.k.history, {"entry": raw})
        for name, by in action_counts(entry).items():
            pipe.hincrby(self.k.counters, name, by)
        pipe.execute()

    @translated("recent actions read")
    def recent(self, n: int) -> list[dict[str, Any]]:
        return [json.loads(raw) for raw in self.r.lrange(self.k.recent, 0, n - 1)]

    @translated("history read")
    def history_after(self, last_id: str | None, count: int) -> list[tuple[str, dict[str, Any]]]:
        start = "-" if last_id is None else f"({last_id}"
        rows = self.r.xrange(self.k.history, start, "+", count=count)
        return [
            (text(rid), json.loads(fields.get(b"entry") or fields["entry"])) for rid, fields in rows
        ]

    @translated("history trim")
    def trim_history(self, upto_id: str) -> None:
        self.r.xtrim(self.k.history, minid=upto_id, approximate=False)

    @translated("scheduler state read")
    def scheduler_state(self) -> dict[str, Any] | None:
        raw = self.r.get(self.k.scheduler)
        return json.loads(raw) if raw else None

    @translated("scheduler state write")
    def save_scheduler_state(self, state: dict[str, Any]) -> None:
        self.r.set(self.k.scheduler, json.dumps(state))

    @translated("actor heartbeat")
    def heartbeat(self, actor_id: str, now: float) -> None:
        self.r.hset(self.k.actors, actor_id, now)

    @translated("actor heartbeat removal")
    def forget_actor(self, actor_id: str) -> None:
        self.r.hdel(self.k.actors, actor_id)

    @translated("actor heartbeats read")
    def actors(self) -> dict[str, float]:
        return {text(k): float(text(v)) for k, v in self.r.hgetall(self.k.actors).items()}

    @translated("launch guard")
    def claim_launch(self, now: float, ttl_seconds: float) -> bool:
        return bool(self.r.set(self.k.launch_guard, now, nx=True, ex=max(1, int(ttl_seconds))))
