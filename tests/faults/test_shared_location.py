"""Orphan removal where another table's files lie (issue 28, item 3;
``icefloe.jobs.maintenance.sharing``).

Faults: a ``register_table`` clone of a table, then one more append to the original (the
clone's location holds files it does not reference); a table created inside another's
location; a table of the catalog whose metadata is gone (it cannot be checked); and a clone
registered *after* the decider scheduled orphan removal, before the actor runs it.

Expected: ``icefloe maintain T --action remove_orphan_files`` on each sharing table (and,
with the broken table, on any table) is one ``icefloe: error:`` line naming the other
table, exit 1, before Spark starts; the actor's attempt fails the same way. In every case
no file is deleted and every table keeps its rows.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from icefloe.service.actor.loop import run_actor
from icefloe.service.decider.wiring import open_decider
from icefloe.service.observe.status import gather
from tests.faults.checks import normalize_path
from tests.faults.conftest import write_env
from tests.faults.harness import DAYS, append_rows, make_table, run_cli

pytestmark = [pytest.mark.faults, pytest.mark.redis, pytest.mark.integration]

FOUR_DAYS = 4 * 86400  # every file past the 3-day orphan age


def files_under(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file()}


def age(root: Path) -> None:
    then = time.time() - FOUR_DAYS
    for path in files_under(root):
        os.utime(path, (then, then))


def clone_of(env: Any, ledger: Any, dropped: list[str]) -> tuple[str, str, Path]:
    """``q`` (two appends), ``r`` registered on its metadata, one more append to ``q``."""
    q, r = f"{env.namespace}.q", f"{env.namespace}.r"
    table = make_table(env.catalog, q, days=DAYS[:1], files_per_day=2)
    dropped.append(q)
    env.catalog.register_table(tuple(r.split(".")), table.metadata_location)
    dropped.append(r)
    append_rows(env.catalog.load_table(q), DAYS[:1], start=1000, rows_per_day=40)
    ledger.fault("register_table clone of a table, then an append to the original")
    return q, r, Path(normalize_path(table.location()))


def refused(env: Any, ledger: Any, table: str, *names: str) -> str:
    run = run_cli(env.config_path, "maintain", table, "--action", "remove_orphan_files")
    line = ledger.cli_error(run, 1, match=f"remove_orphan_files on {table} refused")
    for name in names:
        assert name in line, line
    return line


def test_orphan_removal_refuses_shared_nested_and_unknown_locations(
    fault_env: Any, ledger: Any, dropped: list[str]
) -> None:
    env = fault_env
    q, r, root = clone_of(env, ledger, dropped)
    nested = f"{env.namespace}.nested"
    original = env.catalog.load_table(q)
    location = f"{original.location()}/nested"
    t = env.catalog.create_table(nested, schema=original.schema(), location=location)
    dropped.append(nested)
    append_rows(t, DAYS[:1], start=5000, rows_per_day=10)
    ledger.fault("a table created inside another table's location")
    age(root)
    before_files = files_under(root)
    before = {n: ledger.contents(env.catalog.load_table(n)) for n in (q, r, nested)}

    refused(env, ledger, r, q, nested)
    refused(env, ledger, q, r, nested)
    refused(env, ledger, nested, q, r)

    # a table that cannot be read: unknown, so every orphan removal is held
    alone = f"{env.namespace}.alone"
    make_table(env.catalog, alone, days=DAYS[:1], files_per_day=1)
    dropped.append(alone)
    broken = f"{env.namespace}.broken"
    gone = make_table(env.catalog, broken, days=DAYS[:1], files_per_day=1)
    dropped.append(broken)
    Path(normalize_path(gone.metadata_location)).unlink()
    ledger.fault("a table of the catalog whose metadata is missing")
    line = refused(env, ledger, alone, broken)
    assert "could not read" in line

    assert files_under(root) == before_files  # nothing deleted
    ledger.files(len(before_files))
    for name, contents in before.items():
        assert ledger.contents(env.catalog.load_table(name)) == contents


@pytest.mark.spark
def test_a_clone_registered_after_the_decision_stops_the_actor(
    spark: Any, fault_env: Any, ledger: Any, dropped: list[str]
) -> None:
    raw = {**fault_env.raw, "defaults": {**fault_env.raw["defaults"]}}
    raw["defaults"]["actions"] = ["remove_orphan_files"]
    env = write_env(raw, fault_env)
    q = f"{env.namespace}.q"
    table = make_table(env.catalog, q, days=DAYS[:1], files_per_day=2)
    dropped.append(q)
    root = Path(normalize_path(table.location()))
    clock = [time.time()]
    client = env.client()
    decider = open_decider(env.cfg, env.catalog, client, clock=lambda: clock[0])
    decider.step(dispatch_all=True)  # first seen
    clock[0] += 25 * 3600
    report = decider.step(dispatch_all=True)
    assert report.enqueued == 1 and report.dispatched == 1  # q alone: scheduled

    r = f"{env.namespace}.r"
    env.catalog.register_table((env.namespace, "r"), table.metadata_location)
    dropped.append(r)
    append_rows(env.catalog.load_table(q), DAYS[:1], start=1000, rows_per_day=40)
    ledger.fault("register_table clone after orphan removal was scheduled")
    age(root)
    before_files = files_under(root)
    before = {n: ledger.contents(env.catalog.load_table(n)) for n in (q, r)}

    done = run_actor(env.cfg, max_actions=1, idle_exit=0, spark=spark)
    assert done.done == 0 and done.failed == 1
    (recent,) = gather(env.cfg, client, decider.queue, time.time())["recent"][:1]
    assert recent["action"] == "remove_orphan_files" and recent["ok"] is False
    assert f"remove_orphan_files on {q} refused" in recent["error"] and r in recent["error"]

    assert files_under(root) == before_files
    ledger.files(len(before_files))
    for name, contents in before.items():
        assert ledger.contents(env.catalog.load_table(name)) == contents
