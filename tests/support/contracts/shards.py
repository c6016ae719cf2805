"""The shard-lease contract suite: every :class:`icefloe.state.shards.Shards` runs these.

``ShardsContract`` is not collected by itself; ``TestMemoryShards`` in
``tests/unit/state/test_shards.py`` runs it, ``tests/redis/test_shards_redis.py`` on a
single Redis and on a Redis Cluster.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from icefloe.state.shards import LEASE_FRACTION, Shards
from tests.support.clock import Clock


class ShardsContract:
    __test__ = False

    def make(
        self,
        token: str,
        count: int = 8,
        ttl_seconds: float = 30.0,
        clock: Callable[[], float] | None = None,
    ) -> Shards:
        """A decider's handle on this test's one set of shard leases, timed by ``clock``
        (seconds; None: the adapter's own, the server's on Redis)."""
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
        clock = Clock()
        ttl = 10.0
        lease = ttl * LEASE_FRACTION  # the survivors' reaction fits in the rest of the TTL
        a, b = (self.make(t, ttl_seconds=ttl, clock=clock) for t in ("a", "b"))
        a.claim()
        b.claim()
        a.claim()  # a's last renewal: it goes silent now
        assert b.claim().owned == frozenset(range(4, 8))
        claim = b.claim()
        assert claim.next_lapse == pytest.approx(lease)
        clock.sleep(lease - 1)
        b.claim()  # a is silent, but its lease has not lapsed
        claim = b.claim()
        assert claim.owned == frozenset(range(4, 8))
        assert claim.next_lapse == pytest.approx(1)
        clock.sleep(1)  # a's membership and leases lapse together
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
