"""Airflow runs on a throwaway AIRFLOW_HOME whose DAG folder is the project's airflow/dags."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from icefloe.base.config import PROJECT_ROOT

DAGS = PROJECT_ROOT / "airflow" / "dags"


def airflow_env(home: Path) -> dict[str, str]:
    return {
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
        "AIRFLOW_CONN_SPARK_DEFAULT": '{"conn_type": "spark", "host": "local[2]"}',
    }


@pytest.fixture(scope="session")
def dagbag(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    home = tmp_path_factory.mktemp("airflow_home")
    saved = {k: os.environ.get(k) for k in airflow_env(home)}
    os.environ.update(airflow_env(home))
    from airflow.dag_processing.dagbag import DagBag

    yield DagBag(str(DAGS))
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
