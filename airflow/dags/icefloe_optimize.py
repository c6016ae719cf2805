"""icefloe_optimize: one decider pass, then actor runs sized to the backlog, then a report.

decide_once (``icefloe decide --once``) → plan_actor_runs (backlog → N runs) →
actor[0..N) (``spark-submit app/scripts/actor.py``, one mapped run each) → status_report.

Connection ``spark_default`` (its host is the Spark master). Variables, with defaults in
``app/dags/support.py``: ``icefloe_config``, ``icefloe_max_actors``,
``icefloe_actions_per_actor``. Parsing this file loads no config: the spark-submit
settings come from ``plan_actor_runs`` at run time, the config path of the bash commands
is rendered from the Variable.

Limits (``app/dags/limits.py``): every task has an ``execution_timeout`` and is retried
with backoff (each is safe to run again); an actor run's ``--max-seconds`` and timeout come
from the config's ``airflow:`` section at run time; ``dagrun_timeout`` covers the longest path.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.providers.standard.operators.bash import BashOperator
from airflow.sdk import DAG, task

from icefloe.app.dags.limits import ACTOR, DECIDE, PLAN_ACTORS, REPORT, dagrun_timeout
from icefloe.app.dags.support import DEFAULT_CONN_ID, JINJA_FILTERS, icefloe_command

with DAG(
    dag_id="icefloe_optimize",
    description="Decide what the warehouse needs, run actors for the backlog, report.",
    schedule=timedelta(minutes=15),
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    dagrun_timeout=dagrun_timeout(DECIDE, PLAN_ACTORS, ACTOR, REPORT),
    tags=["icefloe"],
    user_defined_filters=JINJA_FILTERS,
) as dag:
    decide = BashOperator(
        task_id="decide_once", bash_command=icefloe_command("decide", "--once"), **DECIDE.kwargs
    )

    @task(**PLAN_ACTORS.kwargs)
    def plan_actor_runs() -> list[dict[str, Any]]:
        """One spark-submit (operator kwargs) per actor run, N runs from the queue's backlog
        (0: nothing to do)."""
        from airflow.sdk import Variable

        from icefloe.app.dags import support as ds

        config = ds.config_path()
        max_actors = int(Variable.get("icefloe_max_actors", default=ds.DEFAULT_MAX_ACTORS))
        per_actor = int(
            Variable.get("icefloe_actions_per_actor", default=ds.DEFAULT_ACTIONS_PER_ACTOR)
        )
        max_seconds = ds.airflow_settings(config).actor_max_seconds
        runs = ds.actor_runs(ds.backlog_size(config), max_actors, per_actor, max_seconds, config)
        return ds.submit_runs("actor", config, runs)

    runs = plan_actor_runs()
    # not strict: each run's execution_timeout (from its --max-seconds) replaces the ceiling
    actors = SparkSubmitOperator.partial(
        task_id="actor", conn_id=DEFAULT_CONN_ID, **ACTOR.kwargs
    ).expand_kwargs(runs, strict=False)
    report = BashOperator(
        task_id="status_report",
        bash_command=icefloe_command("status", "--json"),
        trigger_rule="all_done",
        **REPORT.kwargs,
    )

    decide >> runs >> actors >> report
