"""The durable history under a crash: a flusher killed ``-9`` between its commit and its
trim neither loses nor doubles a record, and a Redis ``FLUSHALL`` afterwards loses none of
what the table took (the private fault Redis; the run's catalog)."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from icefloe.jobs.history import table as history
from icefloe.jobs.history.flush import flush
from icefloe.state.ledger.redis import RedisLedger
from tests.faults.conftest import FaultEnv, write_env
from tests.support.config import REPO

pytestmark = [pytest.mark.faults, pytest.mark.redis, pytest.mark.integration]


def _env(fault_env: FaultEnv) -> FaultEnv:
    """The fault env with a history table of its own (in the test's namespace)."""
    raw = {**fault_env.raw, "history": {"table": f"{fault_env.namespace}.action_history"}}
    return write_env(raw, fault_env)


def test_a_flusher_killed_between_commit_and_trim(fault_env: FaultEnv, ledger: Any) -> None:
    env = _env(fault_env)
    book = RedisLedger(env.client(), env.keys)
    for i in range(5):
        entry = {"id": f"i{i}", "table": "db.t", "action": "merge", "ok": True, "seconds": 1}
        book.record_action(entry | {"finished_at": 1_800_000_000.0 + i}, history=True)
    ledger.fault("kill -9 of the history flush after its commit, before its trim")
    run = subprocess.run(
        [sys.executable, "-m", "tests.faults.kill_flusher", str(env.config_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == -9, run.stdout + run.stderr
    table = env.catalog.load_table(env.cfg.history.table)
    assert [r["item_id"] for r in history.read(table)] == [f"i{i}" for i in range(5)]
    assert len(book.history_after(None, 10)) == 5  # not trimmed: the kill came first

    for i in range(5, 7):  # the next flush: only what is new
        book.record_action({"id": f"i{i}", "table": "db.t", "ok": True}, history=True)
    assert flush(env.cfg, env.catalog, book, "d2") == 2
    table = env.catalog.load_table(env.cfg.history.table)
    rows = history.read(table)
    assert [r["item_id"] for r in rows] == [f"i{i}" for i in range(7)]  # each once, in order
    assert [r["decider_id"] for r in rows] == ["killed-decider"] * 5 + ["d2"] * 2
    assert len(table.snapshots()) == 2
    ledger.rows(len(rows))

    with env.client() as client:
        client.flushall()
    ledger.fault("Redis FLUSHALL after the flush")
    after = history.read(env.catalog.load_table(env.cfg.history.table))
    assert [r["item_id"] for r in after] == [f"i{i}" for i in range(7)]
    assert flush(env.cfg, env.catalog, book, "d2") == 0


def test_a_stalled_leader_resumes_after_another_flushed(fault_env: FaultEnv, ledger: Any) -> None:
    """#45.8: leader A reads the table and its batch, then stalls (a SIGSTOP, a slow
    catalog); leader B flushes the same records and trims. A's commit is refused and A
    reads the table's newest id again: each record once, in the table and in ``history``."""
    env = _env(fault_env)
    book = RedisLedger(env.client(), env.keys)
    for i in range(4):
        entry = {"id": f"i{i}", "table": "db.t", "action": "merge", "ok": True, "seconds": 1}
        book.record_action(entry | {"finished_at": 1_800_000_000.0 + i}, history=True)
    assert flush(env.cfg, env.catalog, book, "a") == 4  # the table exists, as A last saw it
    for i in range(4, 7):
        book.record_action({"id": f"i{i}", "table": "db.t", "ok": True}, history=True)
    real = book.history_after
    by_b: list[int] = []

    def read_then_stall(last_id: str | None, count: int) -> list[tuple[str, dict[str, Any]]]:
        batch = real(last_id, count)
        book.history_after = real  # type: ignore[method-assign]
        by_b.append(flush(env.cfg, env.catalog, RedisLedger(env.client(), env.keys), "b"))
        return batch

    book.history_after = read_then_stall  # type: ignore[method-assign]
    ledger.fault("a leader stalled between reading its batch and committing it")
    assert flush(env.cfg, env.catalog, book, "a") == 0 and by_b == [3]
    rows = history.read(env.catalog.load_table(env.cfg.history.table))
    assert [r["item_id"] for r in rows] == [f"i{i}" for i in range(7)]
    assert [r["decider_id"] for r in rows] == ["a"] * 4 + ["b"] * 3
    ledger.rows(len(rows))
