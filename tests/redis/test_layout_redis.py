"""The layout store contract suite against a real Redis and a Redis Cluster (flushed per
test)."""

from __future__ import annotations

from typing import Any

import pytest

from icefloe.base.keys import Keys
from icefloe.state.layout import LayoutDelta, LayoutStore
from icefloe.state.layout.redis import RedisLayouts
from tests.support.contracts.layout import P1, SIG, LayoutContract, T, fb

pytestmark = [pytest.mark.redis]
TOPOLOGIES = ("single", "cluster")  # each test on both (tests/redis/conftest.py)

KEYS = Keys("icefloe-test")


class TestRedisLayouts(LayoutContract):
    __test__ = True

    @pytest.fixture(autouse=True)
    def _redis(self, redis_client: Any) -> None:
        self.client = redis_client

    def make_store(self) -> LayoutStore:
        return RedisLayouts(self.client, KEYS)


def test_one_hash_per_partition_and_no_key_left_behind(redis_client: Any) -> None:
    store = RedisLayouts(redis_client, KEYS)
    store.replace(T, SIG, {P1: [fb("a", 1, 2), fb("b", 3, 4)]})
    assert redis_client.hlen(KEYS.layout(T, P1)) == 2
    store.update(T, SIG, {P1: LayoutDelta(deleted=["a", "b"])})
    assert redis_client.smembers(KEYS.layout_parts(T)) == set()
    store.forget(T)
    assert redis_client.keys("*") == []
