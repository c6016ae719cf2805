"""Every Redis key the decider, the queue and the actors use, in one place, under one prefix.

Why one module: a reader can see the whole Redis footprint at a glance, two processes can
never disagree on a name, and a second deployment sharing a Redis only needs another
``redis.key_prefix``. Table identifiers are validated (letters, digits, ``_`` and ``.``)
before they reach a key name, so no user text can collide with another key.

The queue's Lua scripts build per-table pending keys from :attr:`Keys.pending_prefix`
themselves (``reap`` and ``nack`` do not know the table in advance), so the layout assumes
a single Redis instance, not Redis Cluster.
"""

from __future__ import annotations

from dataclasses import dataclass

from service.config import Config


@dataclass(frozen=True)
class Keys:
    """Key names under ``prefix`` (``cfg.redis.key_prefix``)."""

    prefix: str

    @classmethod
    def for_config(cls, cfg: Config) -> Keys:
        return cls(cfg.redis.key_prefix)

    # ---- reliable priority queue ------------------------------------------------------
    @property
    def item_prefix(self) -> str:
        return f"{self.prefix}:q:item:"

    def item(self, item_id: str) -> str:
        """hash per item: json, table, class, score, enq (first enqueue), attempts, error."""
        return f"{self.item_prefix}{item_id}"

    @property
    def pending_prefix(self) -> str:
        return f"{self.prefix}:q:pending:"

    def pending(self, table: str) -> str:
        """zset: item id → ordering score (higher first), one per table."""
        return f"{self.pending_prefix}{table}"

    @property
    def tables(self) -> str:
        """zset: table with pending items → its priority class."""
        return f"{self.prefix}:q:tables"

    @property
    def ready(self) -> str:
        """zset: item id → dispatch sequence (actors take the lowest)."""
        return f"{self.prefix}:q:ready"

    @property
    def seq(self) -> str:
        return f"{self.prefix}:q:seq"

    @property
    def inflight(self) -> str:
        """zset: item id → lease deadline (unix seconds)."""
        return f"{self.prefix}:q:inflight"

    @property
    def leases(self) -> str:
        """hash: item id → token of the actor holding the lease."""
        return f"{self.prefix}:q:leases"

    @property
    def intents(self) -> str:
        """hash: lease token → JSON of the files its attempt is writing (``service.intents``)."""
        return f"{self.prefix}:q:intents"

    @property
    def dead(self) -> str:
        """zset: dead-lettered item id → time it died (its item hash keeps the last error)."""
        return f"{self.prefix}:q:dead"

    # ---- rolling statistics -----------------------------------------------------------
    def stats(self, table: str) -> str:
        """hash: partition key → "n sse total_bytes undersized delete_files": five exact
        integers separated by spaces (``service.rolling.base.encode``)."""
        return f"{self.prefix}:stats:{table}"

    def table_state(self, table: str) -> str:
        """hash of one table: last_snapshot (0: applied an empty table), decided_snapshot
        (its actions were enqueued), target, applied_at, full_scans."""
        return f"{self.prefix}:table:{table}"

    # ---- decider ----------------------------------------------------------------------
    @property
    def events(self) -> str:
        """stream of commit events: fields ``table``, ``snapshot_id``."""
        return f"{self.prefix}:events"

    @property
    def leader(self) -> str:
        return f"{self.prefix}:leader"

    @property
    def scheduler(self) -> str:
        """string: JSON of the fair scheduler's state (deficits, rotation)."""
        return f"{self.prefix}:scheduler"

    @property
    def counters(self) -> str:
        """hash: monotonically increasing counters (snapshots applied, scans avoided, ...)."""
        return f"{self.prefix}:counters"

    @property
    def recent(self) -> str:
        """list: the latest action reports (JSON), newest first, capped."""
        return f"{self.prefix}:recent"

    @property
    def actors(self) -> str:
        """hash: actor id → last heartbeat (unix seconds)."""
        return f"{self.prefix}:actors"

    @property
    def launch_guard(self) -> str:
        """string with a TTL: set when actors were launched (no relaunch storm)."""
        return f"{self.prefix}:launch-guard"

    @property
    def known_tables(self) -> str:
        """set: tables the decider has applied stats for (for status and rebuilds)."""
        return f"{self.prefix}:known"
