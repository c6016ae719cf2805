"""The DAG files: they load, their shape is what the docs say, their spark-submit is exact."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from service import dag_support as ds
from service.config import DEFAULT_CONFIG, PROJECT_ROOT
from service.errors import UsageError

pytestmark = pytest.mark.unit

JARS = ",".join(
    str(PROJECT_ROOT / ".jars" / j)
    for j in (
        "iceberg-spark-runtime-4.1_2.13-1.12.0.jar",
        "postgresql-42.7.8.jar",
        "sqlite-jdbc-3.50.3.0.jar",
    )
)


def test_no_init_in_airflow_folder() -> None:
    assert not list((PROJECT_ROOT / "airflow").rglob("__init__.py"))


def test_dagbag_loads_without_errors(dagbag: Any) -> None:
    assert dagbag.import_errors == {}
    assert set(dagbag.dag_ids) == {"icefloe_optimize", "icefloe_skew", "icefloe_adhoc"}


def edges(dag: Any) -> set[tuple[str, str]]:
    return {(t.task_id, d) for t in dag.tasks for d in t.downstream_task_ids}


def test_optimize_dag_shape(dagbag: Any) -> None:
    dag = dagbag.dags["icefloe_optimize"]
    assert edges(dag) == {
        ("decide_once", "plan_actor_runs"),
        ("plan_actor_runs", "actor"),
        ("actor", "status_report"),
    }
    assert dag.max_active_runs == 1
    assert dag.get_task("status_report").trigger_rule == "all_done"
    assert "decide --once" in dag.get_task("decide_once").bash_command


def test_skew_and_adhoc_dag_shapes(dagbag: Any) -> None:
    assert edges(dagbag.dags["icefloe_skew"]) == {
        ("plan_detection", "skew_detect"),
        ("skew_detect", "salted_join"),
        ("plan_join", "salted_join"),
    }
    adhoc = dagbag.dags["icefloe_adhoc"]
    assert edges(adhoc) == {("build_args", "optimize")}
    assert adhoc.schedule is None
    assert set(adhoc.params) == {"table", "partitions", "action", "dry_run"}


def submit_argv(task: Any, args: list[str]) -> list[str]:
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    kw = task.partial_kwargs
    hook = SparkSubmitHook(
        conf=kw["conf"],
        conn_id=kw["conn_id"],
        jars=kw["jars"],
        packages=kw["packages"],
        name=kw["name"],
        env_vars=kw["env_vars"],
        application_args=args,
    )
    return list(hook._build_spark_submit_command(kw["application"]))


def expected_conf() -> list[str]:
    from service.config import load_config

    lake = load_config(DEFAULT_CONFIG).catalog
    pairs = [
        (
            "spark.sql.extensions",
            "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
        ),
        ("spark.sql.session.timeZone", "UTC"),
        ("spark.ui.showConsoleProgress", "false"),
        ("spark.sql.catalog.lake", "org.apache.iceberg.spark.SparkCatalog"),
        ("spark.sql.catalog.lake.warehouse", lake.warehouse),
        ("spark.sql.catalog.lake.cache-enabled", "false"),
        ("spark.sql.catalog.lake.type", "jdbc"),
        ("spark.sql.catalog.lake.uri", "jdbc:sqlite:" + lake.uri[len("sqlite:///") :]),
        ("spark.sql.catalog.lake.jdbc.schema-version", "V1"),
        ("spark.sql.shuffle.partitions", "8"),
        ("spark.ui.enabled", "false"),
    ]
    return [x for k, v in pairs for x in ("--conf", f"{k}={v}")]


def test_actor_spark_submit_argv_is_exact(dagbag: Any) -> None:
    task = dagbag.dags["icefloe_optimize"].get_task("actor")
    args = ds.actor_runs(backlog=25, max_actors=2, actions_per_actor=10, config_path="/c.yaml")[0]
    assert submit_argv(task, args) == [
        "spark-submit",
        "--master",
        "local[2]",
        *expected_conf(),
        "--jars",
        JARS,
        "--name",
        "icefloe-actor",
        str(PROJECT_ROOT / "jobs" / "actor.py"),
        "--config",
        "/c.yaml",
        "--max-actions",
        "10",
        "--idle-exit",
        "5",
    ]
    assert task.partial_kwargs["env_vars"]["PYSPARK_PYTHON"] == sys.executable


def test_adhoc_spark_submit_argv_is_exact(dagbag: Any) -> None:
    task = dagbag.dags["icefloe_adhoc"].get_task("optimize")
    conf = {"table": "demo.events", "partitions": ["day=2026-11-02"], "action": "sort"}
    assert submit_argv(task, ds.adhoc_args(conf, "/c.yaml")) == [
        "spark-submit",
        "--master",
        "local[2]",
        *expected_conf(),
        "--jars",
        JARS,
        "--name",
        "icefloe-actor-optimize",
        str(PROJECT_ROOT / "jobs" / "actor_optimize.py"),
        "demo.events",
        "--action",
        "sort",
        "--config",
        "/c.yaml",
        "--json",
        "--partition",
        "day=2026-11-02",
    ]


def test_skew_spark_submit_argv_is_exact(dagbag: Any) -> None:
    task = dagbag.dags["icefloe_skew"].get_task("skew_detect")
    spec = {"tables": [{"table": "demo.events", "keys": ["user_id", "region"]}]}
    (args,) = ds.skew_runs(spec, "/c.yaml")
    assert (
        submit_argv(task, args)[-8:]
        == [
            str(PROJECT_ROOT / "jobs" / "skew_detect.py"),
            "demo.events",
            "--config",
            "/c.yaml",
            "--json",
            "--key",
            "user_id",
            "--key",
            "region",
        ][-8:]
    )


def test_actor_runs_follow_the_backlog() -> None:
    assert ds.actor_runs(0, 4, 10, "c") == []
    assert len(ds.actor_runs(1, 4, 10, "c")) == 1
    assert len(ds.actor_runs(35, 4, 10, "c")) == 4
    assert len(ds.actor_runs(1000, 3, 10, "c")) == 3


@pytest.mark.parametrize(
    "conf",
    [
        {"table": "nope"},
        {"table": "db.t; drop"},
        {"table": "db.t", "action": "explode"},
        {"table": "db.t", "partitions": ["novalue"]},
    ],
)
def test_adhoc_args_reject_bad_conf(conf: dict[str, Any]) -> None:
    with pytest.raises(UsageError):
        ds.adhoc_args(conf, "c")


def test_salted_join_spark_submit_argv_is_exact(dagbag: Any) -> None:
    task = dagbag.dags["icefloe_skew"].get_task("salted_join")
    spec = {"join": {"left": "demo.users", "right": "demo.purchases", "on": "user_id",
                     "how": "left", "output": "demo.users_purchases"}}
    (args,) = ds.salted_join_args(spec, "/c.yaml")
    expected = [
        str(PROJECT_ROOT / "jobs" / "salted_join.py"),
        "demo.users", "demo.purchases", "--on", "user_id", "--how", "left",
        "--into", "demo.users_purchases", "--mode", "replace", "--reuse-reports",
        "--config", "/c.yaml",
    ]
    assert submit_argv(task, args)[-len(expected) :] == expected
    # the job's own parser accepts exactly these arguments
    from jobs.skew.salted_join import parse_args

    parsed = parse_args(args)
    assert (parsed.into, parsed.how, parsed.on) == ("demo.users_purchases", "left", ["user_id"])
