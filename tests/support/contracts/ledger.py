"""The ledger contract suite: every :class:`icefloe.state.ledger.Ledger` runs these.

``LedgerContract`` is not collected by itself; ``tests/unit/state/test_ledger.py`` runs it
on the in-memory ledger, ``tests/redis/test_ledger_redis.py`` on Redis and a Redis Cluster.
"""

from __future__ import annotations

import pytest

from icefloe.state.ledger import Ledger, stream_order

T0 = 1_790_000_000.0


class LedgerContract:
    __test__ = False

    def make_ledger(self) -> Ledger:
        raise NotImplementedError

    @pytest.fixture
    def ledger(self) -> Ledger:
        return self.make_ledger()

    def test_an_empty_ledger(self, ledger: Ledger) -> None:
        assert ledger.counters() == {} and ledger.recent(20) == []
        assert ledger.scheduler_state() is None and ledger.actors() == {}

    def test_counters_add_up_and_zeros_change_nothing(self, ledger: Ledger) -> None:
        ledger.count({"dispatches": 2, "file_events": 0})
        ledger.count({"dispatches": 3})
        ledger.count({})
        assert ledger.counters() == {"dispatches": 5}

    def test_the_scheduler_state_round_trips(self, ledger: Ledger) -> None:
        state = {"deficits": {"db.t": 12}, "rotation": ["db.t"]}
        ledger.save_scheduler_state(state)
        assert ledger.scheduler_state() == state
        ledger.save_scheduler_state({"deficits": {}})
        assert ledger.scheduler_state() == {"deficits": {}}

    def test_recorded_actions_are_newest_first_capped_and_counted(self, ledger: Ledger) -> None:
        batch = {"items": 12, "partitions_rewritten": 12}
        ledger.record_action({"id": "a", "ok": True, "bytes_rewritten": 123})
        ledger.record_action({"id": "b", "ok": False, "seconds": 6.25, "orphans_deleted": 2})
        entry = {"id": "c", "ok": True, "snapshot_ids": [5, 6], "batch": batch}
        ledger.record_action(entry | {"partitions_rewritten": 12}, cap=2)
        assert [r["id"] for r in ledger.recent(20)] == ["c", "b"]  # capped at 2
        assert ledger.recent(1) == [entry | {"partitions_rewritten": 12}]
        assert ledger.counters() == {
            "actions_ok": 2,
            "actions_failed": 1,
            "bytes_rewritten": 123,
            "orphans_deleted": 2,
            "action_ms": 6250,
            "commits": 2,
            "partitions_rewritten": 12,
            "batches": 1,
            "batch_items": 12,
        }

    def test_heartbeats_are_kept_and_forgotten(self, ledger: Ledger) -> None:
        ledger.heartbeat("a1", T0)
        ledger.heartbeat("a2", T0 + 5)
        ledger.heartbeat("a1", T0 + 7)
        assert ledger.actors() == {"a1": T0 + 7, "a2": T0 + 5}
        ledger.forget_actor("a1")
        ledger.forget_actor("never-seen")
        assert ledger.actors() == {"a2": T0 + 5}

    def test_the_launch_guard_lets_one_caller_launch(self, ledger: Ledger) -> None:
        assert ledger.claim_launch(T0, 60)
        assert not ledger.claim_launch(T0 + 1, 60)

    def test_history_records_in_order_after_an_id_and_trimmed(self, ledger: Ledger) -> None:
        """The records the history table has yet to take: only with ``history``, oldest
        first, after a given id (exclusive), at most ``count``; trimmed up to an id."""
        ledger.record_action({"id": "x"})  # not for the history
        for name in ("a", "b", "c", "d"):
            ledger.record_action({"id": name, "ok": True}, history=True)
        records = ledger.history_after(None, 10)
        assert [e["id"] for _, e in records] == ["a", "b", "c", "d"]
        ids = [rid for rid, _ in records]
        assert ids == sorted(ids, key=stream_order) and len(set(ids)) == 4
        assert [e["id"] for _, e in ledger.history_after(ids[1], 10)] == ["c", "d"]
        assert [e["id"] for _, e in ledger.history_after(ids[0], 2)] == ["b", "c"]
        assert ledger.history_after(ids[3], 10) == []
        ledger.trim_history(ids[2])  # the table holds a..c: b and older may go
        assert [e["id"] for _, e in ledger.history_after(None, 10)] in (["c", "d"], ["d"])
        assert [e["id"] for _, e in ledger.history_after(ids[2], 10)] == ["d"]
        assert [r["id"] for r in ledger.recent(10)] == ["d", "c", "b", "a", "x"]
