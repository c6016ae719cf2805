"""The colliding-partition probe (issue #28, item 1) as an operator runs it: a string
identity partition whose values are NULL, ``'null'``, ``'/'`` and ``'%2F'``, merged by
``icefloe optimize`` and by the decider and an actor. Each value keeps its rows where the
filters look, and the table keeps every row and no orphan."""

from __future__ import annotations

from typing import Any

import pytest
from pyiceberg.expressions import EqualTo, IsNull

from icefloe.service.actor.loop import run_actor
from icefloe.service.decider.wiring import open_decider
from tests.faults.checks import jvm_chatter
from tests.faults.harness import run_cli
from tests.support.partition_identity import VALUES, colliding_table

pytestmark = [pytest.mark.faults, pytest.mark.spark, pytest.mark.integration]


def _each_value_intact(table: Any) -> None:
    for value in VALUES:
        expr = IsNull("k") if value is None else EqualTo("k", value)
        got = table.scan(row_filter=expr).to_arrow()
        assert got.num_rows == 500 and set(got["k"].to_pylist()) == {value}, value


def test_optimize_cli_merges_colliding_values_apart(fault_env: Any, ledger: Any) -> None:
    env = fault_env
    name = f"{env.namespace}.collide"
    before = ledger.contents(colliding_table(env.catalog, name))
    ledger.fault("partition values NULL, 'null', '/' and '%2F' in one table")
    run = run_cli(env.config_path, "optimize", name, "--json")
    ledger.clean(run.output)
    assert run.returncode == 0, run.output
    assert not jvm_chatter(run.stderr), run.stderr[-3000:]
    table = env.catalog.load_table(name)
    ledger.assert_intact(table, before)
    _each_value_intact(table)


def test_the_service_loop_merges_colliding_values_apart(
    spark: Any, fault_env: Any, ledger: Any
) -> None:
    env = fault_env
    name = f"{env.namespace}.collide"
    before = ledger.contents(colliding_table(env.catalog, name))
    ledger.fault("partition values NULL, 'null', '/' and '%2F' through the queue")
    decider = open_decider(env.cfg, env.catalog, env.client())
    assert decider.step(dispatch_all=True).dispatched == 4
    done = run_actor(env.cfg, max_actions=4, idle_exit=0, spark=spark)
    assert (done.done, done.failed) == (4, 0)
    table = env.catalog.load_table(name)
    ledger.assert_intact(table, before)
    _each_value_intact(table)
