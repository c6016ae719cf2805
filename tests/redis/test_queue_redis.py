"""The RPQ contract suite against a real Redis (db 15, flushed per test)."""

from __future__ import annotations

from typing import Any

import pytest

from service.keys import Keys
from service.queue import PriorityQueue, RedisQueue
from tests.unit.service.test_queue import QueueContract

pytestmark = [pytest.mark.redis]


class TestRedisQueue(QueueContract):
    __test__ = True

    @pytest.fixture(autouse=True)
    def _redis(self, redis_client: Any) -> None:
        self.client = redis_client

    def make_queue(self, max_attempts: int = 3) -> PriorityQueue:
        return RedisQueue(self.client, Keys("icefloe-test"), max_attempts=max_attempts)


def test_keys_live_under_the_prefix(redis_client: Any) -> None:
    from tests.unit.service.test_queue import T0, item

    q = RedisQueue(redis_client, Keys("pfx"))
    q.enqueue(item(), T0)
    q.dispatch("db.t")
    assert q.dequeue(T0, 30) is not None
    assert all(k.decode().startswith("pfx:") for k in redis_client.keys("*"))
