"""icefloe_skew: scheduled skew detection over the configured tables, then a salted join.

The ``icefloe_skew`` Variable (JSON) names what to look at, e.g.
``{"tables": [{"table": "demo.events", "keys": ["user_id"]}],
"join": {"left": "demo.events", "right": "demo.users", "on": "user_id", "how": "left",
"output": "demo.events_users"}}``. Without it the DAG does nothing. Parsing this file loads
no config: the planning tasks build each spark-submit from the ``icefloe_config`` Variable.

Limits (``app/dags/limits.py``): every task has an ``execution_timeout`` (each run's from
the config's ``airflow.job_timeout_seconds``); ``skew_detect`` is retried with backoff (it only
reads and stores a report), the salted join is not (its output mode may be ``append``), nor
are the planning tasks (a bad spec fails again); ``dagrun_timeout`` covers the longest path.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import DAG, task

from icefloe.app.dags.limits import JOB, JOIN, VALIDATE, dagrun_timeout
from icefloe.app.dags.support import DEFAULT_CONN_ID

with DAG(
    dag_id="icefloe_skew",
    description="Detect skewed partitions and hot keys; run the configured salted join.",
    schedule=timedelta(days=1),
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    dagrun_timeout=dagrun_timeout(VALIDATE, JOB, JOIN),
    tags=["icefloe"],
) as dag:

    @task(**VALIDATE.kwargs)
    def plan_detection() -> list[dict[str, Any]]:
        from airflow.sdk import Variable

        from icefloe.app.dags import support as ds

        config = ds.config_path()
        spec = Variable.get("icefloe_skew", default={"tables": []}, deserialize_json=True)
        return ds.submit_runs("skew_detect", config, ds.skew_runs(spec, config))

    @task(**VALIDATE.kwargs)
    def plan_join() -> list[dict[str, Any]]:
        from airflow.sdk import Variable

        from icefloe.app.dags import support as ds

        config = ds.config_path()
        spec = Variable.get("icefloe_skew", default={}, deserialize_json=True)
        return ds.submit_runs("salted_join", config, ds.salted_join_args(spec, config))

    # not strict: each run's execution_timeout (from the config) replaces the ceiling
    detect = SparkSubmitOperator.partial(
        task_id="skew_detect", conn_id=DEFAULT_CONN_ID, **JOB.kwargs
    ).expand_kwargs(plan_detection(), strict=False)
    join = SparkSubmitOperator.partial(
        task_id="salted_join", conn_id=DEFAULT_CONN_ID, **JOIN.kwargs
    ).expand_kwargs(plan_join(), strict=False)

    detect >> join
