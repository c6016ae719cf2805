"""The write-intent contract suite against a real Redis and a Redis Cluster (flushed per
test)."""

from __future__ import annotations

from typing import Any

import pytest

from icefloe.base.keys import Keys
from icefloe.state.intents import Intents
from icefloe.state.intents.redis import RedisIntents
from icefloe.state.queue import PriorityQueue
from icefloe.state.queue.redis import RedisQueue
from tests.support.contracts.intents import IntentsContract

pytestmark = [pytest.mark.redis]
TOPOLOGIES = ("single", "cluster")  # each test on both (tests/redis/conftest.py)


class TestRedisIntents(IntentsContract):
    __test__ = True

    @pytest.fixture(autouse=True)
    def _redis(self, redis_client: Any) -> None:
        self.client = redis_client

    def make(self) -> tuple[PriorityQueue, Intents]:
        keys = Keys("icefloe-test")
        return RedisQueue(self.client, keys), RedisIntents(self.client, keys)
