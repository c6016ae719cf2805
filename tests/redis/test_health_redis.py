"""The metadata-health store contract suite against a real Redis and a Redis Cluster
(flushed per test)."""

from __future__ import annotations

from typing import Any

import pytest

from icefloe.base.keys import Keys
from icefloe.state.health import HealthStore
from icefloe.state.health.redis import RedisHealth
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


def test_a_health_another_version_wrote_is_read_or_read_again(redis_client: Any) -> None:
    """Numbers a newer icefloe appends are not read; a damaged value is as if none was
    stored (the decider reads the health again from the table and overwrites it), never
    an error that skips the table on every pass."""
    store = RedisHealth(redis_client, KEYS)
    store.save(T, HEALTH)
    want = store.load(T)
    fields = {k.decode(): v.decode() for k, v in redis_client.hgetall(KEYS.health(T)).items()}
    redis_client.hset(KEYS.health(T), "manifests", fields["manifests"] + " 12985")
    redis_client.hset(KEYS.health(T), "deletes", fields["deletes"] + " 4 5")
    assert store.load(T) == want
    redis_client.hset(KEYS.health(T), "manifests", "1 2 x")
    assert store.load(T) is None
    store.save(T, HEALTH)
    assert store.load(T) == want
