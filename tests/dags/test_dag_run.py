"""One DAG end to end with ``dag.test()``: icefloe_adhoc compacts a real table through
``spark-submit jobs/scripts/actor_optimize.py`` against the test lakehouse."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from service.config import PROJECT_ROOT
from service.demo.ingest import TableSpec, ingest
from tests.conftest import config_raw
from tests.dags.conftest import airflow_env

pytestmark = pytest.mark.integration


def test_adhoc_dag_compacts_a_table(
    lake_home: Path, catalog: Any, namespace: str, tmp_path: Path
) -> None:
    config = tmp_path / "icefloe.yaml"
    config.write_text(yaml.safe_dump(config_raw(lake_home)))
    spec = TableSpec(
        f"{namespace}.clicks",
        days=1,
        regions=("eu",),
        commits=8,
        healthy_days=0,
        late_share=0.0,
        small_file_bytes=(4 << 10, 16 << 10),
        target_file_size_bytes=256 << 10,
    )
    commits = ingest(catalog, spec, seed=5)
    before = catalog.load_table((namespace, "clicks"))
    files_before = len(before.inspect.files())
    env = {
        **os.environ,
        **airflow_env(tmp_path / "airflow"),
        "AIRFLOW_VAR_ICEFLOE_CONFIG": str(config),
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
    }
    migrate = subprocess.run(
        [sys.executable, "-m", "airflow", "db", "migrate"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert migrate.returncode == 0, migrate.stderr[-2000:]
    conf = json.dumps({"table": f"{namespace}.clicks", "action": "merge"})
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
    after = catalog.load_table((namespace, "clicks"))
    assert after.current_snapshot().summary.operation.value == "replace"
    files = after.inspect.files()
    assert len(files) < files_before
    assert sum(files["record_count"].to_pylist()) == sum(c.rows for c in commits)
