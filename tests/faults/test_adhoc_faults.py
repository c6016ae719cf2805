"""Ad-hoc runs leave no orphan either (issue #28, item 4): ``icefloe optimize`` records its
new files under a lease of its own (``icefloe.service.actor.adhoc``) before writing them.

* ``kill -9`` mid-write: the half-written file is recorded; once the run's lease passes,
  the decider's sweep deletes it, and the table is as it was.
* Verification fails and the rewrite's own clean-up cannot delete (storage away for
  deletes): the ad-hoc run's clean-up deletes what it wrote, the table read first.
"""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Any

import pytest

from icefloe.jobs.maintenance.orphans import cleaner
from icefloe.state.intents import ADHOC, sweep
from icefloe.state.intents.redis import RedisIntents
from tests.faults.checks import unreferenced_data_files
from tests.faults.harness import DAYS, cli_env, make_table

pytestmark = [pytest.mark.faults, pytest.mark.spark, pytest.mark.integration]


def faulty_optimize(env: Any, fault: str, name: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tests.faults.faulty_optimize", fault, str(env.config_path), name],
        env=cli_env(env.config_path),
        capture_output=True,
        text=True,
        timeout=300,
        start_new_session=True,
    )


def adhoc_intents(env: Any) -> tuple[RedisIntents, list[Any]]:
    intents = RedisIntents(env.client(), env.keys)
    return intents, [i for i in intents.all() if i.item.startswith(ADHOC)]


def test_kill_9_of_optimize_mid_write_leaves_no_file(fault_env: Any, ledger: Any) -> None:
    env = fault_env
    name = f"{env.namespace}.events"
    table = make_table(env.catalog, name, days=DAYS[:2], files_per_day=3)
    before = ledger.contents(table)
    run = faulty_optimize(env, "kill-mid-write", name)
    ledger.fault("kill -9 of icefloe optimize mid-write")
    assert run.returncode == -9, run.stdout + run.stderr
    assert "kill -9 mid-write" in run.stdout
    intents, (left,) = adhoc_intents(env)
    assert left.table == name and left.paths
    assert unreferenced_data_files(env.catalog.load_table(name))  # the half-written file
    assert intents.abandoned() == []  # its lease still runs: not anyone's to delete yet
    time.sleep(env.cfg.decider.lease_seconds + 0.5)
    assert sweep(intents, cleaner(env.catalog)) >= 1  # what the decider's leader runs
    assert adhoc_intents(env)[1] == []
    ledger.assert_intact(env.catalog.load_table(name), before)


def test_optimize_whose_clean_up_fails_leaves_no_file(fault_env: Any, ledger: Any) -> None:
    env = fault_env
    name = f"{env.namespace}.events"
    table = make_table(env.catalog, name, days=DAYS[:2], files_per_day=3)
    before = ledger.contents(table)
    run = faulty_optimize(env, "cleanup-fails", name)
    ledger.fault("verification failed and the rewrite's clean-up could not delete")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "clean-up failed" in run.stdout
    ledger.clean(run.stdout + run.stderr)
    assert adhoc_intents(env)[1] == []  # swept by the run itself, the table read first
    ledger.assert_intact(env.catalog.load_table(name), before)
