"""The RPQ contract suite against a real Redis and a Redis Cluster (flushed per test)."""

from __future__ import annotations

from typing import Any

import pytest

from icefloe.base.keys import Keys
from icefloe.state.queue import PriorityQueue
from icefloe.state.queue.redis import RedisQueue
from tests.support.cluster import all_keys, primaries
from tests.support.contracts.queue import T0, QueueContract, item

pytestmark = [pytest.mark.redis]
TOPOLOGIES = ("single", "cluster")  # each test on both (tests/redis/conftest.py)


class TestRedisQueue(QueueContract):
    __test__ = True

    @pytest.fixture(autouse=True)
    def _redis(self, redis_client: Any) -> None:
        self.client = redis_client

    def make_queue(self, max_attempts: int = 3) -> PriorityQueue:
        return RedisQueue(self.client, Keys("icefloe-test"), max_attempts=max_attempts)


def test_keys_live_under_the_prefix(redis_client: Any) -> None:

    q = RedisQueue(redis_client, Keys("pfx"))
    q.enqueue(item(), T0)
    q.dispatch("db.t")
    assert q.dequeue(T0, 30) is not None
    assert all(k.decode().startswith("pfx:{q}:") for k in all_keys(redis_client))


# ---- a script re-checks what its caller read, and the caller reads again -----------------


def stale_once(real: Any, stale: Any) -> Any:
    """``real``, except that the first call answers ``stale`` (another actor moved first)."""
    calls = []

    def call(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return stale if len(calls) == 1 else real(*args, **kwargs)

    return call


def test_dequeue_retries_when_the_peeked_head_was_taken(
    redis_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:

    q = RedisQueue(redis_client, Keys("icefloe-test"))
    for p in ("a", "b"):
        q.enqueue(item(partition=p), T0)
        q.dispatch("db.t")
    head = redis_client.zrange(q.k.ready, 0, 0)[0].decode()
    # the first peek sees a head another actor has leased since
    monkeypatch.setattr(redis_client, "zrange", stale_once(redis_client.zrange, [b"m:db.t:x"]))
    lease = q.dequeue(T0, 30)
    assert lease is not None and lease.item.id == head
    assert q.depth() == {"pending": 0, "ready": 1, "inflight": 1, "dead": 0}
    assert not redis_client.exists(q.k.item("m:db.t:x"))


@pytest.mark.parametrize("call", ["ack", "nack", "reap"])
def test_a_table_read_stale_changes_nothing_and_is_read_again(redis_client: Any, call: str) -> None:

    q = RedisQueue(redis_client, Keys("icefloe-test"))
    q.enqueue(item(), T0)
    q.dispatch("db.t")
    lease = q.dequeue(T0, 30)
    assert lease is not None
    q.enqueue(item(benefit=99.0), T0 + 1)  # again while in flight: ack re-pends it
    q._tables_of = stale_once(q._tables_of, ["db.elsewhere"])  # type: ignore[method-assign]
    if call == "ack":
        assert q.ack(lease.item.id, lease.token) == 2
    elif call == "nack":
        assert q.nack(lease.item.id, lease.token, "boom", T0 + 2) == "pending"
    else:
        assert q.reap(T0 + 31) == {lease.item.id: "pending"}
    assert q.pending_by_table() == {"db.t": 1} and q.pending_tables() == {"db.t": 1}
    assert not redis_client.exists(q.k.pending("db.elsewhere"))


def test_reap_skips_a_lease_renewed_after_it_was_read(
    redis_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:

    q = RedisQueue(redis_client, Keys("icefloe-test"))
    q.enqueue(item(), T0)
    q.dispatch("db.t")
    lease = q.dequeue(T0, 30)
    assert lease is not None
    expired = redis_client.zrangebyscore(q.k.inflight, "-inf", repr(T0 + 31))
    assert q.renew(lease.item.id, lease.token, T0 + 30, 30)  # renewed after the reaper read
    monkeypatch.setattr(redis_client, "zrangebyscore", lambda *args, **kwargs: expired)
    assert q.reap(T0 + 31) == {}
    assert [f.deadline for f in q.inflight()] == [T0 + 60]


# ---- batches: one pipelined round trip of scripts ----------------------------------------


def test_batches_load_their_scripts_when_the_server_lost_them(redis_client: Any) -> None:
    """A restarted (or flushed) server answers NOSCRIPT to every pipelined EVALSHA: the
    batch loads the script (on every master of a cluster) and runs those calls again."""
    q = RedisQueue(redis_client, Keys("icefloe-test"))
    items = [item(partition=str(p), benefit=10.0 - p) for p in range(3)]
    for node in primaries(redis_client):
        node.script_flush()
    assert q.enqueue_many(items, T0) == [1, 1, 1]
    for node in primaries(redis_client):
        node.script_flush()
    assert q.dispatch_many(["db.t"] * 3) == [it.id for it in items]
    leases = q.dequeue_many(T0, 30, 3)
    assert [lease.item for lease in leases] == items
    assert q.ack_many([(lease.item.id, lease.token) for lease in leases]) == [1, 1, 1]
    assert q.depth() == {"pending": 0, "ready": 0, "inflight": 0, "dead": 0}


def test_dequeue_many_skips_heads_another_actor_took(
    redis_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:

    q = RedisQueue(redis_client, Keys("icefloe-test"))
    items = [item(partition=str(p), benefit=10.0 - p) for p in range(3)]
    q.enqueue_many(items, T0)
    q.dispatch_many(["db.t"] * 3)
    peeked = redis_client.zrange(q.k.ready, 0, 2)
    taken = q.dequeue(T0, 30)  # another actor, between our peek and our scripts
    assert taken is not None and taken.item == items[0]
    monkeypatch.setattr(redis_client, "zrange", stale_once(redis_client.zrange, peeked))
    assert [lease.item for lease in q.dequeue_many(T0, 30, 3)] == items[1:]
    # every peeked head taken since, and nothing else ready: no lease, no error
    monkeypatch.setattr(redis_client, "zrange", stale_once(redis_client.zrange, peeked[1:]))
    assert q.dequeue_many(T0, 30, 3) == []
    assert q.depth() == {"pending": 0, "ready": 0, "inflight": 3, "dead": 0}


def test_ack_many_redoes_an_ack_whose_table_was_read_stale(redis_client: Any) -> None:

    q = RedisQueue(redis_client, Keys("icefloe-test"))
    q.enqueue(item(), T0)
    q.dispatch("db.t")
    lease = q.dequeue(T0, 30)
    assert lease is not None
    q.enqueue(item(benefit=99.0), T0 + 1)  # again while in flight: ack re-pends it
    q._tables_of = stale_once(q._tables_of, ["db.elsewhere"])  # type: ignore[method-assign]
    assert q.ack_many([(lease.item.id, lease.token)]) == [2]
    assert q.pending_by_table() == {"db.t": 1} and q.pending_tables() == {"db.t": 1}
    assert not redis_client.exists(q.k.pending("db.elsewhere"))


def test_a_batch_is_leased_whole_when_another_actor_takes_the_head_meanwhile(
    redis_client: Any,
) -> None:
    """Between the peek and the lease another actor takes the head: the batch script
    changes nothing, the peek is repeated, and the rest of the run is leased as one batch
    (two actors polling together never split a table's batch item by item)."""
    from icefloe.state.queue import Budget

    q, other = (
        RedisQueue(redis_client, Keys("icefloe-test")),
        RedisQueue(redis_client, Keys("icefloe-test")),
    )
    for i in range(5):
        q.enqueue(item(partition=f"p{i}", benefit=10 - i), T0)
    q.dispatch_many(["db.t"] * 5)
    peeks = []
    real = q._items

    def racing(ids: Any) -> Any:
        peeks.append(list(ids))
        got = real(ids)
        if len(peeks) == 2:  # the run was read: the other actor takes the head now
            assert other.dequeue(T0, 30) is not None
        return got

    q._items = racing  # type: ignore[method-assign]
    batch = q.dequeue_batch(T0, 30, lambda table: Budget(10))
    assert [x.item.partition for x in batch] == ["p1", "p2", "p3", "p4"]
    assert len(peeks) == 4  # head, run; then again after the script refused
    assert q.depth() == {"pending": 0, "ready": 0, "inflight": 5, "dead": 0}
