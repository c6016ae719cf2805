"""``kill -9`` of an actor (its Python driver and its JVM) at every point of a batch.

A real actor process (:mod:`tests.faults.kill_actor`) takes a batch of two merges (one
table's two days) off the queue and kills itself at one point; then its leases run out,
the decider reaps the items (and its sweep, or the retry's, deletes the dead attempt's
files that no snapshot references), and an actor of this process runs the retry, batched
again. Afterwards, for every point: no row lost or duplicated, no unreferenced data file,
one commit for both partitions, each rewritten exactly once, the queue empty and nothing
dead-lettered, and no traceback or secret in any output.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from icefloe.jobs.maintenance.orphans import cleaner
from icefloe.service.actor.loop import Actor
from icefloe.service.actor.runners import spark_runners
from icefloe.service.decider.wiring import open_decider
from icefloe.state.intents.redis import RedisIntents
from icefloe.state.queue import budget_of
from icefloe.state.queue.redis import RedisQueue
from tests.faults.checks import operations, table_data_files
from tests.faults.conftest import fault_raw
from tests.faults.harness import cli_env, make_table
from tests.faults.kill_actor import POINTS
from tests.support.config import REPO

pytestmark = [pytest.mark.faults, pytest.mark.integration, pytest.mark.redis]

# which clean-up runs first after the kill: the decider's sweep (right after it reaps the
# item) or, with the decider's sweep off, the retry's own (before it runs the action)
CLEANED_BY = {
    "before-write": "retry",
    "mid-write": "reaper",
    "spark-written": "reaper",
    "before-commit": "retry",
    "after-commit": "reaper",
}


class WarmActors:
    """Killing actors started ahead (Spark up, waiting for a config): a JVM's start-up is
    most of a kill test's time. Two are kept warming, so the next test's actor starts
    while this one runs, without five JVMs fighting over two cores at once."""

    AHEAD = 2

    def __init__(self, config: Path, wanted: int) -> None:
        self.config, self.left = config, wanted
        self.warming: list[subprocess.Popen[str]] = []
        self._top_up()

    def _top_up(self) -> None:
        while self.left > len(self.warming) and len(self.warming) < self.AHEAD:
            self.warming.append(
                subprocess.Popen(
                    [sys.executable, "-m", "tests.faults.kill_actor", str(self.config)],
                    cwd=REPO,
                    env=cli_env(self.config),
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                    start_new_session=True,
                )
            )

    def take(self) -> subprocess.Popen[str]:
        proc = self.warming.pop(0)
        self.left -= 1
        self._top_up()
        return proc

    def close(self) -> None:
        for proc in self.warming:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


@pytest.fixture(scope="module")
def warm_actors(
    lake_home: Path, redis_session: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WarmActors]:
    config = tmp_path_factory.mktemp("warm") / "icefloe.yaml"
    config.write_text(yaml.safe_dump(fault_raw(lake_home, redis_session, "warm")))
    pool = WarmActors(config, len(POINTS))
    yield pool
    pool.close()


def killed_actor(pool: WarmActors, config: Path, point: str) -> str:
    """Give a warm actor ``config`` and ``point``; its whole output once it was killed."""
    proc = pool.take()
    out, _ = proc.communicate(f"{config} {point}\n", timeout=300)
    assert proc.returncode == -9, f"the actor was not killed at {point}:\n{out[-3000:]}"
    assert f"kill -9 at {point}" in out
    return out


@pytest.mark.parametrize("point", POINTS)
def test_kill_9_at_every_point_leaves_no_file_and_runs_once(
    point: str, fault_env: Any, ledger: Any, spark: Any, warm_actors: Any
) -> None:
    env = fault_env.with_decider(lease_seconds=2)  # the dead lease runs out sooner
    name = f"{env.namespace}.kill"
    table = make_table(env.catalog, name)
    before = ledger.contents(table)
    files_before = table_data_files(table)
    client = env.client()
    queue = RedisQueue(client, env.keys, env.cfg.decider.max_attempts)
    intents = RedisIntents(client, env.keys)
    decider = open_decider(env.cfg, env.catalog, client)
    decider.step(dispatch_all=True)
    assert sum(queue.depth().values()) == 2  # a merge of each of the two days

    ledger.clean(killed_actor(warm_actors, env.config_path, point))
    ledger.fault(f"actor kill -9 at {point} (a batch of 2)")
    dead = queue.inflight()  # the leases still run: no one acked, no one nacked
    assert len(dead) == 2
    [intent] = intents.all()
    assert intent.item in {d.item.id for d in dead}  # the batch's files are on record
    left = table_data_files(env.catalog.load_table(name)) - files_before
    if point == "before-write":
        assert not left
    else:  # written files (committed ones too, after the commit): the test proves something
        assert left, f"the kill at {point} left no file"
    if point == "spark-written":  # Spark's writer names files itself: found by prefix
        assert all(p.split("/data/", 1)[1].startswith("icefloe-") for p in left), left

    time.sleep(env.cfg.decider.lease_seconds + 0.5)  # the dead actor's leases run out
    if CLEANED_BY[point] == "retry":
        decider.duties.intents = None  # the decider reaps, but the retry must clean up itself
    report = decider.step(dispatch_all=True)
    assert report.reaped == 2
    if CLEANED_BY[point] == "reaper":
        assert intents.all() == []  # swept at once
        deleted = report.orphans_deleted
        assert deleted == (0 if point == "after-commit" else len(left)), (deleted, left)

    runner, batch_runner = spark_runners(env.cfg, spark)
    actor = Actor(
        queue,
        runner,
        lease_seconds=env.cfg.decider.lease_seconds,
        intents=intents,
        clean=cleaner(env.catalog),
        batch_runner=batch_runner,
        budget=budget_of(env.cfg),
    )
    done = actor.run(idle_exit=0.5)
    assert done.failed == 0 and done.done == 2  # the killed batch's retry, both items

    table = env.catalog.load_table(name)
    ledger.assert_intact(table, before)
    assert operations(table).count("replace") == 1  # both days in one commit, once
    assert sum(queue.depth().values()) == 0 and not queue.dead()
    assert intents.all() == []
