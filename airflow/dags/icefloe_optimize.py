"""icefloe_optimize: one decider pass, then actor runs sized to the backlog, then a report.

decide_once (``icefloe decide --once``) → plan_actor_runs (backlog → N runs) →
actor[0..N) (``spark-submit jobs/scripts/actor.py``, one mapped run each) → status_report.

Connection ``spark_default`` (its host is the Spark master). Variables, with defaults in
``service/dag_support.py``: ``icefloe_config``, ``icefloe_max_actors``,
``icefloe_actions_per_actor``.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.providers.standard.operators.bash import BashOperator
from airflow.sdk import DAG, task

from service.dag_support import (
    DEFAULT_CONN_ID,
    default_config_path,
    icefloe_command,
    spark_submit_kwargs,
)

with DAG(
    dag_id="icefloe_optimize",
    description="Decide what the warehouse needs, run actors for the backlog, report.",
    schedule=timedelta(minutes=15),
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    tags=["icefloe"],
) as dag:
    decide = BashOperator(task_id="decide_once", bash_command=icefloe_command("decide", "--once"))

    @task
    def plan_actor_runs() -> list[list[str]]:
        """Application args of N actor runs, N from the queue's backlog (0: nothing to do)."""
        from airflow.sdk import Variable

        from service import dag_support as ds

        config = Variable.get("icefloe_config", default=ds.default_config_path())
        max_actors = int(Variable.get("icefloe_max_actors", default=ds.DEFAULT_MAX_ACTORS))
        per_actor = int(
            Variable.get("icefloe_actions_per_actor", default=ds.DEFAULT_ACTIONS_PER_ACTOR)
        )
        return ds.actor_runs(ds.backlog_size(config), max_actors, per_actor, config)

    runs = plan_actor_runs()
    actors = SparkSubmitOperator.partial(
        task_id="actor",
        conn_id=DEFAULT_CONN_ID,
        **spark_submit_kwargs("actor", default_config_path()),
    ).expand(application_args=runs)
    report = BashOperator(
        task_id="status_report",
        bash_command=icefloe_command("status", "--json"),
        trigger_rule="all_done",
    )

    decide >> runs >> actors >> report
