"""The commit-events contract suite: every :class:`icefloe.state.events.CommitEvents` runs these.

``EventsContract`` is not collected by itself; ``TestMemoryEvents`` in
``tests/unit/state/test_events.py`` runs it on the in-memory stream,
``tests/redis/test_events_redis.py`` on a Redis Stream.
"""

from __future__ import annotations

from icefloe.base.keys import shard_of
from icefloe.state.events import CommitEvents


class EventsContract:
    __test__ = False

    def make_events(
        self, consumer: str, claim_idle_ms: int = 60_000, shards: int = 1
    ) -> CommitEvents:
        """A consumer of the decider group on this test's ``shards`` streams."""
        raise NotImplementedError

    def test_publish_read_ack(self) -> None:
        ev = self.make_events("c1")
        ev.ensure_group()
        ev.ensure_group()  # twice: harmless
        assert ev.lag() == 0 and ev.read() == []
        first = ev.publish("db.t", 42)
        ev.publish("db.u")
        assert ev.lag() == 2
        got = ev.read()
        assert [(e.id, e.table, e.snapshot_id) for e in got][0] == (first, "db.t", "42")
        assert [(e.table, e.snapshot_id) for e in got] == [("db.t", "42"), ("db.u", "")]
        assert ev.lag() == 2  # delivered but not acked
        assert ev.read() == []  # pending, not yet idle long enough to be claimed again
        ev.ack([got[0]])
        assert ev.lag() == 1
        ev.ack(got)
        ev.ack([])
        assert ev.lag() == 0

    def test_read_respects_count(self) -> None:
        ev = self.make_events("c1")
        ev.ensure_group()
        for i in range(5):
            ev.publish("db.t", i)
        assert [e.snapshot_id for e in ev.read(count=2)] == ["0", "1"]
        assert [e.snapshot_id for e in ev.read(count=10)] == ["2", "3", "4"]

    def test_a_dead_consumers_events_are_claimed(self) -> None:
        dead = self.make_events("dead", claim_idle_ms=0)
        dead.ensure_group()
        dead.publish("db.t", 1)
        dead.publish("db.u", 2)
        got = dead.read()
        alive = self.make_events("alive", claim_idle_ms=0)
        again = alive.read()
        assert [e.id for e in again] == [e.id for e in got]
        assert [e.table for e in again] == ["db.t", "db.u"]
        assert alive.lag() == 2
        alive.ack(again)
        assert alive.lag() == 0 and alive.read(block_ms=None) == []

    def test_events_are_not_claimed_before_they_are_idle(self) -> None:
        a = self.make_events("a", claim_idle_ms=60_000)
        a.ensure_group()
        a.publish("db.t", 1)
        assert len(a.read()) == 1
        b = self.make_events("b", claim_idle_ms=60_000)
        assert b.read() == []

    def test_a_stuck_event_never_blocks_new_ones(self) -> None:
        ev = self.make_events("c1", claim_idle_ms=0)
        ev.ensure_group()
        first = ev.publish("db.broken", 1)
        assert [e.id for e in ev.read()] == [first]  # not acked: its table failed
        second = ev.publish("db.t", 2)
        assert [e.id for e in ev.read()] == [first, second]

    def test_a_reader_gets_only_the_events_of_its_shards(self) -> None:
        tables = [f"db.t{i}" for i in range(12)]
        by_shard: dict[int, set[str]] = {}
        for t in tables:
            by_shard.setdefault(shard_of(t, 4), set()).add(t)
        assert len(by_shard) > 1  # the fixture spreads over several shards
        a = self.make_events("a", shards=4)
        b = self.make_events("b", shards=4)
        a.ensure_group()
        for t in tables:
            a.publish(t, 1)
        assert a.lag() == 12  # over every shard's stream
        first, *rest = sorted(by_shard)
        got_a = a.read(shards=[first])
        assert {e.table for e in got_a} == by_shard[first]
        assert {e.shard for e in got_a} == {first}
        got_b = b.read(shards=rest)
        assert {e.table for e in got_b} == set(tables) - by_shard[first]
        assert a.read(shards=[first]) == [] and b.read(shards=[]) == []
        a.ack(got_a)
        b.ack(got_b)
        assert a.lag() == 0

    def test_a_new_owner_claims_a_dead_readers_events_of_the_shard(self) -> None:
        dead = self.make_events("dead", claim_idle_ms=0, shards=4)
        dead.ensure_group()
        dead.publish("db.t", 1)
        shard = shard_of("db.t", 4)
        assert [e.table for e in dead.read(shards=[shard])] == ["db.t"]
        heir = self.make_events("heir", claim_idle_ms=0, shards=4)
        assert heir.read(shards=[s for s in range(4) if s != shard]) == []
        got = heir.read(shards=[shard])
        assert [(e.table, e.shard) for e in got] == [("db.t", shard)]
        heir.ack(got)
        assert heir.lag() == 0
