"""Ad-hoc runs' write intents (icefloe.service.actor.adhoc) on the in-memory intents: recorded under
a lease of the run's own, forgotten when the run ends well, swept at once when it fails,
left to the decider's sweep when it is killed or the table cannot be read."""

from __future__ import annotations

from typing import Any

import pytest

from icefloe.base.errors import ServiceUnavailable
from icefloe.jobs.rewrite.guard import NO_GUARD
from icefloe.service.actor.adhoc import AdhocIntents, AdhocLeaseLost, adhoc_run
from icefloe.state.intents import sweep
from icefloe.state.intents.memory import MemoryIntents

pytestmark = pytest.mark.unit


def memory() -> MemoryIntents:
    return MemoryIntents(holder=lambda item: None)


def test_a_run_that_ends_well_forgets_its_record() -> None:
    leases, cleaned = memory(), []
    with adhoc_run(AdhocIntents(leases, cleaned.append, 30), "db.t") as guard:
        guard.before_write(["/w/a.parquet"], ["/w/icefloe-x/"])
        (intent,) = leases.all()
        assert intent.paths == ("/w/a.parquet",) and intent.prefixes == ("/w/icefloe-x/",)
        assert intent.table == "db.t" and intent.item.startswith("adhoc:")
        guard.before_commit()
        assert leases.abandoned() == []  # alive: its files are not anyone's to delete
    assert leases.all() == [] and leases.deadlines == {} and cleaned == []


def test_a_failed_run_has_its_files_swept_at_once() -> None:
    leases, cleaned = memory(), []

    def clean(intent: Any) -> int:
        cleaned.append(intent)
        return len(intent.paths)

    with pytest.raises(RuntimeError), adhoc_run(AdhocIntents(leases, clean, 30), "db.t") as guard:
        guard.before_write(["/w/a.parquet", "/w/b.parquet"], [])
        raise RuntimeError("S3 went away mid-write")
    assert [i.paths for i in cleaned] == [("/w/a.parquet", "/w/b.parquet")]
    assert leases.all() == [] and leases.deadlines == {}


def test_a_failed_run_whose_table_cannot_be_read_leaves_its_record_to_the_sweep() -> None:
    """The outcome of a lost commit reply stays unknown until the table is read: nothing
    is deleted, the record waits (abandoned) for the decider's sweep."""
    leases = memory()

    def unreadable(intent: Any) -> int:
        raise OSError("catalog down")

    with pytest.raises(RuntimeError), adhoc_run(AdhocIntents(leases, unreadable, 30), "db.t") as g:
        g.before_write(["/w/a.parquet"], [])
        raise RuntimeError("commit outcome unknown")
    (left,) = leases.abandoned()
    assert left.paths == ("/w/a.parquet",)
    assert sweep(leases, lambda intent: 1) == 1 and leases.all() == []


def test_a_killed_run_is_abandoned_once_its_lease_passes() -> None:
    leases = memory()
    run = adhoc_run(AdhocIntents(leases, lambda i: 0, 30), "db.t")
    guard = run.__enter__()  # never exits: the process was killed
    guard.before_write(["/w/a.parquet"], [])
    guard.stop()  # (its renewer dies with it)
    token = guard.token  # type: ignore[attr-defined]
    deadline = leases.deadlines[token]
    assert leases.abandoned(now=deadline - 1) == []
    assert [i.token for i in leases.abandoned(now=deadline + 1)] == [token]


def test_an_expired_lease_neither_writes_nor_commits() -> None:
    leases = memory()
    with pytest.raises(AdhocLeaseLost), adhoc_run(AdhocIntents(leases, lambda i: 0, 30), "t") as g:
        leases.deadlines[g.token] = 0.0  # type: ignore[attr-defined]
        with pytest.raises(AdhocLeaseLost, match="nothing committed"):
            g.before_commit()
        g.before_write(["/w/a.parquet"], [])


def test_redis_away_at_the_start_runs_unguarded() -> None:
    class Away(MemoryIntents):
        def begin_adhoc(self, token: str, now: float, seconds: float) -> None:
            raise ServiceUnavailable("Redis at 127.0.0.1:1 unreachable")

    with adhoc_run(AdhocIntents(Away(holder=lambda i: None), lambda i: 0, 30), "t") as guard:
        assert guard is NO_GUARD
    with adhoc_run(None, "t") as guard:
        assert guard is NO_GUARD
