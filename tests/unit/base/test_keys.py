"""Every Lua script call and every MULTI/EXEC stays in one Redis Cluster hash slot.

The Redis adapters run here on a recording stand-in for the client (no Redis): it keeps the
keys of each script call and of each transaction and answers reads with canned replies.
Each must touch keys of one slot (``redis.cluster.key_slot``), so a script or transaction
that breaks the layout of :mod:`icefloe.base.keys` fails here, on any machine, long before it
would fail on a real cluster (``tests/redis`` runs the contract suites on one). Every
``.lua`` file must be exercised, so a new script cannot slip past.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from redis.cluster import key_slot

import icefloe.state
from icefloe.base.keys import Keys
from icefloe.base.partition_key import KEY_FORMAT
from icefloe.optimizer import stats_from_sizes
from icefloe.optimizer.layout import Depth, FileBounds
from icefloe.state.intents.redis import RedisIntents
from icefloe.state.layout import LayoutDelta
from icefloe.state.layout.redis import RedisLayouts
from icefloe.state.leader.redis import RedisLeader
from icefloe.state.ledger.redis import RedisLedger
from icefloe.state.queue import ActionItem, Budget
from icefloe.state.queue.redis import RedisQueue
from icefloe.state.rolling import STATS_FORMAT, PartitionDelta
from icefloe.state.rolling.redis import RollingStats
from icefloe.state.shards.redis import RedisShards

pytestmark = [pytest.mark.unit]

T0 = 1_790_000_000.0
STATE = Path(icefloe.state.__file__).parent  # each adapter's scripts beside its redis.py
SCRIPTS = {p.read_text(): p.stem for p in sorted(STATE.glob("*/*.lua"))}
PREFIXES = ["icefloe", "team-a:prod.v2"]
TABLES = ["db.t", "ns.other_table", "a.b"]
SIGNATURE = "sort:id"
PARTITIONS = [None, "day=2026-11-02", "p={x}:y"]  # braces in data never move a key


def slots(keys: list[str]) -> set[int]:
    return {key_slot(k.encode()) for k in keys}


def table_of(key: str) -> bytes:
    """An item hash's ``table`` field, read from its id (``action:table:partition``)."""
    return key.split(":item:", 1)[1].split(":")[1].encode()


class FakePipeline:
    """Queues commands; a transaction's keys are recorded when it executes."""

    def __init__(self, client: FakeRedis, transaction: bool):
        self.client, self.transaction = client, transaction
        self.keys: list[str] = []
        self.replies: list[Any] = []

    def __enter__(self) -> FakePipeline:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def watch(self, *names: str) -> None:
        self.keys += names

    def multi(self) -> None:
        return None

    def reset(self) -> None:
        self.keys, self.replies = [], []

    def hmget(self, key: str, *fields: Any) -> list[Any]:
        self.keys.append(key)
        if fields == ("last_snapshot", "target", "keys", "stats"):  # apply compares and sets
            return [b"1", b"1000", str(KEY_FORMAT).encode(), str(STATS_FORMAT).encode()]
        if fields == ("signature", "generation"):  # the layout store's depths, WATCHed
            return [SIGNATURE.encode(), b"0"]
        names = fields[0] if len(fields) == 1 and isinstance(fields[0], list) else fields
        return [None] * len(names)

    def hgetall(self, key: str) -> FakePipeline:
        """An item hash as the scripts keep it, built from the id in its key."""
        self.keys.append(key)
        action, table, partition = key.split(":item:", 1)[1].split(":", 2)
        item = ActionItem.new(table, partition, action, 1, 100, 1.0, T0)
        self.replies.append({b"json": item.to_json().encode(), b"enq": b"0", b"attempts": b"0"})
        return self

    def hget(self, key: str, name: str) -> Any:
        self.keys.append(key)
        if name == "signature":  # the layout store's check, WATCHed: an immediate reply
            return SIGNATURE.encode()
        self.replies.append(table_of(key) if name == "table" else None)
        return self

    def smembers(self, key: str) -> list[bytes]:
        """The layout store's partitions, read under WATCH by ``replace``."""
        self.keys.append(key)
        return [b"p=1", b"p={x}"]

    def __getattr__(self, command: str) -> Any:
        def queue(key: str, *args: Any, **kwargs: Any) -> FakePipeline:
            self.keys.append(key)
            self.replies.append(None)
            return self

        return queue

    def execute(self) -> list[Any]:
        if self.transaction:
            self.client.transactions.append(list(self.keys))
        replies = self.replies
        self.reset()
        return replies


class FakeRedis:
    """Records script calls; the ready set and the in-flight set hold ``ids``."""

    def __init__(self, ids: list[str]):
        self.ids = ids
        self.scripts: list[tuple[str, list[str]]] = []
        self.transactions: list[list[str]] = []

    def register_script(self, source: str) -> Any:
        name = SCRIPTS[source]

        def run(keys: list[str], args: list[Any]) -> Any:
            self.scripts.append((name, list(keys)))
            replies = {"dequeue": None, "dequeue_batch": [], "release": [], "dispatch": None}
            return (replies | {"shards_claim": [-1, 0]}).get(name, 1)

        return run

    def pipeline(self, transaction: bool = True) -> FakePipeline:
        return FakePipeline(self, transaction)

    def zrange(self, key: str, start: int, end: int, **kwargs: Any) -> list[bytes]:
        return [i.encode() for i in self.ids[: end + 1 if end >= 0 else None]]

    def zrangebyscore(self, key: str, *args: Any, **kwargs: Any) -> list[bytes]:
        return [i.encode() for i in self.ids]

    def __getattr__(self, command: str) -> Any:
        return lambda *args, **kwargs: None  # writes outside a transaction, and SET NX


def drive(client: FakeRedis, keys: Keys, items: list[ActionItem]) -> None:
    """Every adapter call that runs a script or a transaction."""
    q = RedisQueue(client, keys)
    for item in items:
        q.enqueue(item, T0)
        q.dispatch(item.table)
        q.ack(item.id, "token")
        q.nack(item.id, "token", "boom", T0)
        q.renew(item.id, "token", T0, 30)
        RedisIntents(client, keys).record(item.id, "token", item.table, T0, ["/a"], ["/p/"])
    adhoc = RedisIntents(
        client, keys
    )  # an ad-hoc run's lease and intent (icefloe.service.actor.adhoc)
    adhoc.renew_adhoc("adhoc-token", T0, 30)
    adhoc.record_adhoc("adhoc-token", "db.t", T0, ["/a"], [])
    q.dequeue(T0, 30)
    q.dequeue_batch(T0, 30, lambda table: Budget(10))
    q.reap(T0)
    leader = RedisLeader(client, keys, 30, token="a")
    leader.acquire()
    leader.release()
    shards = RedisShards(client, keys, 16, 30, token="a")
    shards.claim()
    shards.release()
    store = RollingStats(client, keys)
    for table in {item.table for item in items}:
        store.replace(table, 1, 1000, {"p=1": stats_from_sizes([1, 2], 1000)}, T0)
        store.apply(table, 1, 2, 1000, {"p=1": PartitionDelta(added=[3])}, T0)
    layouts = RedisLayouts(client, keys)
    for table in {item.table for item in items}:
        layouts.replace(table, SIGNATURE, {"p=1": [FileBounds("a", 1, (1,), (2,))]})
        layouts.update(
            table, SIGNATURE, {"p=1": LayoutDelta({"b": FileBounds("b", 1, None, None)})}
        )
        layouts.save_depths(table, SIGNATURE, {"p=1": Depth(2, 1.0, 1)}, 0)
    entry = {"id": "x", "ok": True, "bytes_rewritten": 1, "orphans_deleted": 2}
    RedisLedger(client, keys).record_action(entry, history=True)


@pytest.fixture(params=PREFIXES)
def recorded(request: pytest.FixtureRequest) -> Iterator[FakeRedis]:
    items = [ActionItem.new(t, p, "merge", 1, 100, 1.0, T0) for t in TABLES for p in PARTITIONS]
    client = FakeRedis([i.id for i in items])
    drive(client, Keys(request.param), items)
    yield client


def test_every_script_call_touches_one_slot(recorded: FakeRedis) -> None:
    assert {name for name, _ in recorded.scripts} == set(SCRIPTS.values())  # all exercised
    crossing = [(name, keys) for name, keys in recorded.scripts if len(slots(keys)) != 1]
    assert crossing == []


def test_every_transaction_touches_one_slot(recorded: FakeRedis) -> None:
    # apply and replace per table, the layout's replace, update and depths, and record_action
    assert len(recorded.transactions) == 5 * len(TABLES) + 1
    assert [keys for keys in recorded.transactions if len(slots(keys)) != 1] == []


def test_the_slot_groups_of_the_key_layout() -> None:
    k = Keys("icefloe")
    queue = [k.item("merge:db.t:p={x}"), k.pending("db.t"), k.pending("db.u"), k.tables]
    queue += [k.ready, k.seq, k.inflight, k.leases, k.intents, k.adhoc, k.dead]
    decider = [k.events(0), k.events(15), k.leader, k.scheduler, k.counters, k.recent]
    decider += [k.actors, k.launch_guard, k.known_tables, k.deciders, k.shard_leases]
    assert len(slots(queue)) == 1 and len(slots(decider)) == 1
    assert all(len(slots([k.stats(t), k.table_state(t)])) == 1 for t in TABLES)
    layout = [
        [k.layout(t, p or ""), k.layout_parts(t), k.layout_state(t), k.stats(t)]
        for t in TABLES
        for p in PARTITIONS
    ]
    assert all(len(slots(keys)) == 1 for keys in layout)  # with the table's stats
    # each table its own slot: tables spread over the masters
    assert len(slots([k.stats(f"db.t{i}") for i in range(20)])) == 20
    assert k.ready == "icefloe:{q}:ready" and k.stats("db.t") == "icefloe:{t:db.t}:stats"
    assert all(key.startswith("icefloe:{") for key in queue + decider + [k.stats("db.t")])
