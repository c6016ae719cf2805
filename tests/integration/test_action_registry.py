"""A family is a registry: a new action is one module and one line, and every surface
lists it.

In a copy of the tree, an example action that does nothing (a table action of no Iceberg
procedure) gets its module, ``optimizer/actions/noop.py``, and one line in the registry
(``MODULES``); nothing else changes. From that copy, the CLI's ``maintain --action``
offers it, config validation takes it in a policy's ``actions``, the decider's table
rules know it (never due: it has no rule), and ``icefloe maintain T --action noop`` runs
it through the generic runner, verified. The same calls in the untouched tree refuse it,
so what lists it is the registry, not the test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from icefloe.base.catalog import spark_table_name
from icefloe.base.config import Config
from tests.support.config import REPO, config_raw
from tests.support.tree import copy_tree

pytestmark = [pytest.mark.spark, pytest.mark.integration]

EXAMPLE = '''"""``noop``: an example table action that does nothing (no Iceberg procedure)."""

from icefloe.optimizer.actions.spec import TABLE, ActionSpec

SPEC = ActionSpec("noop", TABLE, "do nothing: an example", calls=lambda facts: ())
'''

PROBE = """
import json
from icefloe.base.config import ConfigError, build_config
from icefloe.base.config.fields import POLICY_ACTIONS
from icefloe.optimizer.actions import TABLE_ACTIONS
try:
    build_config({"defaults": {"actions": ["merge", "noop"]}})
    accepted = True
except ConfigError:
    accepted = False
print(json.dumps({"policy": "noop" in POLICY_ACTIONS, "table": "noop" in TABLE_ACTIONS,
                  "accepted": accepted}))
"""


@pytest.fixture(scope="module")
def with_noop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tree = copy_tree(tmp_path_factory.mktemp("tree"))
    (tree / "optimizer" / "actions" / "noop.py").write_text(EXAMPLE)
    registry = tree / "optimizer" / "actions" / "__init__.py"
    text = registry.read_text()
    last = '    "skew_report",\n'
    assert text.count(last) == 1
    registry.write_text(text.replace(last, last + '    "noop",\n'))
    return tree


def _python(tree: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """This venv's Python in ``tree``: its ``icefloe/`` (links to the tree's folders) comes
    first on the path, before the installed checkout."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(tree)
    return subprocess.run(
        [sys.executable, *argv], cwd=tree, env=env, capture_output=True, text=True, timeout=600
    )


@pytest.mark.parametrize("registered", [True, False], ids=["with-noop", "untouched"])
def test_every_surface_lists_what_the_registry_holds(registered: bool, with_noop: Path) -> None:
    tree = with_noop if registered else REPO
    where = _python(tree, "-c", "import icefloe.optimizer; print(icefloe.optimizer.__file__)")
    assert Path(where.stdout.strip()).is_relative_to(tree), where.stderr
    probe = _python(tree, "-c", PROBE)
    assert probe.returncode == 0, probe.stderr
    assert json.loads(probe.stdout) == {"policy": registered, "table": registered} | {
        "accepted": registered
    }
    usage = _python(tree, "-m", "icefloe", "maintain", "--help")
    assert usage.returncode == 0, usage.stderr
    assert ("noop" in usage.stdout) is registered


def test_the_example_runs_as_every_table_action_does(
    with_noop: Path, tmp_path: Path, spark: Any, cfg: Config, namespace: str
) -> None:
    table = f"{namespace}.noop_t"
    name = spark_table_name(cfg, table)
    spark.sql(f"CREATE TABLE {name} (k INT) USING iceberg")
    spark.createDataFrame([(1,)], "k int").writeTo(name).append()
    raw = config_raw(tmp_path)
    raw["catalog"] = {"uri": cfg.catalog.uri, "warehouse": cfg.catalog.warehouse}
    conf = tmp_path / "icefloe.yaml"
    conf.write_text(yaml.safe_dump(raw))
    argv = ["-m", "icefloe", "--config", str(conf), "maintain", table, "--action", "noop"]
    ran = _python(with_noop, *argv, "--force", "--json")
    assert ran.returncode == 0, ran.stderr[-3000:]
    (done,) = json.loads(ran.stdout)["ran"]
    assert done["action"] == "noop" and done["result"] == {"calls": []}
    assert done["verified"] == {"checked": True, "referenced_files_present": True}
