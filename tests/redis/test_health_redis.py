"""The metadata-health store contract suite against a real Redis and a Redis Cluster
(flushed per test)."""

from __future__ import annotations

from typing import Any

import pytest

from service.base.keys import Keys
from service.state.health import HealthStore
from service.state.health.redis import RedisHealth
from tests.support.contracts.health import HEALTH, HealthContract, T

pytestmark = [pytest.mark.redis]
TOPOLOGIES = ("single", "cluster")  # each test on both (tests/redis/conftest.py)

KEYS = Keys("icefloe-test")


class TestRedisHealth(HealthContract):
    __test__ = True

    @pytest.fixture(autouse=True)
    def _redis(self, redis_client: Any) -> None:
        self.client = redis_client

    def make_store(self) -> HealthStore:
        return RedisHealth(self.client, KEYS)


def test_health_lives_in_the_tables_hash(redis_client: Any) -> None:
    RedisHealth(redis_client, KEYS).save(T, HEALTH)
    RedisHealth(redis_client, KEYS).mark_run(T, "expire_snapshots", 8)
    stored = redis_client.hgetall(KEYS.health(T))
    assert stored[b"snapshot"] == b"7" and stored[b"run:expire_snapshots"] == b"8"
