"""A data file truncated, overwritten with garbage, or deleted before its partition is
optimized (in-process ``optimize_table``, and ``icefloe optimize``).

Expected: a clean error (one line, :class:`IcefloeError`; the CLI's exit 1), nothing
committed (the table's current snapshot unchanged), and no file the failed rewrite wrote
left behind. After the operator puts the original file back, every row is there once.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from icefloe.base.errors import IcefloeError
from icefloe.jobs.data.optimize import optimize_table
from tests.faults.checks import (
    INCUBATOR_WARNING,
    current_snapshot_id,
    jvm_chatter,
    normalize_path,
    operations,
)
from tests.faults.harness import DAYS, make_table, run_cli

pytestmark = [pytest.mark.faults, pytest.mark.spark, pytest.mark.integration]


NOTHING = re.compile(r"nothing (was )?(committed|rewritten)")


def truncate(path: Path) -> None:
    with path.open("r+b") as f:
        f.truncate(path.stat().st_size // 2)


def garbage(path: Path) -> None:
    path.write_bytes(os.urandom(path.stat().st_size))


def delete(path: Path) -> None:
    path.unlink()


BREAKS: dict[str, Callable[[Path], None]] = {
    "truncated": truncate,
    "garbage": garbage,
    "deleted": delete,
}


def victim(table: Any, day: str) -> Path:
    """One data file of ``day`` (the first the scan plans)."""
    tasks = table.scan(row_filter=f"day == '{day}'").plan_files()
    return Path(normalize_path(sorted(t.file.file_path for t in tasks)[0]))


@pytest.mark.parametrize("how", list(BREAKS))
def test_broken_data_file_fails_cleanly_and_commits_nothing(
    spark: Any, fault_env: Any, ledger: Any, how: str
) -> None:
    env = fault_env
    name = f"{env.namespace}.events"
    table = make_table(env.catalog, name, days=DAYS[:2], files_per_day=3)
    before = ledger.contents(table)
    snapshot = current_snapshot_id(table)
    path = victim(table, DAYS[0])
    original = path.read_bytes()
    BREAKS[how](path)
    ledger.fault(f"data file {how}")
    try:
        with pytest.raises(IcefloeError) as failure:
            optimize_table(spark, env.cfg, name)  # both partitions: one commit, or none
    finally:
        path.write_bytes(original)  # the operator restores it
    message = str(failure.value)
    assert "\n" not in message and NOTHING.search(message), message
    ledger.clean(message)
    table = env.catalog.load_table(name)
    assert current_snapshot_id(table) == snapshot, operations(table)
    ledger.assert_intact(table, before)


def test_cli_optimize_of_a_garbage_file_is_one_error_and_exit_1(
    fault_env: Any, ledger: Any
) -> None:
    env = fault_env
    name = f"{env.namespace}.events"
    table = make_table(env.catalog, name, days=DAYS[:1], files_per_day=3)
    before = ledger.contents(table)
    snapshot = current_snapshot_id(table)
    path = victim(table, DAYS[0])
    original = path.read_bytes()
    garbage(path)
    ledger.fault("data file overwritten with garbage (CLI)")
    try:
        run = run_cli(env.config_path, "optimize", name, "--partition", f"day={DAYS[0]}")
    finally:
        path.write_bytes(original)
    ledger.clean(run.output)
    assert run.returncode == 1, run.output[-3000:]
    errors = [line for line in run.stderr.splitlines() if line.startswith("icefloe: error: ")]
    assert len(errors) == 1 and NOTHING.search(errors[0]), run.stderr[-3000:]
    assert not jvm_chatter(run.stderr), run.stderr[-3000:]  # the failed task's trace: in a file
    others = [line for line in run.error_lines() if line not in errors]
    assert all(line.startswith(INCUBATOR_WARNING) for line in others), run.stderr[-3000:]
    assert not run.stdout.strip(), run.stdout[-2000:]
    table = env.catalog.load_table(name)
    assert current_snapshot_id(table) == snapshot
    ledger.assert_intact(table, before)
