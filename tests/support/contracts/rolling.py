"""The stats-store contract suite: every :class:`icefloe.state.rolling.StatsStore` runs these
(the bookkeeping beside it: ``tests/support/contracts/ledger.py``).

``StatsContract`` is not collected by itself (``__test__ = False``); ``TestMemoryStats``
in ``tests/unit/state/test_rolling.py`` runs it on the in-memory store,
``tests/redis/test_rolling_redis.py`` on Redis.
"""

from __future__ import annotations

import random

import pytest

from icefloe.optimizer import PartitionStats, stats_from_sizes
from icefloe.state.rolling import GapError, PartitionDelta, StatsStore

T = "db.t"
TARGET = 1000
T0 = 1_790_000_000.0


def full(
    store: StatsStore, snapshot_id: int | None = 1, stats: dict[str, PartitionStats] | None = None
) -> None:
    store.replace(T, snapshot_id, TARGET, stats or {}, T0)


class StatsContract:
    __test__ = False

    def make_store(self) -> StatsStore:
        raise NotImplementedError

    def counters(self) -> dict[str, int]:
        """The counters of the ledger the store counts into (:mod:`icefloe.state.ledger`)."""
        raise NotImplementedError

    def forget_stats_format(self, store: StatsStore, table: str) -> None:
        """Make ``table``'s stats look as an icefloe before ``STATS_FORMAT`` wrote them."""
        raise NotImplementedError

    def test_stats_of_an_older_format_are_not_updated_in_place(self, store: StatsStore) -> None:
        assert store.stale(T) is None  # nothing stored
        full(store, 1, {"a": stats_from_sizes([10, 20], TARGET)})
        assert store.stale(T) is None
        self.forget_stats_format(store, T)
        assert "stats of format 1" in (store.stale(T) or "")  # the decider rebuilds it now
        with pytest.raises(GapError, match="stats of format 1"):
            store.apply(T, 1, 2, TARGET, {"a": PartitionDelta(added=[30])}, T0)
        assert store.partitions(T) == {"a": stats_from_sizes([10, 20], TARGET)}  # untouched
        full(store, 2, {"a": stats_from_sizes([10, 20, 30], TARGET)})  # the full scan
        assert store.stale(T) is None
        full(store, None)  # a table without a snapshot: nothing to rebuild before its first
        self.forget_stats_format(store, T)
        assert store.stale(T) is None
        full(store, 2, {"a": stats_from_sizes([10, 20, 30], TARGET)})
        assert store.apply(T, 2, 3, TARGET, {"a": PartitionDelta(added=[40])}, T0) is not None
        assert store.partitions(T) == {"a": stats_from_sizes([10, 20, 30, 40], TARGET)}

    @pytest.fixture
    def store(self) -> StatsStore:
        return self.make_store()

    def test_empty_store(self, store: StatsStore) -> None:
        assert store.last_applied(T) is None and store.decided(T) is None
        assert store.target(T) is None and store.partitions(T) == {}
        assert store.known_tables() == [] and self.counters() == {}

    def test_full_scan_replaces_and_records_the_snapshot(self, store: StatsStore) -> None:
        before = {"a": stats_from_sizes([10, 20], TARGET), "b": stats_from_sizes([5], TARGET, 2)}
        full(store, 7, before)
        assert store.partitions(T) == before
        assert store.last_applied(T) == 7 and store.target(T) == TARGET
        full(store, 8, {"b": stats_from_sizes([1], TARGET)})
        assert store.partitions(T) == {"b": stats_from_sizes([1], TARGET)}  # "a" is gone
        assert store.known_tables() == [T] and self.counters() == {"full_scans": 2}

    def test_an_empty_table_is_applied_at_no_snapshot(self, store: StatsStore) -> None:
        full(store, None)
        assert store.last_applied(T) is None and store.target(T) == TARGET
        got = store.apply(T, None, 1, TARGET, {"a": PartitionDelta(added=[10])}, T0)
        assert got == {"a": stats_from_sizes([10], TARGET)}

    def test_apply_then_replay_changes_nothing(self, store: StatsStore) -> None:
        full(store, 1, {"a": stats_from_sizes([100], TARGET)})
        deltas = {
            "a": PartitionDelta(added=[200, 300], deleted=[100]),
            "b": PartitionDelta(added=[50], added_deletes=1),
        }
        got = store.apply(T, 1, 2, TARGET, deltas, T0)
        want = {"a": stats_from_sizes([200, 300], TARGET), "b": stats_from_sizes([50], TARGET, 1)}
        assert got == want and store.partitions(T) == want and store.last_applied(T) == 2
        assert store.apply(T, 1, 2, TARGET, deltas, T0) is None  # replay: idempotent
        assert store.partitions(T) == want
        assert self.counters() == {"full_scans": 1, "snapshots_applied": 1}

    def test_apply_is_compare_and_set_on_the_last_snapshot(self, store: StatsStore) -> None:
        full(store, 1, {"a": stats_from_sizes([100], TARGET)})
        with pytest.raises(GapError, match="not the parent"):
            store.apply(T, 5, 6, TARGET, {"a": PartitionDelta(added=[1])}, T0)
        with pytest.raises(GapError, match="target changed"):
            store.apply(T, 1, 2, TARGET * 2, {"a": PartitionDelta(added=[1])}, T0)
        with pytest.raises(GapError, match="out of step"):  # deletes a file it never had
            store.apply(T, 1, 2, TARGET, {"z": PartitionDelta(deleted=[1])}, T0)
        assert store.partitions(T) == {"a": stats_from_sizes([100], TARGET)}  # untouched
        assert store.last_applied(T) == 1

    def test_a_partition_emptied_by_a_delta_is_dropped(self, store: StatsStore) -> None:
        full(store, 1, {"a": stats_from_sizes([100], TARGET), "b": stats_from_sizes([1], TARGET)})
        got = store.apply(T, 1, 2, TARGET, {"a": PartitionDelta(deleted=[100])}, T0)
        assert got == {"a": PartitionStats()}
        assert store.partitions(T) == {"b": stats_from_sizes([1], TARGET)}

    def test_partitions_of_and_the_waiting_partitions(self, store: StatsStore) -> None:
        stats = {"a": stats_from_sizes([10, 20], TARGET), "b": stats_from_sizes([5], TARGET)}
        full(store, 7, stats)
        assert store.partitions_of(T, ["b", "gone"]) == {"b": stats["b"]}
        assert store.partitions_of(T, []) == {}
        assert store.waiting(T) == {}
        store.mark_waiting(T, ["a", "b"], [], 100.0)
        store.mark_waiting(T, ["b", "c"], ["a"], 200.0)  # b keeps waiting from 100
        assert store.waiting(T) == {"b": 100.0, "c": 200.0}
        store.mark_waiting(T, [], [], 300.0)  # nothing to do
        store.mark_waiting(T, [], ["b", "never"], 300.0)
        assert store.waiting(T) == {"c": 200.0}
        many = [f"db.t{i}" for i in range(1200)]  # more than one round trip's worth
        store.mark_waiting(many[700], ["x"], [], 5.0)
        both = store.last_and_waiting([T, *many])
        assert both[T] == (7, {"c": 200.0}) and both[many[700]] == (None, {"x": 5.0})
        assert both[many[0]] == (None, {}) and len(both) == 1201
        assert store.last_and_waiting([]) == {}
        store.forget(T)
        assert store.waiting(T) == {}

    def test_decided_marker_and_forget(self, store: StatsStore) -> None:
        full(store, 3)
        store.mark_decided(T, 3)
        assert store.decided(T) == 3
        store.mark_decided(T, None)
        assert store.decided(T) is None
        store.forget(T)
        assert store.last_applied(T) is None and store.known_tables() == []
        assert store.partitions(T) == {}

    def test_incremental_equals_a_full_recompute(self, store: StatsStore) -> None:
        """Differential: random snapshots adding and deleting data files (size, rows) and
        delete files (bytes, rows), applied one by one, end exactly where a full scan of the
        final file lists does: sizes, rows, delete files, their bytes and deleted rows."""
        rng = random.Random(11)
        files: dict[str, list[tuple[int, int]]] = {}
        deletes: dict[str, list[tuple[int, int]]] = {}
        full(store, 1)
        for snap in range(2, 80):
            deltas: dict[str, PartitionDelta] = {}
            for _ in range(rng.randrange(1, 5)):
                key = f"p={rng.randrange(6)}"
                d = deltas.setdefault(key, PartitionDelta())
                live, dels = files.setdefault(key, []), deletes.setdefault(key, [])
                roll = rng.random()
                # (a partition's stats go when its last data file does: keep one while it
                # has delete files, or their removal would be out of step: a full scan)
                if (len(live) > 1 or (live and not dels)) and roll < 0.3:
                    size, rows = live.pop(rng.randrange(len(live)))
                    d.deleted.append(size)
                    d.data_rows -= rows
                elif live and roll < 0.45:  # a delete file comes (deletes need data)
                    dels.append((rng.randrange(100, 5000), rng.randrange(1, 50)))
                    d.added_deletes += 1
                    d.delete_bytes += dels[-1][0]
                    d.deleted_rows += dels[-1][1]
                elif dels and roll < 0.55:  # a delete file goes (compacted)
                    nbytes, rows = dels.pop(rng.randrange(len(dels)))
                    d.removed_deletes += 1
                    d.delete_bytes -= nbytes
                    d.deleted_rows -= rows
                else:
                    size = rng.choice([1, 7, 999, 1000, 1001, 5000, rng.randrange(1, 10**12)])
                    rows = rng.randrange(0, 10**6)
                    d.added.append(size)
                    d.data_rows += rows
                    live.append((size, rows))
            assert store.apply(T, snap - 1, snap, TARGET, deltas, T0) is not None
            if rng.random() < 0.2:  # a replayed event is harmless
                assert store.apply(T, snap - 1, snap, TARGET, deltas, T0) is None
        reference = {
            k: stats_from_sizes(
                [size for size, _ in v],
                TARGET,
                len(deletes[k]),
                (
                    sum(r for _, r in v),
                    sum(b for b, _ in deletes[k]),
                    sum(r for _, r in deletes[k]),
                ),
            )
            for k, v in files.items()
            if v
        }
        assert store.partitions(T) == reference
        assert any(p.delete_files for p in reference.values())  # the fixture has deletes

    # ---- chains: every snapshot since the last pass in one transaction --------------------
    def test_a_chain_ends_where_one_by_one_does(self, store: StatsStore) -> None:
        """Differential: the same random chain applied whole to one table and snapshot by
        snapshot to another gives the same stats, counters and touched partitions."""
        rng = random.Random(5)
        files: dict[str, list[int]] = {"p=0": [3, 2000]}
        start = {"p=0": stats_from_sizes(files["p=0"], TARGET)}
        store.replace(T, 1, TARGET, start, T0)
        store.replace("db.u", 1, TARGET, start, T0)
        steps: list[tuple[int, dict[str, PartitionDelta]]] = []
        for snap in range(2, 40):
            deltas: dict[str, PartitionDelta] = {}
            for _ in range(rng.randrange(1, 4)):
                key = f"p={rng.randrange(4)}"
                d = deltas.setdefault(key, PartitionDelta())
                live = files.setdefault(key, [])
                if live and rng.random() < 0.45:  # partitions empty and come back
                    d.deleted.append(live.pop(rng.randrange(len(live))))
                else:
                    size = rng.choice([1, 999, 1000, rng.randrange(1, 10**12)])
                    d.added.append(size)
                    live.append(size)
            steps.append((snap, deltas))
        one_by_one: dict[str, PartitionStats] = {}
        for snap, deltas in steps:
            got = store.apply("db.u", snap - 1, snap, TARGET, deltas, T0)
            assert got is not None
            one_by_one.update(got)
        *earlier, (last, deltas) = steps
        assert store.apply(T, 1, last, TARGET, deltas, T0, earlier) == one_by_one
        reference = {k: stats_from_sizes(v, TARGET) for k, v in files.items() if v}
        assert store.partitions(T) == store.partitions("db.u") == reference
        assert store.last_applied(T) == store.last_applied("db.u") == 39
        assert self.counters()["snapshots_applied"] == 2 * len(steps)

    def test_a_chain_goes_on_from_where_another_decider_stopped(self, store: StatsStore) -> None:
        full(store, 1, {"a": stats_from_sizes([100], TARGET)})
        steps = [(s, {"a": PartitionDelta(added=[s])}) for s in (2, 3, 4)]
        assert store.apply(T, 1, 2, TARGET, steps[0][1], T0) is not None  # the other one
        got = store.apply(T, 1, 4, TARGET, steps[2][1], T0, steps[:2])
        assert got == {"a": stats_from_sizes([100, 2, 3, 4], TARGET)}
        assert store.apply(T, 1, 4, TARGET, steps[2][1], T0, steps[:2]) is None  # replay
        assert store.partitions(T) == {"a": stats_from_sizes([100, 2, 3, 4], TARGET)}
        assert store.last_applied(T) == 4
        assert self.counters()["snapshots_applied"] == 3

    def test_a_chain_is_compare_and_set_and_all_or_nothing(self, store: StatsStore) -> None:
        full(store, 1, {"a": stats_from_sizes([100], TARGET)})
        good = [(2, {"a": PartitionDelta(added=[1])})]
        with pytest.raises(GapError, match="not the parent"):
            store.apply(T, 5, 7, TARGET, {"a": PartitionDelta(added=[1])}, T0, good)
        with pytest.raises(GapError, match="target changed"):
            store.apply(T, 1, 3, TARGET * 2, {}, T0, good)
        with pytest.raises(GapError, match="out of step"):  # the last step is wrong
            store.apply(T, 1, 3, TARGET, {"z": PartitionDelta(deleted=[1])}, T0, good)
        assert store.partitions(T) == {"a": stats_from_sizes([100], TARGET)}  # untouched
        assert store.last_applied(T) == 1 and "snapshots_applied" not in self.counters()
