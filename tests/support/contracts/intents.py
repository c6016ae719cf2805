"""The write-intents contract suite: recorded only under the lease, abandoned once the lease
is gone.

``IntentsContract`` is not collected by itself; ``TestMemoryIntents`` in
``tests/unit/state/test_intents.py`` runs it on the in-memory queue,
``tests/redis/test_intents_redis.py`` on Redis.
"""

from __future__ import annotations

from typing import Any

from icefloe.state.intents import Intent, Intents, sweep
from icefloe.state.queue import ActionItem, PriorityQueue

T0 = 1_790_000_000.0


def leased_queue(q: PriorityQueue) -> Any:
    q.enqueue(ActionItem.new("db.t", "p=1", "merge", 1, 100, 1.0, T0), T0)
    q.dispatch("db.t")
    lease = q.dequeue(T0, 30)
    assert lease is not None
    return lease


class IntentsContract:
    """Runs against every implementation: subclasses give a queue and its intents."""

    __test__ = False

    def make(self) -> tuple[PriorityQueue, Intents]:
        raise NotImplementedError

    def test_only_the_lease_holder_records(self) -> None:
        q, intents = self.make()
        lease = leased_queue(q)
        assert intents.record(lease.item.id, "not-the-token", "db.t", T0, ["/a"]) is False
        assert intents.record(lease.item.id, lease.token, "db.t", T0, ["/a"], []) is True
        assert intents.record(lease.item.id, lease.token, "db.t", T0 + 5, [], ["/d/"]) is True
        assert intents.abandoned() == []  # the lease is still held
        q.nack(lease.item.id, lease.token, "boom", T0 + 6)
        [gone] = intents.abandoned()
        assert (gone.paths, gone.prefixes, gone.started) == (("/a",), ("/d/",), T0)
        assert intents.abandoned("another:item") == []
        # the lease is gone: nothing more may be recorded under it
        assert intents.record(lease.item.id, lease.token, "db.t", T0 + 7, ["/b"]) is False

    def test_an_expired_lease_abandons_and_forget_removes(self) -> None:
        q, intents = self.make()
        lease = leased_queue(q)
        intents.record(lease.item.id, lease.token, "db.t", T0, [], [])
        q.reap(T0 + 31)
        [gone] = intents.abandoned(lease.item.id)
        assert gone.paths == () and gone.prefixes == ()
        intents.forget(lease.token)
        assert intents.abandoned() == []

    def test_sweep_keeps_an_intent_whose_clean_up_failed(self) -> None:
        q, intents = self.make()
        lease = leased_queue(q)
        intents.record(lease.item.id, lease.token, "db.t", T0, ["/a", "/b"])
        q.nack(lease.item.id, lease.token, "boom", T0)

        def broken(intent: Intent) -> int:
            raise OSError("catalog down")

        assert sweep(intents, broken) == 0
        assert len(intents.abandoned()) == 1  # kept for the next sweep
        assert sweep(intents, lambda i: len(i.paths)) == 2
        assert intents.abandoned() == []

    def test_an_adhoc_run_records_under_its_own_deadline(self) -> None:
        """``icefloe optimize`` (icefloe.service.actor.adhoc): no queue item, a deadline it
        renews."""
        q, intents = self.make()
        adhoc: Any = intents
        assert adhoc.record_adhoc("run-1", "db.t", T0, ["/a"], []) is False  # no lease yet
        adhoc.begin_adhoc("run-1", T0, 30)
        assert adhoc.record_adhoc("run-1", "db.t", T0, ["/a"], []) is True
        assert adhoc.record_adhoc("run-1", "db.t", T0 + 1, [], ["/d/"]) is True
        assert intents.abandoned(now=T0 + 29) == []
        assert adhoc.renew_adhoc("run-1", T0 + 20, 30) is True  # now until T0 + 50
        assert intents.abandoned(now=T0 + 49) == []
        [gone] = intents.abandoned(now=T0 + 51)
        assert (gone.item, gone.paths, gone.prefixes, gone.started) == (
            "adhoc:run-1",
            ("/a",),
            ("/d/",),
            T0,
        )
        # expired: it never comes back to life, and writes nothing more
        assert adhoc.renew_adhoc("run-1", T0 + 51, 30) is False
        assert adhoc.record_adhoc("run-1", "db.t", T0 + 51, ["/b"], []) is False
        assert sweep(intents, lambda i: len(i.paths), "adhoc:run-1") == 1
        assert intents.abandoned(now=T0 + 99) == []
        adhoc.begin_adhoc("run-2", T0, 30)
        adhoc.end_adhoc("run-2")  # a run that failed: abandoned at once (none recorded)
        assert adhoc.renew_adhoc("run-2", T0, 30) is False
