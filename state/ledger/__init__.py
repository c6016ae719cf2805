"""The decider's and the actors' bookkeeping, beside the per-table state: monotonic
counters (the metrics endpoint and ``status`` export them), the actors' recent actions
(newest first, capped), their heartbeats, the fair scheduler's state that outlives a
decider, and the launch guard (one launch of actors per lease period, whoever leads).

One Protocol, :class:`Ledger`; two implementations proven by one contract suite
(``tests/support/contracts/ledger.py``): :class:`icefloe.state.ledger.redis.RedisLedger`
(hashes, a list and a key in the decider's ``{d}`` slot) and
:class:`icefloe.state.ledger.memory.MemoryLedger` (for unit tests).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

RECENT_CAP = 200  # recent actions kept (``actor.recent_cap`` in the config)


def action_counts(entry: Mapping[str, Any]) -> dict[str, int]:
    """What one recorded action adds to the counters (zeros left out, except the byte
    count): its outcome, bytes, orphans, milliseconds, commits, partitions and batch."""
    out = {"actions_ok" if entry.get("ok") else "actions_failed": 1}
    out["bytes_rewritten"] = int(entry.get("bytes_rewritten") or 0)
    if entry.get("orphans_deleted"):
        out["orphans_deleted"] = int(entry["orphans_deleted"])
    if entry.get("seconds"):  # whole milliseconds: every counter is an integer
        out["action_ms"] = round(float(entry["seconds"]) * 1000)
    if entry.get("snapshot_ids"):
        out["commits"] = len(entry["snapshot_ids"])
    if entry.get("partitions_rewritten"):
        out["partitions_rewritten"] = int(entry["partitions_rewritten"])
    if entry.get("batch"):
        out["batches"] = 1
        out["batch_items"] = int(entry["batch"].get("items") or 0)
    return out


def stream_order(record_id: str) -> tuple[int, int]:
    """A record id (``<ms>-<seq>``, a Redis stream id) as a sortable pair."""
    ms, _, seq = record_id.partition("-")
    return int(ms), int(seq or 0)


class Ledger(Protocol):
    """Counters, recent actions, heartbeats, the scheduler's state and the launch guard."""

    def count(self, increments: Mapping[str, int]) -> None:
        """Add to the monotonic counters (zero increments change nothing)."""
        ...

    def counters(self) -> dict[str, int]: ...

    def record_action(
        self, entry: Mapping[str, Any], cap: int = RECENT_CAP, history: bool = False
    ) -> None:
        """An actor's report of one action: first of the recent actions (``cap`` kept),
        counted (:func:`action_counts`) and, with ``history``, added to the records the
        history table has yet to take (:meth:`history_after`), in one step."""
        ...

    def history_after(self, last_id: str | None, count: int) -> list[tuple[str, dict[str, Any]]]:
        """Up to ``count`` records for the history table, oldest first, after ``last_id``
        (every one kept when None): (record id, the entry). Ids grow with time."""
        ...

    def trim_history(self, upto_id: str) -> None:
        """Forget the records before ``upto_id`` (the history table holds them)."""
        ...

    def recent(self, n: int) -> list[dict[str, Any]]:
        """The ``n`` newest recorded actions, newest first."""
        ...

    def scheduler_state(self) -> dict[str, Any] | None: ...

    def save_scheduler_state(self, state: dict[str, Any]) -> None: ...

    def heartbeat(self, actor_id: str, now: float) -> None: ...

    def forget_actor(self, actor_id: str) -> None:
        """Drop an actor's heartbeat (it stopped cleanly)."""
        ...

    def actors(self) -> dict[str, float]:
        """Actor id → its last heartbeat."""
        ...

    def claim_launch(self, now: float, ttl_seconds: float) -> bool:
        """True for the one caller that may launch actors now (none again for the TTL)."""
        ...
