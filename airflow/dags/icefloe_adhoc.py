"""icefloe_adhoc: optimize one table (some partitions, or all) on demand.

Trigger with a conf such as ``{"table": "demo.events", "partitions": ["day=2026-11-02"],
"action": "merge", "dry_run": false}``; the args are validated before anything runs, then
``spark-submit jobs/scripts/actor_optimize.py`` does the work and prints its JSON report.
"""

from __future__ import annotations

from datetime import datetime

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import DAG, Param, task

from service.dag_support import DEFAULT_CONN_ID, default_config_path, spark_submit_kwargs

with DAG(
    dag_id="icefloe_adhoc",
    description="Optimize one table on demand (merge or sort), some partitions or all.",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    tags=["icefloe"],
    params={
        "table": Param("demo.events", type="string", description="namespace.table"),
        "partitions": Param([], type="array", description="COL=VALUE filters; empty = all"),
        "action": Param("merge", enum=["merge", "sort"]),
        "dry_run": Param(False, type="boolean"),
    },
) as dag:

    @task
    def build_args(params: dict | None = None) -> list[list[str]]:
        """Validate the run's conf into one spark-submit argument list."""
        from airflow.sdk import Variable

        from service import dag_support as ds

        config = Variable.get("icefloe_config", default=ds.default_config_path())
        return [ds.adhoc_args(params or {}, config)]

    SparkSubmitOperator.partial(
        task_id="optimize",
        conn_id=DEFAULT_CONN_ID,
        **spark_submit_kwargs("actor_optimize", default_config_path()),
    ).expand(application_args=build_args())
