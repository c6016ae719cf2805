"""The read-statistics store contract suite on a real Redis and a Redis Cluster (flushed
per test), and what only Redis has: the reports another consumer took and never folded."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from icefloe.base.keys import Keys
from icefloe.state.reads import ReadStore
from icefloe.state.reads.redis import RedisReads
from tests.support.contracts.reads import HALF, ReadsContract, entry, resolve

pytestmark = [pytest.mark.redis]
TOPOLOGIES = ("single", "cluster")  # each test on both (tests/redis/conftest.py)

KEYS = Keys("icefloe-test")


class TestRedisReads(ReadsContract):
    __test__ = True

    @pytest.fixture(autouse=True)
    def _redis(self, redis_client: Any) -> None:
        self.client = redis_client

    def make_store(self) -> ReadStore:
        return RedisReads(self.client, KEYS, "c1")

    def append(self, store: ReadStore, fields: Mapping[str, str]) -> None:
        self.client.xadd(KEYS.reads, dict(fields), maxlen=1000, approximate=True)

    def drop(self, store: ReadStore, n: int) -> None:
        self.client.incrby(KEYS.reads_dropped, n)


def test_reports_a_consumer_took_and_never_folded_are_folded_by_another(
    redis_client: Any,
) -> None:
    crashed = RedisReads(redis_client, KEYS, "crashed", claim_idle_ms=0)
    for i in range(3):
        redis_client.xadd(KEYS.reads, entry("db.a", files=i + 1))
    assert len(crashed._take(10)) == 3  # taken, then the process died before its fold
    survivor = RedisReads(redis_client, KEYS, "survivor", claim_idle_ms=0)
    assert survivor.lag() == 3  # pending
    assert survivor.fold(resolve, HALF, 10).tables == {"db.a": 3}
    assert survivor.lag() == 0 and survivor.stats()["db.a"].scans == 3
    assert survivor.fold(resolve, HALF, 10).reports == 0


def test_a_report_trimmed_while_pending_is_acknowledged(redis_client: Any) -> None:
    taker = RedisReads(redis_client, KEYS, "taker", claim_idle_ms=0)
    ids = [redis_client.xadd(KEYS.reads, entry("db.a")) for _ in range(2)]
    taker._take(10)
    redis_client.xdel(KEYS.reads, ids[0])  # the stream's cap trimmed it meanwhile
    folded = taker.fold(resolve, HALF, 10)
    assert folded.tables == {"db.a": 1} and taker.lag() == 0


def test_the_stream_the_reporter_writes_is_the_one_folded(redis_client: Any) -> None:
    # dev.icefloe.iceberg.ReadSink names its keys itself: they must be these
    assert KEYS.reads == "icefloe-test:{r}:reads"
    assert KEYS.reads_dropped == "icefloe-test:{r}:dropped"
