"""The metadata-health store contract suite in memory (``tests/support/contracts/health.py``;
``tests/redis/test_health_redis.py`` runs it on Redis)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe.optimizer import PartitionStats
from icefloe.optimizer.maintenance_rules import MetadataHealth
from icefloe.state.health import HealthStore, summary, to_fields
from icefloe.state.health.memory import MemoryHealth
from tests.support.contracts.health import HealthContract

pytestmark = [pytest.mark.unit]


class TestMemoryHealth(HealthContract):
    __test__ = True

    def make_store(self) -> HealthStore:
        return MemoryHealth()


@settings(max_examples=200, deadline=None, database=None)
@given(
    st.one_of(st.none(), st.integers(1, 2**63 - 1)),
    st.lists(st.integers(0, 10**12), max_size=40),
    st.integers(1, 10**12),
    st.lists(st.integers(0, 2**62), max_size=20),
    st.integers(0, 10**12),
    st.integers(1, 10),
    st.tuples(*[st.integers(0, 10**15)] * 3),
)
def test_the_stored_health_round_trips(
    snapshot: int | None,
    manifests: list[int],
    target: int,
    times: list[int],
    metadata_bytes: int,
    retain: int,
    deletes: tuple[int, int, int],
) -> None:
    """What ``status`` reads back is what the decider stored, whatever the numbers (the
    manifests' four sums exactly; numbers a newer icefloe appends ignored)."""
    health = MetadataHealth.of(snapshot, manifests, target, times, metadata_bytes, retain, deletes)
    fields = to_fields(health)
    got = summary(fields)
    m = health.manifests
    assert got["manifest_stats"] == PartitionStats(m.n, m.sse, m.total_bytes, m.undersized)
    assert got["snapshot"] == snapshot and got["snapshots"] == health.snapshots
    assert got["expirable_snapshots"] == len(health.expirable)
    assert (got["data_rows"], got["delete_files"], got["deleted_rows"]) == deletes
    newer = {k: f"{v} 7" if k in ("manifests", "deletes") else v for k, v in fields.items()}
    assert summary(newer) == got
