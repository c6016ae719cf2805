"""The shard-lease contract suite against a single Redis and a Redis Cluster (flushed per
test)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from icefloe.base.keys import Keys
from icefloe.state.shards import Shards
from icefloe.state.shards.redis import RedisShards
from tests.support.contracts.shards import ShardsContract

pytestmark = [pytest.mark.redis]
TOPOLOGIES = ("single", "cluster")  # each test on both (tests/redis/conftest.py)

KEYS = Keys("icefloe-test")


class TestRedisShards(ShardsContract):
    __test__ = True

    @pytest.fixture(autouse=True)
    def _redis(self, redis_client: Any) -> None:
        self.client = redis_client

    def make(
        self,
        token: str,
        count: int = 8,
        ttl_seconds: float = 30.0,
        clock: Callable[[], float] | None = None,
    ) -> Shards:
        return RedisShards(self.client, KEYS, count, ttl_seconds, token, clock)


def test_leases_and_membership_live_in_the_decider_slot(redis_client: Any) -> None:
    a = RedisShards(redis_client, KEYS, 4, ttl_seconds=30, token="a")
    a.claim()
    assert redis_client.zrange(KEYS.deciders, 0, -1) == [b"a"]
    leases = redis_client.hgetall(KEYS.shard_leases)
    assert sorted(int(s) for s in leases) == [0, 1, 2, 3]
    assert all(v.decode().endswith(" a") for v in leases.values())
