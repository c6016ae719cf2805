"""The catalog database locked by another process, or missing, under ``plan``, ``optimize``,
``tables`` and ``decide --once``.

The catalog here is a SQLite file of its own (no Spark needed: every command must stop
before a JVM starts). Locked: another connection holds ``BEGIN EXCLUSIVE`` for the whole
run. Missing: the file was deleted while its warehouse holds data (or ``catalog.uri``
names a file that is not there: the same to icefloe); its folder cannot exist (a regular
file is in the way). Expected: one ``icefloe: error:`` line, exit 1, nothing written (no table
changed, no file added to the warehouse, no catalog file created, no Redis key).

Then the lock at the worst moment: taken right before a rewrite's commit (the session
catalog, Spark's JDBC side). Expected: a one-line error, nothing committed, and none of
the rewrite's new files left behind, both for ``optimize_table`` (what ``icefloe
optimize`` runs) and for an actor, whose attempt is then retried and done once.
"""

from __future__ import annotations

import shutil
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from icefloe.base.catalog import load_catalog
from icefloe.base.config import build_config
from icefloe.base.errors import IcefloeError
from icefloe.jobs.data.optimize import optimize_table
from icefloe.jobs.rewrite.exact import Collaborators
from icefloe.service.actor.loop import run_actor
from icefloe.service.decider.wiring import open_decider
from icefloe.state.queue.redis import RedisQueue
from tests.faults.checks import (
    current_snapshot_id,
    operations,
    table_data_files,
    unreferenced_data_files,
)
from tests.faults.conftest import fault_raw
from tests.faults.harness import DAYS, make_table, run_cli_parallel

pytestmark = [pytest.mark.faults, pytest.mark.redis]


def commands(table: str) -> list[tuple[str, ...]]:
    return [("plan", table), ("optimize", table), ("tables",), ("decide", "--once")]


def write_config(path: Path, raw: dict[str, Any], uri: str, warehouse: str = "") -> Path:
    catalog = {**raw["catalog"], "uri": uri}
    if warehouse:
        catalog["warehouse"] = warehouse
    path.write_text(yaml.safe_dump({**raw, "catalog": catalog}))
    return path


def test_locked_or_missing_catalog_is_one_line_and_writes_nothing(
    redis_server: Any, ledger: Any, tmp_path: Path
) -> None:
    home = tmp_path / "lake"
    namespace = "cat_faults"
    raw = fault_raw(home, redis_server, namespace)
    catalog = load_catalog(build_config(raw, home=home))
    catalog.create_namespace(namespace)
    name = f"{namespace}.events"
    table = make_table(catalog, name, days=DAYS[:2], files_per_day=3)
    before = ledger.contents(table)
    snapshot, metadata = current_snapshot_id(table), table.metadata_location
    files = table_data_files(table)
    db = home / "catalog.db"
    real_uri = raw["catalog"]["uri"]
    assert real_uri == f"sqlite:///{db}"

    # missing: a catalog file deleted while its warehouse holds data, and one whose folder
    # cannot exist (a regular file is in the way)
    copy = home / "catalog-copy.db"
    shutil.copy(db, copy)
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the catalog's folder should be\n")
    configs = {
        "locked": write_config(tmp_path / "locked.yaml", raw, real_uri),
        "deleted": write_config(tmp_path / "deleted.yaml", raw, f"sqlite:///{copy}"),
        "blocked": write_config(
            tmp_path / "blocked.yaml", raw, f"sqlite:///{blocked}/c.db", f"file://{blocked}/wh"
        ),
    }
    copy.unlink()
    ledger.fault("catalog database deleted")
    ledger.fault("catalog folder cannot exist")
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # readers and writers wait, then give up
    ledger.fault("catalog database locked")
    try:  # all at once: the locked ones wait on SQLite's busy timeout meanwhile
        batch = [
            ("--config", str(c), *args)
            for key, c in configs.items()
            for args in (commands(name) if key != "blocked" else [("tables",), ("plan", name)])
        ]
        runs = run_cli_parallel(configs["locked"], batch)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    expected = {
        str(configs["locked"]): "database is locked",
        str(configs["deleted"]): "is missing but the warehouse",
        str(configs["blocked"]): "cannot open catalog",
    }
    for run in runs:
        ledger.cli_error(run, 1, match=expected[run.args[1]])

    assert not copy.exists() and not (home / "catalog.db-journal").exists()
    assert blocked.is_file()
    table = catalog.load_table(name)
    assert (current_snapshot_id(table), table.metadata_location) == (snapshot, metadata)
    assert table_data_files(table) == files
    ledger.assert_intact(table, before)
    assert not redis_server.client().keys("*"), "a command wrote to Redis"


class CommitLock:
    """``before_commit`` for a rewrite: another connection takes ``BEGIN EXCLUSIVE`` on
    the catalog database right before the (first) commit; ``release()`` ends it."""

    def __init__(self, db: Path, ledger: Any) -> None:
        self.db, self.ledger = db, ledger
        self.holder: sqlite3.Connection | None = None

    def __call__(self, rewrite: Any, results: Any) -> None:
        if self.holder is None:
            self.holder = sqlite3.connect(self.db, isolation_level=None)
            self.holder.execute("BEGIN EXCLUSIVE")
            self.ledger.fault("catalog database locked at the commit")

    def release(self) -> None:
        if self.holder is not None:
            self.holder.execute("ROLLBACK")
            self.holder.close()


@pytest.mark.spark
@pytest.mark.integration
@pytest.mark.parametrize("days", [1, 2])
def test_catalog_locked_at_the_commit_of_optimize(
    spark: Any, fault_env: Any, ledger: Any, days: int
) -> None:
    """What ``icefloe optimize`` runs: the commit fails in one line and nothing is committed.
    The catalog stays locked, so whether the commit landed cannot be known: the new files
    are kept (they might be live, as Iceberg keeps them) and the error says how many. Once
    the catalog is back they are exactly the unreferenced files, which the orphan cleaner
    (what an actor's retry or the decider runs) then deletes. With two partitions the
    commit carries both: no clean-up path may delete what the committer kept (#28.2)."""
    from icefloe.jobs.maintenance.orphans import remove_unreferenced

    env = fault_env
    name = f"{env.namespace}.events"
    table = make_table(env.catalog, name, days=DAYS[:days], files_per_day=3)
    before = ledger.contents(table)
    snapshot = current_snapshot_id(table)
    started = time.time()
    lock = CommitLock(env.home / "catalog.db", ledger)
    try:
        with pytest.raises(IcefloeError) as failure:
            optimize_table(spark, env.cfg, name, collaborators=Collaborators(before_commit=lock))
    finally:
        lock.release()
    message = str(failure.value)
    assert lock.holder is not None and "\n" not in message
    ledger.clean(message)
    table = env.catalog.load_table(name)
    assert current_snapshot_id(table) == snapshot
    kept = unreferenced_data_files(table)
    assert kept and f"its {len(kept)} new file(s) were kept" in message, message
    assert ledger.contents(table) == before
    assert len(remove_unreferenced(table, kept, [], started).deleted) == len(kept)
    ledger.assert_intact(table, before)


@pytest.mark.spark
@pytest.mark.integration
def test_catalog_locked_at_the_commit_of_an_actor(spark: Any, fault_env: Any, ledger: Any) -> None:
    """The actor's attempt fails and is retried; its files are gone by the decider's next
    pass (the attempt's own clean-up right after the failure meets the lock too)."""
    env = fault_env
    name = f"{env.namespace}.events"
    table = make_table(env.catalog, name, days=DAYS[:1], files_per_day=3)
    before = ledger.contents(table)
    client = env.client()
    decider = open_decider(env.cfg, env.catalog, client)
    assert decider.step(dispatch_all=True).dispatched == 1
    lock = CommitLock(env.home / "catalog.db", ledger)

    def runner(item: Any, guard: Any) -> dict[str, Any]:  # spark_runner, lock injected
        report = optimize_table(
            spark,
            env.cfg,
            item.table,
            keys=[item.partition],
            collaborators=Collaborators(guard=guard, before_commit=lock),
        )
        return dict(report.to_dict())

    try:
        first = run_actor(env.cfg, max_actions=1, idle_exit=0, spark=spark, runner=runner)
    finally:
        lock.release()
    assert (first.done, first.failed) == (0, 1), first
    # the attempt's own clean-up met the lock too; the decider's next pass sweeps
    step = decider.step(dispatch_all=True)
    assert step.dispatched == 1  # the nacked item, again
    ledger.assert_intact(env.catalog.load_table(name), before)
    retry = run_actor(env.cfg, max_actions=1, idle_exit=0, spark=spark)
    assert (retry.done, retry.failed) == (1, 0), retry
    table = env.catalog.load_table(name)
    assert operations(table).count("replace") == 1
    ledger.assert_intact(table, before)
    depth = RedisQueue(client, env.keys).depth()
    assert depth == {"pending": 0, "ready": 0, "inflight": 0, "dead": 0}, depth
