"""Two of everything at once: two actors on one queue, two deciders (threads, then two
leaders at once as after a paused process whose lease lapsed, then two ``decide --once``
processes), and a writer that commits to the partitions being rewritten right before the
rewrite's commit.

Expected: every action done exactly once (one ``replace`` per table's batch, each item
delivered once, nothing dead-lettered), only one decider leading at a time and the lease
handed back by ``--once``, the stats equal to a full scan with each snapshot applied once,
and every row of the table and of the concurrent writer there exactly once, with no file
left unreferenced.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from icefloe.jobs.data.optimize import optimize_table
from icefloe.jobs.rewrite.exact import Collaborators
from icefloe.service.actor.loop import Actor, run_actor
from icefloe.service.decider.loop import Decider
from icefloe.service.decider.wiring import open_decider
from icefloe.state.queue.redis import RedisQueue
from icefloe.state.rolling.redis import RollingStats
from icefloe.state.rolling.scan import catch_up, full_stats
from tests.faults.checks import Contents, operations, queue_places
from tests.faults.harness import DAYS, append_rows, make_table, run_cli_parallel
from tests.support.config import part

pytestmark = [pytest.mark.faults, pytest.mark.redis]

TARGET = 1 << 20


def drain_once(env: Any, client: Any, expected: set[str]) -> None:
    """An actor with a recording runner (no Spark) takes every item: each exactly once."""
    ran: list[str] = []
    actor = Actor(
        RedisQueue(client, env.keys),
        lambda item, *guard: ran.append(item.id) or {},
        lease_seconds=30,
        poll_seconds=0.05,
    )
    actor.run(idle_exit=0)
    assert sorted(ran) == sorted(expected)


@pytest.mark.spark
@pytest.mark.integration
def test_two_actors_on_one_queue_do_each_action_once(
    spark: Any, fault_env: Any, ledger: Any
) -> None:
    """Two tables, two actors: each takes one table's batch (every day of it at once)."""
    env = fault_env
    names = [f"{env.namespace}.events_{x}" for x in "ab"]
    tables = [make_table(env.catalog, n, days=DAYS, files_per_day=3) for n in names]
    before = [ledger.contents(t) for t in tables]
    client = env.client()
    report = open_decider(env.cfg, env.catalog, client).step(dispatch_all=True)
    assert report.dispatched == 2 * len(DAYS)
    ledger.fault("two actors on one queue")
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = [
            pool.submit(run_actor, env.cfg, None, 1.0, spark) for _ in range(2)
        ]  # each exits after a second with nothing left to take
        reports = [r.result(timeout=600) for r in runs]

    assert sum(r.done for r in reports) == 2 * len(DAYS), reports
    assert all(r.failed == 0 and r.lost == 0 and r.done >= 1 for r in reports), reports
    entries = [json.loads(r) for r in client.lrange(env.keys.recent, 0, -1)]
    assert sorted(e["table"] for e in entries) == names  # one batch per table
    assert all(e["ok"] and e["batch"]["items"] == len(DAYS) for e in entries), entries
    assert all(e["files_rewritten"] == 3 * len(DAYS) for e in entries), entries
    assert len({e["actor"] for e in entries}) == 2
    for name, contents in zip(names, before, strict=True):
        table = env.catalog.load_table(name)
        assert operations(table).count("replace") == 1, operations(table)  # one commit
        ledger.assert_intact(table, contents)
    depth = RedisQueue(client, env.keys).depth()
    assert depth == {"pending": 0, "ready": 0, "inflight": 0, "dead": 0}, depth


def test_two_deciders_at_once(fault_env: Any, ledger: Any) -> None:
    env = fault_env.with_decider(leader_ttl_seconds=30)  # no lapse between passes, however slow
    name = f"{env.namespace}.events"
    table = make_table(env.catalog, name, days=DAYS[:2], files_per_day=2)
    before = ledger.contents(table)
    deciders = [open_decider(env.cfg, env.catalog, env.client()) for _ in range(2)]
    barrier = threading.Barrier(2)

    def step(d: Decider) -> Any:
        barrier.wait(timeout=30)
        return d.step(block_ms=None, dispatch_all=True)

    ledger.fault("two deciders stepping at once")
    with ThreadPoolExecutor(max_workers=2) as pool:
        rounds = [list(pool.map(step, deciders)) for _ in range(3)]
    for reports in rounds:  # one leader per pass, and the other one knows who
        leaders = [d for d, r in zip(deciders, reports, strict=True) if r.leader]
        assert len(leaders) == 1, reports
        (standby,) = [r for r in reports if not r.leader]
        assert standby.holder == leaders[0].leader.token
    assert sum(r.enqueued for reports in rounds for r in reports) == 2

    # a paused leader whose lease lapsed: both lead at once (the lease cannot stop that)
    for d in deciders:
        d.leader.acquire = lambda: True  # type: ignore[method-assign]
    appended = before
    for i in range(2):  # two commits, a new day among them
        rows = append_rows(env.catalog.load_table(name), DAYS[1:], 20_000 + i * 100, 15)
        appended = appended + Contents.of_arrow(rows)
    ledger.fault("two leaders at once")
    with ThreadPoolExecutor(max_workers=2) as pool:
        both = list(pool.map(step, deciders))
    assert all(r.leader for r in both)

    table = env.catalog.load_table(name)
    stats = deciders[0].stats
    assert stats.partitions(name) == full_stats(table, TARGET)
    # each snapshot applied once at most; a leader that finds its read overtaken by the
    # other's apply falls back to a full scan, which is exact too
    counters = deciders[0].ledger.counters()
    applied, scans = counters.get("snapshots_applied", 0), counters.get("full_scans", 0)
    assert applied <= 2 and 1 <= scans <= 2 and applied + scans >= 3, counters
    expected = {f"merge:{name}:{part(day=d)}" for d in DAYS}
    places = queue_places(env.client(), env.keys)
    assert set(places) == expected and all(len(p) == 1 for p in places.values()), places
    drain_once(env, env.client(), expected)
    ledger.assert_intact(table, appended)


def test_two_decide_once_processes(fault_env: Any, ledger: Any) -> None:
    env = fault_env
    name = f"{env.namespace}.events"
    table = make_table(env.catalog, name, days=DAYS, files_per_day=2)
    before = ledger.contents(table)
    ledger.fault("two decide --once processes at once")
    runs = run_cli_parallel(env.config_path, [("decide", "--once", "--json")] * 2)
    steps = []
    for run in runs:
        ledger.clean(run.output)
        assert run.returncode == 0, run.output[-3000:]
        steps.append(json.loads(run.stdout))
    assert any(s["leader"] for s in steps), steps
    for s in steps:  # one standing by names the leader
        assert s["leader"] or s["leader_holder"], s
    assert sum(s["enqueued"] for s in steps) == len(DAYS), steps
    client = env.client()
    assert client.get(env.keys.leader) is None  # --once hands the lease back
    expected = {f"merge:{name}:{part(day=d)}" for d in DAYS}
    places = queue_places(client, env.keys)
    assert set(places) == expected and all(p == ["ready"] for p in places.values()), places
    drain_once(env, client, expected)
    ledger.assert_intact(env.catalog.load_table(name), before)


@pytest.mark.spark
@pytest.mark.integration
@pytest.mark.parametrize("engine", ["auto", "spark"])
def test_a_writer_committing_during_the_rewrite_keeps_its_rows(
    spark: Any, fault_env: Any, ledger: Any, engine: str
) -> None:
    env = fault_env
    name = f"{env.namespace}.events"
    table = make_table(env.catalog, name, days=DAYS[:2], files_per_day=3)
    before = ledger.contents(table)
    written: list[Any] = []

    def writer(rewrite: Any, results: Any) -> None:
        if not written:  # once: a streaming writer's commit lands right before ours
            written.append(append_rows(env.catalog.load_table(name), DAYS[:2], 50_000, 25))
            ledger.fault(f"a writer committed during the rewrite ({engine} engine)")

    cfg = dataclasses.replace(
        env.cfg, defaults=dataclasses.replace(env.cfg.defaults, engine=engine)
    )
    report = optimize_table(spark, cfg, name, collaborators=Collaborators(before_commit=writer))

    assert written and report.partitions_rewritten == 2 and report.partitions_failed == 0
    table = env.catalog.load_table(name)
    assert operations(table)[-2:] == ["append", "replace"], operations(table)
    ledger.assert_intact(table, before + Contents.of_arrow(written[0]))
    files = table.inspect.files()
    assert files.num_rows == 4  # per day: the merged file and the writer's


def test_the_other_leader_applies_between_our_read_and_our_apply(
    fault_env: Any, ledger: Any
) -> None:
    """Two leaders at once, the worst interleaving: the other one applies the new snapshots
    right after this one read where the table's stats stand. Nothing may be applied twice."""
    env = fault_env
    name = f"{env.namespace}.events"
    table = make_table(env.catalog, name, days=DAYS[:2], files_per_day=2)
    ours, theirs = RollingStats(env.client(), env.keys), RollingStats(env.client(), env.keys)
    catch_up(theirs, name, table, TARGET)  # the table's first pass: a full scan
    for i in range(2):
        append_rows(env.catalog.load_table(name), DAYS[1:], 30_000 + i * 100, 15)
    table = env.catalog.load_table(name)
    expected = ledger.contents(table)
    read = ours.last_applied
    interleaved: list[int | None] = []

    def last_applied(table_name: str) -> int | None:
        value = read(table_name)
        if not interleaved:  # right after our first read, the other leader catches up
            interleaved.append(value)
            catch_up(theirs, name, table, TARGET)
            ledger.fault("the other leader applied between our read and our apply")
        return value

    ours.last_applied = last_applied  # type: ignore[method-assign]
    catch_up(ours, name, table, TARGET)

    assert interleaved
    assert ours.partitions(name) == full_stats(table, TARGET)
    assert ours.last_applied(name) == table.current_snapshot().snapshot_id
    ledger.assert_intact(table, expected)
