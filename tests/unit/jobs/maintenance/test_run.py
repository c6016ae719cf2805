"""Every table action's runner comes from its spec: Iceberg procedures alone run through the
generic runner, every other names a function of ``icefloe.jobs`` that exists."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from icefloe.base.errors import UsageError
from icefloe.jobs.maintenance.run import TableRun, procedure_calls, runner_of
from icefloe.optimizer.actions import BY_NAME, REGISTRY, TABLE, TABLE_ACTIONS

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("action", TABLE_ACTIONS)
def test_every_table_action_has_one_runner_of_one_shape(action: str) -> None:
    spec = BY_NAME[action]
    runner = runner_of(spec)
    assert (runner is procedure_calls) == (spec.calls is not None)
    assert not (spec.calls is not None and spec.runner), f"{action}: procedures and a runner"
    (param,) = inspect.signature(runner).parameters.values()
    assert param.annotation in (TableRun, "TableRun"), f"{action}: {runner}"
    if spec.runner:
        assert spec.runner.startswith("icefloe.jobs."), spec.runner


def test_partition_actions_name_no_runner() -> None:
    """A partition's actions run through the data path (``optimize_table``), never here."""
    assert all(not a.runner and a.calls is None for a in REGISTRY if a.scope != TABLE)


def test_a_spec_naming_no_runner_is_refused_before_any_work() -> None:
    lost = dataclasses.replace(BY_NAME["expire_snapshots"], runner="")
    with pytest.raises(UsageError, match="neither procedures nor a runner"):
        runner_of(lost)
