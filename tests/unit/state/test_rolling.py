"""The stats-store contract suite on the in-memory store.

``TestMemoryStats`` runs ``StatsContract`` (``tests/support/contracts/rolling.py``) on the
in-memory store; ``tests/redis/test_rolling_redis.py`` runs it on Redis.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe.optimizer import PartitionStats
from icefloe.state.ledger.memory import MemoryLedger
from icefloe.state.rolling import StatsStore, decode, encode
from icefloe.state.rolling.memory import MemoryStats
from tests.support.contracts.rolling import StatsContract

pytestmark = [pytest.mark.unit]


class TestMemoryStats(StatsContract):
    __test__ = True

    def make_store(self) -> StatsStore:
        self.ledger = MemoryLedger()
        return MemoryStats(self.ledger)

    def counters(self) -> dict[str, int]:
        return self.ledger.counters()

    def forget_stats_format(self, store: StatsStore, table: str) -> None:
        assert isinstance(store, MemoryStats)
        del store._state[table]["stats"]


@settings(max_examples=300, deadline=None, database=None)
@given(st.lists(st.integers(0, 10**30), min_size=10, max_size=10))
def test_stored_stats_round_trip_exactly(numbers: list[int]) -> None:
    stats = PartitionStats(*numbers)
    assert decode(encode(stats)) == stats
    assert decode(encode(stats).encode()) == stats  # as Redis returns it


def test_stats_of_an_older_format_read_what_they_lack_as_zero() -> None:
    """Five numbers (before the row counts), eight (before the small files' bytes), nine
    (before their count); the table's ``stats`` stamp sends them to a full scan (the
    decider's next pass: ``StatsStore.stale``). Numbers a newer icefloe appends are not
    read."""
    assert decode("3 9 30 3 0") == PartitionStats(3, 9, 30, 3)
    assert decode("3 9 30 3 1 100 7 2") == PartitionStats(3, 9, 30, 3, 1, 100, 7, 2, 0)
    assert decode("3 9 30 3 1 100 7 2 5") == PartitionStats(3, 9, 30, 3, 1, 100, 7, 2, 5, 0)
    newer = "3 9 30 3 1 100 7 2 5 1 42 43"
    assert decode(newer) == PartitionStats(3, 9, 30, 3, 1, 100, 7, 2, 5, 1)
    assert encode(PartitionStats(3, 9, 30, 3)) == "3 9 30 3 0"  # zero tails left out
