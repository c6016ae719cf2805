"""icefloe_skew: scheduled skew detection over the configured tables, then a salted join.

The ``icefloe_skew`` Variable (JSON) names what to look at, e.g.
``{"tables": [{"table": "demo.events", "keys": ["user_id"]}],
"join": {"left": "demo.events", "right": "demo.users", "on": "user_id", "how": "left",
"output": "demo.events_users"}}``. Without it the DAG does nothing.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import DAG, task

from service.dag_support import DEFAULT_CONN_ID, default_config_path, spark_submit_kwargs

with DAG(
    dag_id="icefloe_skew",
    description="Detect skewed partitions and hot keys; run the configured salted join.",
    schedule=timedelta(days=1),
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    tags=["icefloe"],
) as dag:

    @task
    def plan_detection() -> list[list[str]]:
        from airflow.sdk import Variable

        from service import dag_support as ds

        config = Variable.get("icefloe_config", default=ds.default_config_path())
        spec = Variable.get("icefloe_skew", default={"tables": []}, deserialize_json=True)
        return ds.skew_runs(spec, config)

    @task
    def plan_join() -> list[list[str]]:
        from airflow.sdk import Variable

        from service import dag_support as ds

        config = Variable.get("icefloe_config", default=ds.default_config_path())
        spec = Variable.get("icefloe_skew", default={}, deserialize_json=True)
        return ds.salted_join_args(spec, config)

    detect = SparkSubmitOperator.partial(
        task_id="skew_detect",
        conn_id=DEFAULT_CONN_ID,
        **spark_submit_kwargs("skew_detect", default_config_path()),
    ).expand(application_args=plan_detection())
    join = SparkSubmitOperator.partial(
        task_id="salted_join",
        conn_id=DEFAULT_CONN_ID,
        **spark_submit_kwargs("salted_join", default_config_path()),
    ).expand(application_args=plan_join())

    detect >> join
