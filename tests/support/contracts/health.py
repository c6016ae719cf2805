"""The metadata-health store contract suite: every :class:`icefloe.state.health.HealthStore`
runs these.

``HealthContract`` is not collected by itself; ``tests/unit/state/test_health.py`` runs it
in memory, ``tests/redis/test_health_redis.py`` on Redis and a Redis Cluster.
"""

from __future__ import annotations

import dataclasses

import pytest

from icefloe.optimizer.maintenance_rules import MetadataHealth
from icefloe.state.health import HealthStore

T = "db.t"
HEALTH = MetadataHealth.of(7, [100, 2000, 50], 1000, [1, 2, 3], 4096, 1, (10, 2, 3))


class HealthContract:
    __test__ = False

    def make_store(self) -> HealthStore:
        raise NotImplementedError

    @pytest.fixture
    def store(self) -> HealthStore:
        return self.make_store()

    def test_nothing_stored(self, store: HealthStore) -> None:
        assert store.load(T) is None
        assert store.last_runs(T) == {} and store.holds(T) == {}

    def test_the_stored_health_is_summarized(self, store: HealthStore) -> None:
        store.save(T, HEALTH)
        got = store.load(T)
        assert got is not None and store.load("db.other") is None
        # the manifests' small bytes and files are not kept (no rule reads them; older
        # readers expect four numbers)
        manifests = dataclasses.replace(HEALTH.manifests, small_bytes=0, small_files=0)
        assert got["snapshot"] == 7 and got["manifest_stats"] == manifests
        assert got["manifests"] == 3 and got["manifests_undersized"] == 2
        assert got["snapshots"] == 3 and got["oldest_snapshot_ms"] == 1
        assert got["expirable_snapshots"] == 2 and got["metadata_bytes"] == 4096
        assert (got["data_rows"], got["delete_files"], got["deleted_rows"]) == (10, 2, 3)

    def test_last_runs_and_only_if_unset(self, store: HealthStore) -> None:
        store.mark_run(T, "remove_orphan_files", 5, only_if_unset=True)  # first sighting
        store.mark_run(T, "remove_orphan_files", 9, only_if_unset=True)  # kept
        store.mark_run(T, "expire_snapshots", 6)
        store.mark_run(T, "expire_snapshots", 8)  # overwritten
        store.save(T, HEALTH)  # the health beside them leaves them alone
        assert store.last_runs(T) == {"remove_orphan_files": 5, "expire_snapshots": 8}
        assert store.load(T) is not None and store.holds(T) == {}

    def test_holds_are_kept_and_lifted(self, store: HealthStore) -> None:
        store.mark_hold(T, "remove_orphan_files", "location shared with db.u")
        store.mark_hold(T, "expire_snapshots", "why not")
        store.mark_hold(T, "expire_snapshots", None)
        store.mark_hold(T, "rewrite_manifests", None)  # never held: nothing happens
        assert store.holds(T) == {"remove_orphan_files": "location shared with db.u"}
        assert store.last_runs(T) == {} and store.load(T) is None

    def test_records_are_kept_replaced_read_at_once_and_dropped(self, store: HealthStore) -> None:
        assert store.records() == {} and store.records([T]) == {}
        store.save_record(T, {"at": 1.0, "files": 3, "verdicts": {"k": {"state": "act"}}})
        store.save_record("db.u", {"at": 2.0, "error": "gone"})
        store.save_record(T, {"at": 3.0, "files": 4, "verdicts": {}})  # replaced
        assert store.records() == {
            T: {"at": 3.0, "files": 4, "verdicts": {}},
            "db.u": {"at": 2.0, "error": "gone"},
        }
        assert store.records([T], verdicts=False) == {T: {"at": 3.0, "files": 4}}
        many = [f"db.t{i}" for i in range(2500)]  # more than one call's worth
        for name in many[::500]:
            store.save_record(name, {"at": 0.0})
        assert sorted(store.records([*many, "db.none"])) == sorted(many[::500])
        store.drop_records([T, "db.none"])
        assert set(store.records()) == {"db.u", *many[::500]}

    def test_ranks_are_kept_beside_their_records_replaced_and_dropped(
        self, store: HealthStore
    ) -> None:
        assert store.ranks([T]) == {}
        store.save_record(T, {"at": 1.0, "files": 3}, {"at": 1.0, "score": 80.5})
        store.save_record("db.u", {"at": 2.0, "error": "gone"}, {"at": 2.0, "error": True})
        store.save_record("db.v", {"at": 2.0})  # no rank: ranked from the record
        assert store.ranks([T, "db.u", "db.v", "db.none"]) == {
            T: {"at": 1.0, "score": 80.5},
            "db.u": {"at": 2.0, "error": True},
        }
        store.save_record(T, {"at": 3.0, "files": 4}, {"at": 3.0, "score": 90.0})  # replaced
        store.save_record("db.u", {"at": 4.0})  # a record without a rank drops the old one
        assert store.ranks([T, "db.u"]) == {T: {"at": 3.0, "score": 90.0}}
        many = [f"db.t{i}" for i in range(2500)]  # more than one call's worth
        for name in many[::500]:
            store.save_record(name, {"at": 0.0}, {"at": 0.0, "score": 1.0})
        assert sorted(store.ranks([*many, T])) == sorted([*many[::500], T])
        store.drop_records([T])
        assert store.ranks([T]) == {} and store.records([T]) == {}

    def test_the_managed_list_is_kept(self, store: HealthStore) -> None:
        assert store.managed() is None
        store.save_managed(["db.b", "db.a"])
        assert store.managed() == ["db.a", "db.b"]
        store.save_managed([])
        assert store.managed() == []
