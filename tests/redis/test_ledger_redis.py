"""The ledger contract suite against a real Redis and a Redis Cluster (flushed per test)."""

from __future__ import annotations

from typing import Any

import pytest

from icefloe.base.keys import Keys
from icefloe.state.ledger import Ledger
from icefloe.state.ledger.redis import RedisLedger
from tests.support.contracts.ledger import T0, LedgerContract

pytestmark = [pytest.mark.redis]
TOPOLOGIES = ("single", "cluster")  # each test on both (tests/redis/conftest.py)

KEYS = Keys("icefloe-test")


class TestRedisLedger(LedgerContract):
    __test__ = True

    @pytest.fixture(autouse=True)
    def _redis(self, redis_client: Any) -> None:
        self.client = redis_client

    def make_ledger(self) -> Ledger:
        return RedisLedger(self.client, KEYS)


def test_the_launch_guard_is_a_key_with_a_ttl(redis_client: Any) -> None:
    assert RedisLedger(redis_client, KEYS).claim_launch(T0, 60)
    assert 0 < redis_client.ttl(KEYS.launch_guard) <= 60
