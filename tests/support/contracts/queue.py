"""The RPQ contract suite (dagster style): every queue implementation runs these tests.

``QueueContract`` is not collected by itself (``__test__ = False``); ``TestMemoryQueue``
in ``tests/unit/state/test_queue.py`` runs it on the in-memory stub,
``tests/redis/test_queue_redis.py`` on Redis.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest

from icefloe.state.queue import ActionItem, Budget, PriorityQueue

T0 = 1_790_000_000.0


def item(
    table: str = "db.t",
    partition: str | None = "day=1",
    action: str = "merge",
    priority: int = 1,
    cost: int = 1000,
    benefit: float = 10.0,
    now: float = T0,
) -> ActionItem:
    return ActionItem.new(table, partition, action, priority, cost, benefit, now, reason="test")


def drain(q: PriorityQueue, now: float = T0) -> list[str]:
    """Dispatch everything (table by table, in name order) and lease it all."""
    out = []
    for table in sorted(q.pending_tables()):
        while q.dispatch(table):
            pass
    while lease := q.dequeue(now, 60):
        out.append(lease.item.id)
    return out


class QueueContract:
    __test__ = False

    def make_queue(self, max_attempts: int = 3) -> PriorityQueue:
        raise NotImplementedError

    @pytest.fixture
    def q(self) -> PriorityQueue:
        return self.make_queue()

    def test_roundtrip_keeps_every_field(self, q: PriorityQueue) -> None:
        it = item(partition="day=2026-11-01/region=eu", cost=1 << 40, benefit=1.5e12)
        assert q.enqueue(it, T0) == 1
        assert q.dispatch("db.t") == it.id
        lease = q.dequeue(T0, 30)
        assert lease is not None and lease.item == it and lease.deadline == T0 + 30
        assert ActionItem.from_json(lease.item.to_json()) == it

    def test_empty_queue(self, q: PriorityQueue) -> None:
        assert q.dequeue(T0, 30) is None
        assert q.dispatch("db.t") is None
        assert q.pending_tables() == {} and q.heads() == {}
        assert q.depth() == {"pending": 0, "ready": 0, "inflight": 0, "dead": 0}
        assert q.reap(T0 + 1e6) == {}

    def test_coalesces_same_work_and_keeps_first_enqueue_time(self, q: PriorityQueue) -> None:
        assert q.enqueue(item(now=T0), T0) == 1
        assert q.enqueue(item(benefit=99.0, now=T0 + 5), T0 + 5) == 0
        assert q.depth()["pending"] == 1
        got = q.get(item().id)
        assert got is not None and got.benefit == 99.0 and got.enqueued_at == T0

    def test_in_flight_item_absorbs_new_events(self, q: PriorityQueue) -> None:
        q.enqueue(item(), T0)
        q.dispatch("db.t")
        assert q.enqueue(item(), T0) == 0  # ready
        lease = q.dequeue(T0, 30)
        assert lease is not None
        assert q.enqueue(item(), T0 + 1) == 0  # in flight
        assert q.depth() == {"pending": 0, "ready": 0, "inflight": 1, "dead": 0}

    def test_enqueued_while_in_flight_comes_back_after_ack(self, q: PriorityQueue) -> None:
        """The actor may have scanned before the change: the work is not dropped."""
        q.enqueue(item(), T0)
        q.dispatch("db.t")
        lease = q.dequeue(T0, 30)
        assert lease is not None
        assert q.enqueue(item(benefit=77.0, now=T0 + 5), T0 + 5) == 0
        assert q.enqueue(item(benefit=78.0, now=T0 + 9), T0 + 9) == 0
        assert q.ack(lease.item.id, lease.token) == 2
        assert q.depth() == {"pending": 1, "ready": 0, "inflight": 0, "dead": 0}
        again = q.get(item().id)
        assert again is not None and again.benefit == 78.0
        assert again.enqueued_at == T0 + 5 and again.attempts == 0
        assert drain(q) == [item().id]
        lease2 = q.dequeue(T0, 30)
        assert lease2 is None
        assert q.depth()["inflight"] == 1
        (flight,) = q.inflight()
        assert q.ack(flight.item.id, "wrong") == 0

    def test_retry_covers_a_re_enqueue(self, q: PriorityQueue) -> None:
        """A nacked item is retried with a fresh scan: its acks end it for good."""
        q.enqueue(item(), T0)
        q.dispatch("db.t")
        lease = q.dequeue(T0, 30)
        assert lease is not None
        q.enqueue(item(), T0 + 1)
        assert q.nack(lease.item.id, lease.token, "boom", T0 + 2) == "pending"
        q.dispatch("db.t")
        retry = q.dequeue(T0 + 3, 30)
        assert retry is not None and retry.item.id == item().id
        assert q.ack(retry.item.id, retry.token) == 1
        assert q.depth() == {"pending": 0, "ready": 0, "inflight": 0, "dead": 0}

    def test_higher_value_per_byte_first_within_a_table(self, q: PriorityQueue) -> None:
        q.enqueue(item(partition="a", cost=1000, benefit=10), T0)
        q.enqueue(item(partition="b", cost=10, benefit=10), T0)
        q.enqueue(item(partition="c", cost=100, benefit=10), T0)
        assert q.heads()["db.t"].partition == "b"
        assert [i.split(":")[-1] for i in drain(q)] == ["b", "c", "a"]

    def test_aging_lets_old_items_overtake(self, q: PriorityQueue) -> None:
        q.enqueue(item(partition="old", cost=1000, benefit=10), T0)
        # 2x the value per byte, but enqueued three aging periods later
        q.enqueue(item(partition="new", cost=500, benefit=10), T0 + 3 * 3600)
        assert q.heads()["db.t"].partition == "old"

    def test_ready_is_fifo_in_dispatch_order(self, q: PriorityQueue) -> None:
        q.enqueue(item(table="db.a"), T0)
        q.enqueue(item(table="db.b"), T0)
        q.dispatch("db.b")
        q.dispatch("db.a")
        first, second = q.dequeue(T0, 5), q.dequeue(T0, 5)
        assert first and second and (first.item.table, second.item.table) == ("db.b", "db.a")

    # ---- batches ---------------------------------------------------------------------
    def test_a_table_s_batch_is_leased_together_each_item_with_its_own_lease(
        self, q: PriorityQueue
    ) -> None:
        for i in range(5):
            q.enqueue(item(partition=f"p{i}", cost=100, benefit=10 - i), T0)
        q.enqueue(item(table="db.u", partition="x"), T0)

        def budget(table: str) -> Budget:
            return Budget(4, 10_000)

        batches = q.batches(budget)
        assert [i.partition for i in batches["db.t"]] == ["p0", "p1", "p2", "p3"]
        assert [i.partition for i in batches["db.u"]] == ["x"]
        assert [i.partition for i in q.batches(budget, ["db.u"])["db.u"]] == ["x"]
        q.dispatch_many(["db.t"] * 4 + ["db.u", "db.t"])
        leases = q.dequeue_batch(T0, 60, budget)
        assert [x.item.partition for x in leases] == ["p0", "p1", "p2", "p3"]
        assert len({x.token for x in leases}) == 4
        assert q.depth() == {"pending": 0, "ready": 2, "inflight": 4, "dead": 0}
        assert [x.item.table for x in q.dequeue_batch(T0, 60, budget)] == ["db.u"]  # the run
        assert q.renew_many([(x.item.id, x.token) for x in leases], T0 + 10, 60) == [True] * 4
        assert q.ack_many([(x.item.id, x.token) for x in leases[:3]]) == [1, 1, 1]
        assert q.renew_many(
            [(leases[0].item.id, leases[0].token), (leases[3].item.id, "x")], T0, 60
        ) == [False, False]
        assert q.nack(leases[3].item.id, leases[3].token, "conflict", T0) == "pending"
        assert q.reap(T0 + 59) == {}  # the batch's leases were renewed
        q.dispatch_many(["db.t"])  # the retry lands behind p4 in the ready set
        (fifth,) = q.dequeue_batch(T0, 60, budget)  # a failed item joins no batch ...
        assert fifth.item.partition == "p4"
        (retry,) = q.dequeue_batch(T0, 60, budget)  # ... and runs alone
        assert retry.item.partition == "p3" and retry.item.last_error == "conflict"

    def test_bytes_cap_a_batch_and_an_expired_lease_still_batches(self, q: PriorityQueue) -> None:
        for i in range(4):
            q.enqueue(item(partition=f"p{i}", cost=400, benefit=10 - i), T0)

        def budget(table: str) -> Budget:
            return Budget(100, 1000)

        assert [i.partition for i in q.batches(budget)["db.t"]] == ["p0", "p1"]
        q.dispatch_many(["db.t"] * 4)
        first = q.dequeue_batch(T0, 30, budget)
        assert [x.item.partition for x in first] == ["p0", "p1"]
        assert set(q.reap(T0 + 30).values()) == {"pending"}
        q.dispatch_many(["db.t"] * 2)
        assert [x.item.partition for x in q.dequeue_batch(T0 + 31, 30, budget)] == ["p2", "p3"]
        again = q.dequeue_batch(T0 + 31, 30, budget)  # the expired leases: batched again
        assert [(x.item.partition, x.item.attempts) for x in again] == [("p0", 1), ("p1", 1)]
        assert q.dequeue_batch(T0 + 31, 30, budget) == []

    def test_pending_tables_carry_class_and_empty_tables_leave(self, q: PriorityQueue) -> None:
        q.enqueue(item(table="db.a", priority=0), T0)
        q.enqueue(item(table="db.b", priority=2), T0)
        assert q.pending_tables() == {"db.a": 0, "db.b": 2}
        q.dispatch("db.a")
        assert q.pending_tables() == {"db.b": 2}
        assert q.pending_by_table() == {"db.b": 1}

    def test_ack_needs_the_lease_token(self, q: PriorityQueue) -> None:
        q.enqueue(item(), T0)
        q.dispatch("db.t")
        lease = q.dequeue(T0, 30)
        assert lease is not None
        assert not q.ack(lease.item.id, "someone-else")
        assert q.ack(lease.item.id, lease.token)
        assert not q.ack(lease.item.id, lease.token)  # twice: nothing left
        assert q.get(lease.item.id) is None
        assert q.depth() == {"pending": 0, "ready": 0, "inflight": 0, "dead": 0}

    def test_nack_retries_then_dead_letters(self) -> None:
        q = self.make_queue(max_attempts=2)
        q.enqueue(item(), T0)
        q.dispatch("db.t")
        lease = q.dequeue(T0, 30)
        assert lease is not None
        assert q.nack(lease.item.id, "wrong-token", "x", T0) is None
        assert q.nack(lease.item.id, lease.token, "boom 1", T0) == "pending"
        again = q.heads()["db.t"]
        assert again.attempts == 1 and again.last_error == "boom 1"
        q.dispatch("db.t")
        lease2 = q.dequeue(T0 + 1, 30)
        assert lease2 is not None and lease2.item.attempts == 1
        assert q.nack(lease2.item.id, lease2.token, "boom 2", T0 + 1) == "dead"
        dead = q.dead()
        assert [d.id for d in dead] == [item().id] and dead[0].last_error == "boom 2"
        assert dead[0].attempts == 2
        assert q.depth() == {"pending": 0, "ready": 0, "inflight": 0, "dead": 1}

    def test_dead_item_is_only_revived_by_force(self) -> None:
        q = self.make_queue(max_attempts=1)
        q.enqueue(item(), T0)
        q.dispatch("db.t")
        lease = q.dequeue(T0, 30)
        assert lease is not None
        assert q.nack(lease.item.id, lease.token, "boom", T0) == "dead"
        assert q.enqueue(item(), T0 + 1) == -1
        assert q.depth()["dead"] == 1
        assert q.enqueue(item(), T0 + 2, force=True) == 1
        revived = q.get(item().id)
        assert revived is not None and revived.attempts == 0 and revived.enqueued_at == T0 + 2
        assert q.depth() == {"pending": 1, "ready": 0, "inflight": 0, "dead": 0}

    def test_expired_lease_returns_the_item(self, q: PriorityQueue) -> None:
        q.enqueue(item(), T0)
        q.dispatch("db.t")
        lease = q.dequeue(T0, 30)
        assert lease is not None
        assert q.reap(T0 + 29) == {}
        assert q.reap(T0 + 30) == {lease.item.id: "pending"}
        assert not q.ack(lease.item.id, lease.token)  # the old holder lost it
        assert q.heads()["db.t"].last_error == "lease expired"

    def test_renewal_keeps_the_lease(self, q: PriorityQueue) -> None:
        q.enqueue(item(), T0)
        q.dispatch("db.t")
        lease = q.dequeue(T0, 30)
        assert lease is not None
        assert q.renew(lease.item.id, lease.token, T0 + 25, 30)
        assert not q.renew(lease.item.id, "other", T0 + 25, 30)
        assert q.reap(T0 + 40) == {}
        assert [(f.leased_at, f.deadline) for f in q.inflight()] == [(T0, T0 + 55)]
        assert q.ack(lease.item.id, lease.token)

    # ---- batches: the one-item calls, in order ---------------------------------------------
    def test_enqueue_many_is_enqueue_of_each_in_order(self) -> None:
        q = self.make_queue(max_attempts=1)
        q.enqueue(item(partition="dead"), T0)
        q.dispatch("db.t")
        lease = q.dequeue(T0, 30)
        assert lease is not None and q.nack(lease.item.id, lease.token, "boom", T0) == "dead"
        batch = [
            item(partition="a"),
            item(table="db.u", partition="b"),
            item(partition="a", benefit=99.0),  # the same work again: coalesced
            item(partition="dead"),
        ]
        assert q.enqueue_many(batch, T0 + 1) == [1, 1, 0, -1]
        assert q.pending_by_table() == {"db.t": 1, "db.u": 1}
        got = q.get(item(partition="a").id)
        assert got is not None and got.benefit == 99.0 and got.enqueued_at == T0 + 1
        assert q.enqueue_many([item(partition="dead")], T0 + 2, force=True) == [1]
        assert q.enqueue_many([], T0) == [] and q.depth()["pending"] == 3

    def test_dispatch_many_is_dispatch_of_each_in_order(self, q: PriorityQueue) -> None:
        low, high = item(partition="a", benefit=1.0), item(partition="b", benefit=5.0)
        other = item(table="db.u", partition="c")
        q.enqueue_many([low, high, other], T0)
        tables = ["db.t", "db.u", "db.t", "db.t", "db.v"]
        assert q.dispatch_many(tables) == [high.id, other.id, low.id, None, None]
        assert q.pending_tables() == {} and q.dispatch_many([]) == []
        assert [lease.item.id for lease in q.dequeue_many(T0, 30, 10)] == [
            high.id,
            other.id,
            low.id,
        ]

    def test_dequeue_many_leases_up_to_the_limit_oldest_first(self, q: PriorityQueue) -> None:
        items = [item(partition=str(p), benefit=10.0 - p) for p in range(5)]
        q.enqueue_many(items, T0)
        assert q.dispatch_many(["db.t"] * 5) == [it.id for it in items]
        first = q.dequeue_many(T0, 30, 2)
        assert [lease.item for lease in first] == items[:2]
        assert all(lease.deadline == T0 + 30 for lease in first)
        rest = q.dequeue_many(T0 + 1, 60, 10)
        assert [lease.item.id for lease in rest] == [it.id for it in items[2:]]
        assert len({lease.token for lease in first + rest}) == 5  # a token each
        assert q.dequeue_many(T0, 30, 10) == [] and q.dequeue_many(T0, 30, 0) == []
        assert q.depth() == {"pending": 0, "ready": 0, "inflight": 5, "dead": 0}
        assert q.reap(T0 + 31) == {it.id: "pending" for it in items[:2]}  # their own leases

    def test_ack_many_is_ack_of_each_in_order(self, q: PriorityQueue) -> None:
        items = [item(partition=str(p), benefit=10.0 - p) for p in range(3)]
        q.enqueue_many(items, T0)
        q.dispatch_many(["db.t"] * 3)
        a, b, c = q.dequeue_many(T0, 30, 3)
        assert c.item == items[2]
        q.enqueue(item(partition="2", benefit=99.0), T0 + 1)  # c again while in flight
        acks = [(a.item.id, a.token), (b.item.id, "not-ours"), (c.item.id, c.token)]
        assert q.ack_many(acks + [(a.item.id, a.token)]) == [1, 0, 2, 0]
        assert q.depth() == {"pending": 1, "ready": 0, "inflight": 1, "dead": 0}
        assert q.ack_many([(b.item.id, b.token)]) == [1] and q.ack_many([]) == []

    @pytest.mark.parametrize("batched", [False, True], ids=["one-by-one", "batched"])
    def test_random_operations_never_lose_or_duplicate_an_item(self, batched: bool) -> None:
        """Every item created ends exactly once: acked or dead-lettered (with the one-item
        calls, or with random batches of the ``*_many`` calls)."""
        rng = random.Random(7)
        q = self.make_queue(max_attempts=3)
        now = T0
        created: Counter[str] = Counter()
        leases: list[Any] = []
        acked: list[str] = []
        for _ in range(300):
            now += 1
            op = rng.random()
            size = rng.randrange(1, 4) if batched else 1
            if op < 0.3:
                batch = [
                    item(
                        table=f"db.t{rng.randrange(3)}",
                        partition=str(rng.randrange(8)),
                        cost=rng.randrange(1, 10_000),
                        now=now,
                    )
                    for _ in range(size)
                ]
                results = q.enqueue_many(batch, now) if batched else [q.enqueue(batch[0], now)]
                created.update(it.id for it, got in zip(batch, results, strict=True) if got == 1)
            elif op < 0.5 and q.pending_tables():
                tables = [rng.choice(sorted(q.pending_tables())) for _ in range(size)]
                q.dispatch_many(tables) if batched else q.dispatch(tables[0])
            elif op < 0.7:
                ttl = rng.choice([3, 50])
                got = q.dequeue_many(now, ttl, size) if batched else [q.dequeue(now, ttl)]
                leases += [lease for lease in got if lease]
            elif op < 0.85 and leases:
                done = [
                    leases.pop(rng.randrange(len(leases))) for _ in range(min(size, len(leases)))
                ]
                pairs = [(lease.item.id, lease.token) for lease in done]
                results = q.ack_many(pairs) if batched else [q.ack(*pairs[0])]
                # 2: pending again, not ended
                acked += [i for (i, _), got in zip(pairs, results, strict=True) if got == 1]
            elif op < 0.95 and leases:
                lease = leases.pop(rng.randrange(len(leases)))
                q.nack(lease.item.id, lease.token, "err", now)
            else:
                q.reap(now)
        # finish: reap everything, then drain and ack
        while True:
            now += 100
            q.reap(now)
            for table in sorted(q.pending_tables()):
                while q.dispatch(table):
                    pass
            got = False
            while lease := q.dequeue(now, 10):
                got = True
                assert q.ack(lease.item.id, lease.token) == 1
                acked.append(lease.item.id)
            if not got and q.depth()["inflight"] == 0 and q.depth()["pending"] == 0:
                break
        dead = [d.id for d in q.dead()]
        assert Counter(acked) + Counter(dead) == created
        assert q.depth() == {"pending": 0, "ready": 0, "inflight": 0, "dead": len(dead)}
