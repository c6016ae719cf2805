"""Every Redis key the decider, the queue and the actors use, in one place, under one prefix.

Why one module: a reader can see the whole Redis footprint at a glance, two processes can
never disagree on a name, and a second deployment sharing a Redis (or a Redis Cluster)
only needs another ``redis.key_prefix``. Table identifiers are validated (letters, digits,
``_`` and ``.``) before they reach a key name, so no user text can collide with another key.

Every key is ``<prefix>:{<tag>}:<name>``. On a Redis Cluster only the text between the
braces (the *hash tag*) picks the key's slot, so the keys one Lua script or one
MULTI/EXEC touches always share a tag, and the same code runs on a single Redis and on a
cluster (``redis.cluster: true``):

========================  ============================================  ====================
tag                       keys                                          touched together by
========================  ============================================  ====================
``{q}``  the queue        item hashes, per-table pending sets, tables,  every queue script
                          ready, seq, in-flight, leases, intents, dead  (``state/queue``)
``{t:<table>}`` a table   its partition stats, state and health         the WATCH/MULTI of
                          hashes, its partitions' file bounds           ``icefloe.state.rolling``
                          (layout)                                      and ``.layout``
``{d}``  the decider      event streams, leader lease, deciders,        ``record_action``'s
                          shard leases, scheduler, counters, recent,    MULTI, the shard
                          actors, launch guard, known tables            script, XREADGROUP
``{r}``  readers          the scan reports stream, every table's read   the fold's MULTI
                          statistics, the dropped and fold counters     (``state/reads``)
========================  ============================================  ====================

The queue is one shard (one slot): its scripts move items between sets of every table at
once. Each table's stats are their own slot, so tables spread over the cluster's masters.
The tag comes right after the prefix, before any data (an item id holds a partition value,
which may hold braces), so no value can change a key's slot; a prefix with braces would,
and ``redis.cluster: true`` rejects one. Scripts get every key they touch through
``KEYS`` (never build a name from data they read), and
``tests/unit/base/test_keys.py`` checks every script call and transaction for one
slot on a single Redis too.

The layout changed with Redis Cluster support (it was ``<prefix>:q:ready``,
``<prefix>:stats:<table>``, ``<prefix>:events``, ...): state under the old names is
simply not seen, and nothing migrates it. The decider rebuilds the stats with a full scan
and the catalog re-enqueues whatever still needs work.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from icefloe.base.config import Config

QUEUE_TAG = "q"
DECIDER_TAG = "d"
READS_TAG = "r"


def shard_of(table: str, shards: int) -> int:
    """The decider shard a table belongs to (``decider.shards`` of them): CRC-32 of its
    identifier, stable across processes and machines (Python's ``hash`` is salted)."""
    return zlib.crc32(table.encode()) % max(1, shards)


@dataclass(frozen=True)
class Keys:
    """Key names under ``prefix`` (``cfg.redis.key_prefix``)."""

    prefix: str

    @classmethod
    def for_config(cls, cfg: Config) -> Keys:
        return cls(cfg.redis.key_prefix)

    def _key(self, tag: str, name: str) -> str:
        return f"{self.prefix}:{{{tag}}}:{name}"

    # ---- reliable priority queue: one slot ------------------------------------------------
    def item(self, item_id: str) -> str:
        """hash per item: json, table, class, score, enq (first enqueue), attempts, error."""
        return self._key(QUEUE_TAG, f"item:{item_id}")

    def pending(self, table: str) -> str:
        """zset: item id → ordering score (higher first), one per table."""
        return self._key(QUEUE_TAG, f"pending:{table}")

    @property
    def tables(self) -> str:
        """zset: table with pending items → its priority class."""
        return self._key(QUEUE_TAG, "tables")

    @property
    def ready(self) -> str:
        """zset: item id → dispatch sequence (actors take the lowest)."""
        return self._key(QUEUE_TAG, "ready")

    @property
    def seq(self) -> str:
        return self._key(QUEUE_TAG, "seq")

    @property
    def inflight(self) -> str:
        """zset: item id → lease deadline (unix seconds)."""
        return self._key(QUEUE_TAG, "inflight")

    @property
    def leases(self) -> str:
        """hash: item id → token of the actor holding the lease."""
        return self._key(QUEUE_TAG, "leases")

    @property
    def intents(self) -> str:
        """hash: lease token → JSON of the files its attempt is writing (``icefloe.state.intents``);
        in the queue's slot, since a record is checked against the lease in one script."""
        return self._key(QUEUE_TAG, "intents")

    @property
    def adhoc(self) -> str:
        """hash: token of an ad-hoc run (``icefloe optimize``) → its lease deadline (unix
        seconds): its write intents are abandoned once the deadline passes."""
        return self._key(QUEUE_TAG, "adhoc")

    @property
    def dead(self) -> str:
        """zset: dead-lettered item id → time it died (its item hash keeps the last error)."""
        return self._key(QUEUE_TAG, "dead")

    # ---- rolling statistics: one slot per table -------------------------------------------
    def stats(self, table: str) -> str:
        """hash: partition key → "n sse total_bytes undersized delete_files": five exact
        integers separated by spaces (``icefloe.state.rolling.encode``)."""
        return self._key(f"t:{table}", "stats")

    def waiting(self, table: str) -> str:
        """zset: partition key → when it started waiting for ``min_input_files`` small files
        (``icefloe.service.decider.needs.waiting``); merged anyway ``max_wait_hours`` later."""
        return self._key(f"t:{table}", "waiting")

    def table_state(self, table: str) -> str:
        """hash of one table: last_snapshot (0: applied an empty table), decided_snapshot
        (its actions were enqueued), target, applied_at, full_scans."""
        return self._key(f"t:{table}", "state")

    def health(self, table: str) -> str:
        """hash of one table's metadata health (``icefloe.state.health``: manifests, snapshots,
        metadata bytes) and ``run:<action>`` → when each maintenance action last ran."""
        return self._key(f"t:{table}", "health")

    def layout(self, table: str, partition: str) -> str:
        """hash of one partition's live data files: path → ``[size, lower, upper]``
        (``icefloe.state.layout.encode_file``: their key bounds, for clustering depth)."""
        return self._key(f"t:{table}", f"layout:{partition}")

    def layout_parts(self, table: str) -> str:
        """set: the partitions of the table with a :meth:`layout` hash."""
        return self._key(f"t:{table}", "layout-parts")

    def layout_state(self, table: str) -> str:
        """hash: ``signature`` (action and columns) the table's layout hashes were built for."""
        return self._key(f"t:{table}", "layout-state")

    def layout_depths(self, table: str) -> str:
        """hash: partition → its clustering depth as the decider last measured it,
        ``"files mean max"`` (``icefloe.state.layout.encode_depth``), for ``status``;
        a partition's field goes when its files change, all of them at a rebuild."""
        return self._key(f"t:{table}", "layout-depths")

    # ---- decider: one slot ----------------------------------------------------------------
    def events(self, shard: int) -> str:
        """stream of one shard's commit events (:func:`shard_of`): fields ``table``,
        ``snapshot_id``. All shards share the ``{d}`` slot, so one XREADGROUP reads many."""
        return self._key(DECIDER_TAG, f"events:{shard}")

    @property
    def leader(self) -> str:
        """string with a TTL: the token of the decider doing the warehouse-wide duties."""
        return self._key(DECIDER_TAG, "leader")

    @property
    def deciders(self) -> str:
        """zset: decider token → membership deadline (unix ms); live deciders share shards."""
        return self._key(DECIDER_TAG, "deciders")

    @property
    def shard_leases(self) -> str:
        """hash: shard → "<deadline ms> <token>" of the decider observing its tables."""
        return self._key(DECIDER_TAG, "shards")

    @property
    def scheduler(self) -> str:
        """string: JSON of the fair scheduler's state (deficits, rotation)."""
        return self._key(DECIDER_TAG, "scheduler")

    @property
    def counters(self) -> str:
        """hash: monotonically increasing counters (snapshots applied, scans avoided, ...)."""
        return self._key(DECIDER_TAG, "counters")

    @property
    def recent(self) -> str:
        """list: the latest action reports (JSON), newest first, capped."""
        return self._key(DECIDER_TAG, "recent")

    @property
    def history(self) -> str:
        """stream: action records not yet appended to the history table (``entry``: JSON),
        trimmed by the leader once the table holds them."""
        return self._key(DECIDER_TAG, "history")

    @property
    def actors(self) -> str:
        """hash: actor id → last heartbeat (unix seconds)."""
        return self._key(DECIDER_TAG, "actors")

    @property
    def launch_guard(self) -> str:
        """string with a TTL: set when actors were launched (no relaunch storm)."""
        return self._key(DECIDER_TAG, "launch-guard")

    @property
    def table_records(self) -> str:
        """hash: table → its kept record (JSON, ``icefloe.service.observe.kept``): what ``tables``,
        ``status`` and the dashboard read, every table in one round trip."""
        return self._key(DECIDER_TAG, "records")

    @property
    def table_verdicts(self) -> str:
        """hash: table → its kept record's verdicts (JSON), apart from the record: the
        dashboard's list reads the records without them."""
        return self._key(DECIDER_TAG, "record-verdicts")

    @property
    def table_ranks(self) -> str:
        """hash: table → what its kept record is ranked by (JSON: its score and the span and
        policy it holds for, or its error), apart from the record: the dashboard ranks
        every table by these and reads the records of one page only."""
        return self._key(DECIDER_TAG, "record-ranks")

    @property
    def managed_list(self) -> str:
        """string: the managed tables as the decider last listed them (a JSON list), so
        the dashboard lists them without a catalog call."""
        return self._key(DECIDER_TAG, "managed")

    @property
    def known_tables(self) -> str:
        """set: tables the decider has applied stats for (for status and rebuilds)."""
        return self._key(DECIDER_TAG, "known")

    # ---- readers' scan reports: one slot --------------------------------------------------
    @property
    def reads(self) -> str:
        """stream: readers' scan reports, one entry each (``icefloe.optimizer.reads``'s
        fields), appended by ``dev.icefloe.iceberg.ReadReporter`` and capped by it."""
        return self._key(READS_TAG, "reads")

    @property
    def read_stats(self) -> str:
        """hash: table → its read statistics (JSON, ``icefloe.state.reads.encode``)."""
        return self._key(READS_TAG, "read-stats")

    @property
    def reads_dropped(self) -> str:
        """string: scan reports readers dropped (a full queue, Redis unreachable), added by
        their reporters once Redis answers again."""
        return self._key(READS_TAG, "dropped")

    @property
    def read_counters(self) -> str:
        """hash: scan reports folded, and those set aside (``own``: icefloe's rewrites,
        ``unmanaged``, ``malformed``)."""
        return self._key(READS_TAG, "read-counters")
