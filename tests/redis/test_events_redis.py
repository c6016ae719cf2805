"""The commit-events contract suite against a Redis Stream, on a single Redis and on a Redis
Cluster (flushed per test)."""

from __future__ import annotations

from typing import Any

import pytest

from icefloe.base.keys import Keys, shard_of
from icefloe.state.events import CommitEvents
from icefloe.state.events.redis import RedisEvents
from tests.support.contracts.events import EventsContract

pytestmark = [pytest.mark.redis]
TOPOLOGIES = ("single", "cluster")  # each test on both (tests/redis/conftest.py)

KEYS = Keys("icefloe-test")


class TestRedisEvents(EventsContract):
    __test__ = True

    @pytest.fixture(autouse=True)
    def _redis(self, redis_client: Any) -> None:
        self.client = redis_client

    def make_events(
        self, consumer: str, claim_idle_ms: int = 60_000, shards: int = 1
    ) -> CommitEvents:
        return RedisEvents(self.client, KEYS, consumer, claim_idle_ms, shards=shards)


def test_events_survive_a_redis_restarted_empty(redis_client: Any) -> None:
    ev = RedisEvents(redis_client, KEYS, "c1")
    ev.ensure_group()
    redis_client.flushdb()
    assert ev.lag() == 0 and ev.read() == []  # the group is re-created, no crash
    ev.publish("db.t", 1)
    assert [e.table for e in ev.read()] == ["db.t"]


def test_an_event_deleted_while_pending_comes_back_empty(redis_client: Any) -> None:
    ev = RedisEvents(redis_client, KEYS, "c1", claim_idle_ms=0)
    ev.ensure_group()
    first = ev.publish("db.t", 1)
    assert len(ev.read()) == 1
    redis_client.xdel(KEYS.events(shard_of("db.t", ev.shards)), first)
    got = ev.read()
    assert [(e.id, e.table) for e in got] in ([(first, "")], [])  # Redis 7 drops it
