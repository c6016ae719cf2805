"""The ``airflow:`` config section: the DAGs' spark-submit runs, ranged so that each DAG's
``dagrun_timeout`` (fixed at parse time) covers any valid config."""

from __future__ import annotations

from typing import Any

import pytest

from icefloe.base.config import AirflowSettings, ConfigError, build_config, load_config
from icefloe.base.config.airflow_settings import MAX_ACTOR_RUN_SECONDS, MAX_JOB_SECONDS

pytestmark = pytest.mark.unit


def test_defaults_and_the_actor_runs_timeout() -> None:
    settings = build_config({}).airflow
    assert settings == AirflowSettings()
    assert (settings.actor_max_seconds, settings.actor_grace_seconds) == (900, 1800)
    assert settings.actor_timeout_seconds == 2700
    assert settings.job_timeout_seconds == 7200


def test_a_file_and_the_environment_set_them() -> None:
    cfg = build_config({"airflow": {"actor_max_seconds": 600, "job_timeout_seconds": 3600}})
    assert cfg.airflow.actor_timeout_seconds == 600 + 1800
    assert cfg.airflow.job_timeout_seconds == 3600
    env = {"ICEFLOE_AIRFLOW__ACTOR_GRACE_SECONDS": "300"}
    assert load_config(env=env).airflow.actor_timeout_seconds == 900 + 300


def test_the_ceilings_are_reachable() -> None:
    top = {"actor_max_seconds": MAX_ACTOR_RUN_SECONDS - 60, "actor_grace_seconds": 60}
    cfg = build_config({"airflow": {**top, "job_timeout_seconds": MAX_JOB_SECONDS}})
    assert cfg.airflow.actor_timeout_seconds == MAX_ACTOR_RUN_SECONDS


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"actor_max_seconds": 30}, "'airflow.actor_max_seconds' must be >= 60, got 30"),
        ({"actor_grace_seconds": 0}, "'airflow.actor_grace_seconds' must be >= 60, got 0"),
        ({"job_timeout_seconds": 86400}, "'airflow.job_timeout_seconds' must be <= 21600"),
        ({"actor_max_seconds": 600.5}, "'airflow.actor_max_seconds' must be an integer"),
        ({"actor_max_seconds": "600"}, "'airflow.actor_max_seconds' must be an integer"),
        ({"actor_max_seconds": True}, "'airflow.actor_max_seconds' must be an integer"),
        (
            {"actor_max_seconds": 7000, "actor_grace_seconds": 1000},
            "'airflow.actor_max_seconds' plus actor_grace_seconds (1000) must be at most 7200",
        ),
        ({"retries": 3}, "unknown config key 'airflow.retries'"),
    ],
)
def test_bad_values_are_one_line_naming_the_key(section: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        build_config({"airflow": section})
    assert message in str(err.value)
    assert "\n" not in str(err.value)
