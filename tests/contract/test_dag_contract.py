"""The ad-hoc DAG on every backend: ``dag.test()`` of ``icefloe_adhoc`` compacts a real
table through ``spark-submit app/scripts/actor_optimize.py``, configured by a file that
holds the backend's catalog (and its secrets, which nothing may print)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from icefloe.app.demo.ingest import TableSpec, ingest
from icefloe.base.config import PROJECT_ROOT
from tests.contract.checks import assert_intact, table_contents
from tests.dags.conftest import airflow_env

pytestmark = [pytest.mark.contract, pytest.mark.integration]


@pytest.fixture(scope="session")
def airflow_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One migrated Airflow metadata database for the run."""
    home = tmp_path_factory.mktemp("airflow")
    migrate = subprocess.run(
        [sys.executable, "-m", "airflow", "db", "migrate"],
        env={**os.environ, **airflow_env(home)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert migrate.returncode == 0, migrate.stderr[-2000:]
    return home


def test_adhoc_dag_compacts_a_table(backend: Any, airflow_home: Path, tmp_path: Path) -> None:
    config = backend.config_file(tmp_path / "icefloe.yaml")
    name = f"{backend.namespace()}.clicks"
    spec = TableSpec(
        name,
        days=1,
        regions=("eu",),
        commits=8,
        healthy_days=0,
        late_share=0.0,
        small_file_bytes=(4 << 10, 16 << 10),
        target_file_size_bytes=256 << 10,
    )
    ingest(backend.catalog, spec, seed=5)
    before = backend.catalog.load_table(name)
    files_before, contents_before = len(before.inspect.files()), table_contents(before)
    env = {
        **os.environ,
        **airflow_env(airflow_home),
        "AIRFLOW_VAR_ICEFLOE_CONFIG": str(config),
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
    }
    conf = json.dumps({"table": name, "action": "merge"})
    run = subprocess.run(
        [
            sys.executable,
            str(PROJECT_ROOT / "tests" / "dags" / "run_dag.py"),
            "icefloe_adhoc",
            conf,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert "dag-test state=success" in run.stdout, (run.stdout[-3000:], run.stderr[-3000:])
    for secret in backend.secrets:
        assert secret not in run.stdout + run.stderr, "the DAG run printed a secret"
    after = backend.catalog.load_table(name)
    assert after.current_snapshot().summary.operation.value == "replace"
    assert len(after.inspect.files()) < files_before
    assert_intact(after, contents_before)
