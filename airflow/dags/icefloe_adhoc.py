"""icefloe_adhoc: optimize one table (some partitions, or all) on demand.

Trigger with a conf such as ``{"table": "demo.events", "partitions": ["day=2026-11-02"],
"action": "merge", "dry_run": false}``; the args are validated before anything runs, then
``spark-submit app/scripts/actor_optimize.py`` (``icefloe optimize``) does the work and
prints its JSON report. Parsing this file loads no config: ``build_args`` builds the whole
spark-submit (conf, jars, args) at run time from the ``icefloe_config`` Variable.

Limits (``app/dags/limits.py``): ``optimize`` times out after the config's
``airflow.job_timeout_seconds`` and is retried with backoff (it plans again from the table's
current state); ``build_args`` is not retried (a bad conf fails again).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import DAG, Param, task

from icefloe.app.dags.limits import JOB, VALIDATE, dagrun_timeout
from icefloe.app.dags.support import ACTIONS, DEFAULT_CONN_ID

with DAG(
    dag_id="icefloe_adhoc",
    description="Optimize one table on demand (merge or sort), some partitions or all.",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    dagrun_timeout=dagrun_timeout(VALIDATE, JOB),
    tags=["icefloe"],
    params={
        "table": Param("demo.events", type="string", description="namespace.table"),
        "partitions": Param([], type="array", description="COL=VALUE filters; empty = all"),
        "action": Param("merge", enum=list(ACTIONS)),
        "dry_run": Param(False, type="boolean"),
    },
) as dag:

    @task(**VALIDATE.kwargs)
    def build_args(params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Validate the run's conf into one spark-submit (operator kwargs)."""
        from icefloe.app.dags import support as ds

        config = ds.config_path()
        return ds.submit_runs("actor_optimize", config, [ds.adhoc_args(params or {}, config)])

    # not strict: the run's execution_timeout (from the config) replaces the ceiling
    SparkSubmitOperator.partial(
        task_id="optimize", conn_id=DEFAULT_CONN_ID, **JOB.kwargs
    ).expand_kwargs(build_args(), strict=False)
