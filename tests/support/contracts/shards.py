"""The shard-lease contract suite: every :class:`icefloe.state.shards.Shards` runs these.

``ShardsContract`` is not collected by itself; ``TestMemoryShards`` in
``tests/unit/service/test_shards.py`` runs it, ``tests/redis/test_shards_redis.py`` on a
single Redis and on a Redis Cluster.
"""

from __future__ import annotations

import time

from icefloe.state.shards import LEASE_FRACTION, Shards


class ShardsContract:
    __test__ = False

    def make(self, token: str, count: int = 8, ttl_seconds: float = 30.0) -> Shards:
        """A decider's handle on this test's one set of shard leases."""
        raise NotImplementedError

    def test_a_lone_decider_holds_every_shard(self) -> None:
        a = self.make("a")
        claim = a.claim()
        assert claim.owned == frozenset(range(8)) and claim.next_lapse is None
        assert a.holders() == {s: "a" for s in range(8)}
        assert a.claim().owned == frozenset(range(8))  # renewal keeps them

    def test_a_joining_decider_gets_its_share_without_overlap(self) -> None:
        a, b, c = self.make("a"), self.make("b"), self.make("c")
        a.claim()
        assert b.claim().owned == frozenset()  # all held: it waits for a to hand some back
        assert a.claim().owned == frozenset(range(4))  # two live: a keeps ceil(8/2)
        assert b.claim().owned == frozenset(range(4, 8))
        c.claim()
        owned = {d.token: d.claim().owned for d in (a, b, c)}
        owned = {d.token: d.claim().owned for d in (a, b, c)}  # settled after one more round
        assert sorted(len(o) for o in owned.values()) == [2, 3, 3]
        assert set().union(*owned.values()) == set(range(8))
        assert sum(len(o) for o in owned.values()) == 8  # no shard held twice
        holders = a.holders()
        assert all(holders[s] == t for t, o in owned.items() for s in o)

    def test_a_dead_deciders_shards_are_taken_after_its_lease(self) -> None:
        # a lease long enough that a stalled test process (a loaded machine) does not see
        # it lapse early; its end is waited for, never guessed
        ttl = 3.0
        a, b = self.make("a", ttl_seconds=ttl), self.make("b", ttl_seconds=ttl)
        a.claim()
        b.claim()
        a.claim()
        silent_from = time.monotonic()  # a's last renewal
        assert b.claim().owned == frozenset(range(4, 8))
        claim = b.claim()
        assert claim.next_lapse is not None and 0 < claim.next_lapse <= ttl * LEASE_FRACTION
        time.sleep(0.3)
        b.claim()  # a is silent, but its lease has not lapsed
        owned = b.claim().owned
        if time.monotonic() - silent_from < ttl * LEASE_FRACTION - 0.1:
            assert owned == frozenset(range(4, 8))
        time.sleep(max(0.0, silent_from + ttl - time.monotonic()) + 0.1)  # a's all lapsed
        assert b.claim().owned == frozenset(range(8))
        assert b.holders() == {s: "b" for s in range(8)}

    def test_a_clean_shutdown_hands_every_shard_back_at_once(self) -> None:
        a, b = self.make("a"), self.make("b")
        a.claim()
        b.claim()
        a.claim()
        b.claim()
        a.release()
        assert set(a.holders().values()) == {"b"}
        assert b.claim().owned == frozenset(range(8))  # a left the membership too
        a.release()  # holds nothing: harmless

    def test_lowering_the_shard_count_drops_the_shards_beyond_it(self) -> None:
        a = self.make("a", count=8)
        a.claim()
        fewer = self.make("a", count=4)
        assert fewer.claim().owned == frozenset(range(4))
        assert set(fewer.holders()) == set(range(4))
