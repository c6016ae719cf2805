"""The read-statistics store contract suite in memory
(``tests/support/contracts/reads.py``; ``tests/redis/test_reads_redis.py`` runs it on Redis),
and the statistics' codec."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe.optimizer.reads import ReadStats
from icefloe.state.reads import ReadStore, decode, encode
from icefloe.state.reads.memory import MemoryReads
from tests.support.contracts.reads import ReadsContract

pytestmark = [pytest.mark.unit]


class TestMemoryReads(ReadsContract):
    __test__ = True

    def make_store(self) -> ReadStore:
        return MemoryReads()

    def append(self, store: ReadStore, fields: Mapping[str, str]) -> None:
        assert isinstance(store, MemoryReads)
        store.append(fields)

    def drop(self, store: ReadStore, n: int) -> None:
        assert isinstance(store, MemoryReads)
        store.drop(n)


finite = st.floats(0, 1e15, allow_nan=False)
names = st.dictionaries(st.text(min_size=1, max_size=20), finite, max_size=8)


@settings(max_examples=300, deadline=None, database=None)
@given(st.integers(0, 2**62), finite, finite, finite, finite, finite, finite, finite, names, names)
def test_the_codec_round_trips(
    scans: int,
    weight: float,
    files: float,
    skipped: float,
    size: float,
    planning: float,
    at: float,
    last: float,
    filtered: dict[str, float],
    projected: dict[str, float],
) -> None:
    stats = ReadStats(scans, weight, files, skipped, size, planning, at, last, filtered, projected)
    assert decode(encode(stats)) == stats


@pytest.mark.parametrize(
    "raw",
    ["", "{", "[]", '{"v": 2}', '{"v": 1}', '{"v": 1, "scans": "x"}', b"\xff", "null"],
)
def test_damaged_or_foreign_statistics_read_as_none(raw: str | bytes) -> None:
    assert decode(raw) is None
