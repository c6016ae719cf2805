"""The read-statistics store contract suite: every :class:`icefloe.state.reads.ReadStore`
runs these.

``ReadsContract`` is not collected by itself; ``tests/unit/state/test_reads.py`` runs it in
memory, ``tests/redis/test_reads_redis.py`` on Redis and a Redis Cluster. A test class
supplies ``make_store`` and ``append`` (what a reader's reporter does: one stream entry)
and ``drop`` (a reporter's dropped count).
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from icefloe.optimizer.reads import table_of
from icefloe.state.reads import ReadStore

MANAGED = {"db.a", "db.b"}
HALF = 24 * 3600.0
T0_MS = 1_790_000_000_000


def resolve(name: str) -> str | None:
    return table_of(name, MANAGED)


def entry(table: str, at_ms: int = T0_MS, files: int = 10, **extra: str) -> dict[str, str]:
    return {
        "table": table,
        "snapshot": "1",
        "at": str(at_ms),
        "files": str(files),
        "skipped_files": "5",
        "bytes": str(files * 1000),
        "planning_ms": "3",
        "filter_columns": "day:eq",
        "projected": "id,day",
        "pins": "[]",
        **extra,
    }


class ReadsContract:
    __test__ = False

    def make_store(self) -> ReadStore:
        raise NotImplementedError

    def append(self, store: ReadStore, fields: Mapping[str, str]) -> None:
        raise NotImplementedError

    def drop(self, store: ReadStore, n: int) -> None:
        raise NotImplementedError

    @pytest.fixture
    def store(self) -> ReadStore:
        return self.make_store()

    def test_nothing_read(self, store: ReadStore) -> None:
        assert store.stats() == {} and store.lag() == 0
        assert store.fold(resolve, HALF, 100).reports == 0
        assert store.counters() == dict.fromkeys(
            ("folded", "own", "unmanaged", "malformed", "dropped"), 0
        )

    def test_reports_fold_into_each_tables_statistics_once(self, store: ReadStore) -> None:
        for i in range(3):
            self.append(store, entry("lake.db.a", T0_MS + i * 1000, files=10 * (i + 1)))
        self.append(store, entry("db.b"))
        assert store.lag() == 4
        folded = store.fold(resolve, HALF, 100)
        assert folded.tables == {"db.a": 3, "db.b": 1} and store.lag() == 0
        got = store.stats()
        assert set(got) == {"db.a", "db.b"}
        a = got["db.a"]
        assert a.scans == 3 and a.last_read == (T0_MS + 2000) / 1000
        assert a.per_scan(a.files) == pytest.approx(20, rel=1e-4)
        assert a.top_filter_columns() == ["day"] and a.top_projected() == ["day", "id"]
        assert store.fold(resolve, HALF, 100).reports == 0  # nothing folded twice
        assert store.stats() == got
        assert store.stats(["db.b", "db.none"]) == {"db.b": got["db.b"]}

    def test_a_fold_takes_at_most_its_limit_and_the_next_one_the_rest(
        self, store: ReadStore
    ) -> None:
        for i in range(5):
            self.append(store, entry("db.a", T0_MS + i))
        assert store.fold(resolve, HALF, 2).reports == 2 and store.lag() == 3
        assert store.fold(resolve, HALF, 10).reports == 3 and store.lag() == 0
        assert store.stats()["db.a"].scans == 5

    def test_own_unmanaged_and_malformed_reports_are_counted_apart(self, store: ReadStore) -> None:
        self.append(store, entry("lake.db.a", own="1"))
        self.append(store, entry("lake.db.unmanaged"))
        self.append(store, entry("db.a", files="-3"))  # type: ignore[arg-type]
        self.append(store, {"table": "db.a"})  # no time
        self.drop(store, 7)
        folded = store.fold(resolve, HALF, 100)
        assert (folded.own, folded.unmanaged, folded.malformed) == (1, 1, 2)
        assert folded.tables == {} and store.stats() == {} and store.lag() == 0
        assert store.counters() == {
            "folded": 0,
            "own": 1,
            "unmanaged": 1,
            "malformed": 2,
            "dropped": 7,
        }

    def test_statistics_add_up_across_folds(self, store: ReadStore) -> None:
        self.append(store, entry("db.a", T0_MS))
        store.fold(resolve, HALF, 100)
        self.append(store, entry("db.a", T0_MS + 24 * 3600 * 1000))  # a half-life later
        store.fold(resolve, HALF, 100)
        a = store.stats()["db.a"]
        assert a.scans == 2 and a.weight == pytest.approx(1.5)
        assert store.counters()["folded"] == 2
