"""The leader-lease contract suite against a single Redis and a Redis Cluster (flushed per
test)."""

from __future__ import annotations

from typing import Any

import pytest

from icefloe.base.keys import Keys
from icefloe.state.leader import Leader
from icefloe.state.leader.redis import RedisLeader
from tests.support.contracts.leader import LeaderContract

pytestmark = [pytest.mark.redis]
TOPOLOGIES = ("single", "cluster")  # each test on both (tests/redis/conftest.py)

KEYS = Keys("icefloe-test")


class TestRedisLeader(LeaderContract):
    __test__ = True

    @pytest.fixture(autouse=True)
    def _redis(self, redis_client: Any) -> None:
        self.client = redis_client

    def make_leader(self, token: str, ttl_seconds: float = 30.0) -> Leader:
        return RedisLeader(self.client, KEYS, ttl_seconds, token)


def test_the_lease_is_a_key_with_a_ttl(redis_client: Any) -> None:
    a = RedisLeader(redis_client, KEYS, ttl_seconds=30, token="a")
    assert a.acquire()
    assert 0 < redis_client.pttl(KEYS.leader) <= 30_000
    assert redis_client.get(KEYS.leader) == b"a"
