"""The stats-store contract suite against a real Redis and a Redis Cluster (flushed per test)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from icefloe.base.keys import Keys
from icefloe.optimizer import stats_from_sizes
from icefloe.state.ledger.redis import RedisLedger
from icefloe.state.rolling import PartitionDelta, StatsStore, encode
from icefloe.state.rolling.redis import RollingStats
from tests.support.cluster import all_keys
from tests.support.contracts.rolling import T0, TARGET, StatsContract, T

pytestmark = [pytest.mark.redis]
TOPOLOGIES = ("single", "cluster")  # each test on both (tests/redis/conftest.py)

KEYS = Keys("icefloe-test")


class TestRedisStats(StatsContract):
    __test__ = True

    @pytest.fixture(autouse=True)
    def _redis(self, redis_client: Any) -> None:
        self.client = redis_client

    def make_store(self) -> StatsStore:
        return RollingStats(self.client, KEYS)

    def counters(self) -> dict[str, int]:
        return RedisLedger(self.client, KEYS).counters()

    def forget_stats_format(self, store: StatsStore, table: str) -> None:
        self.client.hdel(KEYS.table_state(table), "stats")


def test_stats_are_exact_decimal_strings_under_the_prefix(redis_client: Any) -> None:
    store = RollingStats(redis_client, KEYS)
    huge = 10**15
    store.replace(T, 1, huge, {}, T0)
    store.apply(T, 1, 2, huge, {"a": PartitionDelta(added=[1, 2])}, T0)
    want = stats_from_sizes([1, 2], huge)
    assert want.sse > 2**64  # far beyond a Lua double / 64-bit counter: kept exact
    assert store.partitions(T) == {"a": want}
    assert redis_client.hget(KEYS.stats(T), "a").decode() == encode(want)
    assert all(k.decode().startswith("icefloe-test:{") for k in all_keys(redis_client))


def test_a_racing_writer_makes_apply_re_read(
    redis_client: Any, new_redis_client: Callable[[], Any]
) -> None:
    """WATCH: a concurrent write between read and EXEC aborts the transaction; the retry
    then sees the snapshot applied and changes nothing."""
    store = RollingStats(redis_client, KEYS)
    store.replace(T, 1, TARGET, {}, T0)
    second = new_redis_client()  # another decider's connection
    other = RollingStats(second, KEYS)
    real_pipeline = redis_client.pipeline

    def racing_pipeline(*args: Any, **kwargs: Any) -> Any:
        pipe = real_pipeline(*args, **kwargs)
        original = pipe.multi

        def multi() -> None:
            if not getattr(pipe, "_raced", False):
                pipe._raced = True
                other.apply(T, 1, 2, TARGET, {"a": PartitionDelta(added=[5])}, T0)
            original()

        pipe.multi = multi
        return pipe

    redis_client.pipeline = racing_pipeline
    try:
        assert store.apply(T, 1, 2, TARGET, {"a": PartitionDelta(added=[5])}, T0) is None
    finally:
        del redis_client.pipeline
        second.close()
    assert store.partitions(T) == {"a": stats_from_sizes([5], TARGET)}  # applied once
    assert RedisLedger(redis_client, KEYS).counters()["snapshots_applied"] == 1
