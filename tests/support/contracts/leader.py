"""The leader-lease contract suite: every :class:`icefloe.state.leader.Leader` runs these.

``LeaderContract`` is not collected by itself; ``TestMemoryLeader`` in
``tests/unit/state/test_leader.py`` runs it, ``tests/redis/test_leader_redis.py`` on Redis.
"""

from __future__ import annotations

import time

from icefloe.state.leader import Leader


class LeaderContract:
    __test__ = False

    def make_leader(self, token: str, ttl_seconds: float = 30.0) -> Leader:
        """A candidate for this test's one lease."""
        raise NotImplementedError

    def test_nobody_holds_an_untaken_lease(self) -> None:
        a = self.make_leader("a")
        assert a.holder() is None
        a.release()  # not the holder: nothing happens
        assert a.holder() is None

    def test_only_one_leader_and_handover(self) -> None:
        a, b = self.make_leader("a"), self.make_leader("b")
        assert a.acquire() and not b.acquire()
        assert a.acquire()  # renewal by compare-and-extend
        b.release()  # not the holder: nothing happens
        assert a.holder() == "a" and b.holder() == "a"
        a.release()
        assert a.holder() is None
        assert b.acquire() and not a.acquire() and b.holder() == "b"

    def test_a_lapsed_lease_is_taken_over(self) -> None:
        a, b = self.make_leader("a", ttl_seconds=0.2), self.make_leader("b", ttl_seconds=0.2)
        assert a.acquire() and not b.acquire()
        time.sleep(0.3)  # a paused or died: it did not extend
        assert a.holder() is None
        assert b.acquire() and not a.acquire() and b.holder() == "b"

    def test_extending_keeps_the_lease_past_its_first_ttl(self) -> None:
        a, b = self.make_leader("a", ttl_seconds=0.4), self.make_leader("b", ttl_seconds=0.4)
        assert a.acquire()
        for _ in range(3):
            time.sleep(0.2)
            assert a.acquire()
        assert not b.acquire() and a.holder() == "a"
