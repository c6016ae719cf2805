"""The DAG files: they load, their shape is what the docs say, their spark-submit is exact,
every task has a timeout and retries only where a second attempt is safe."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from icefloe.app.dags import support as ds
from icefloe.base.config import DEFAULT_CONFIG, PROJECT_ROOT, AirflowSettings, load_config
from icefloe.base.config.airflow_settings import MAX_ACTOR_RUN_SECONDS, MAX_JOB_SECONDS
from icefloe.base.errors import UsageError
from icefloe.base.versions import EXTENSIONS_CLASS, ICEBERG_EXTENSIONS_CLASS, extensions_jar
from tests.dags.conftest import DAGS, airflow_env

pytestmark = pytest.mark.unit

JARS = ",".join(
    str(PROJECT_ROOT / ".jars" / j)
    for j in (
        "iceberg-aws-bundle-1.12.0.jar",
        "iceberg-spark-runtime-4.1_2.13-1.12.0.jar",
        extensions_jar(),  # icefloe's, built by scripts/bootstrap.sh
        "postgresql-42.7.8.jar",
        "sqlite-jdbc-3.50.3.0.jar",
    )
)


def test_no_init_in_airflow_folder() -> None:
    assert not list((PROJECT_ROOT / "airflow").rglob("__init__.py"))


def test_dagbag_loads_without_errors(dagbag: Any) -> None:
    assert dagbag.import_errors == {}
    assert set(dagbag.dag_ids) == {"icefloe_optimize", "icefloe_skew", "icefloe_adhoc"}


PARSE_WITHOUT_CONFIG = """
import sys
import icefloe.base.config

def refuse(*args, **kwargs):
    raise AssertionError("a DAG file loaded the icefloe config while parsing")

icefloe.base.config.load_config = refuse
from airflow.dag_processing.dagbag import DagBag

bag = DagBag(sys.argv[1])
print(sorted(bag.dag_ids), bag.import_errors)
sys.exit(1 if bag.import_errors else 0)
"""


def test_parsing_the_dags_loads_no_config(tmp_path: Path) -> None:
    """A DagBag parse reads no config (it may not even exist there) and starts no Spark."""
    env = {
        **os.environ,
        **airflow_env(tmp_path / "airflow"),
        "ICEFLOE_CONFIG": str(tmp_path / "missing.yaml"),
    }
    out = subprocess.run(
        [sys.executable, "-c", PARSE_WITHOUT_CONFIG, str(DAGS)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=PROJECT_ROOT,
    )
    assert out.returncode == 0, (out.stdout[-2000:], out.stderr[-2000:])
    assert "icefloe_optimize" in out.stdout and "{}" in out.stdout
    assert "pyspark" not in out.stderr


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


def submit_argv(task: Any, job: str, args: list[str]) -> list[str]:
    """The spark-submit argv of one mapped run of ``task``: the operator kwargs the planning
    task returns at run time (here from the default config), rendered by Airflow's hook."""
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    (kw,) = ds.submit_runs(job, str(DEFAULT_CONFIG), [args])
    hook = SparkSubmitHook(
        conf=kw["conf"],
        conn_id=task.partial_kwargs["conn_id"],
        jars=kw["jars"],
        packages=kw["packages"],
        name=kw["name"],
        env_vars=kw["env_vars"],
        application_args=kw["application_args"],
    )
    return list(hook._build_spark_submit_command(kw["application"]))


def test_spark_submit_settings_are_mapped_at_run_time(dagbag: Any) -> None:
    """No spark-submit setting is fixed at parse time: each SparkSubmitOperator is mapped
    over the kwargs its planning task returns."""
    for dag_id, task_id in (
        ("icefloe_optimize", "actor"),
        ("icefloe_adhoc", "optimize"),
        ("icefloe_skew", "skew_detect"),
        ("icefloe_skew", "salted_join"),
    ):
        task = dagbag.dags[dag_id].get_task(task_id)
        assert set(task.partial_kwargs) & {"conf", "jars", "packages", "application"} == set()
        assert task.partial_kwargs["conn_id"] == ds.DEFAULT_CONN_ID


def test_bash_commands_quote_the_config_path(dagbag: Any) -> None:
    """The rendered config path is one shell word, expanded by nothing."""
    import shlex

    from jinja2 import Environment

    env = Environment()
    env.filters.update(ds.JINJA_FILTERS)
    command = dagbag.dags["icefloe_optimize"].get_task("decide_once").bash_command
    path = "/x/$(touch y) `z` 'c'.yaml"
    argv = shlex.split(env.from_string(command).render(var={"value": {"icefloe_config": path}}))
    assert argv[argv.index("--config") + 1] == path
    assert argv[-2:] == ["decide", "--once"]
    default = shlex.split(env.from_string(command).render(var={"value": {}}))
    assert default[default.index("--config") + 1] == ds.default_config_path()


def expected_conf() -> list[str]:
    from icefloe.base.config import load_config

    lake = load_config(DEFAULT_CONFIG).catalog
    pairs = [
        ("spark.sql.extensions", f"{ICEBERG_EXTENSIONS_CLASS},{EXTENSIONS_CLASS}"),
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
    args = ds.actor_runs(
        backlog=25, max_actors=2, actions_per_actor=10, max_seconds=900, config_path="/c.yaml"
    )[0]
    assert submit_argv(task, "actor", args) == [
        "spark-submit",
        "--master",
        "local[2]",
        *expected_conf(),
        "--jars",
        JARS,
        "--name",
        "icefloe-actor",
        str(PROJECT_ROOT / "app" / "scripts" / "actor.py"),
        "--max-actions",
        "10",
        "--max-seconds",
        "900",
        "--idle-exit",
        "5",
        "--config",
        "/c.yaml",
    ]
    (kw,) = ds.submit_runs("actor", str(DEFAULT_CONFIG), [args])
    assert kw["env_vars"]["PYSPARK_PYTHON"] == sys.executable


def test_adhoc_spark_submit_argv_is_exact(dagbag: Any) -> None:
    task = dagbag.dags["icefloe_adhoc"].get_task("optimize")
    conf = {"table": "demo.events", "partitions": ["day=2026-11-02"], "action": "sort"}
    assert submit_argv(task, "actor_optimize", ds.adhoc_args(conf, "/c.yaml")) == [
        "spark-submit",
        "--master",
        "local[2]",
        *expected_conf(),
        "--jars",
        JARS,
        "--name",
        "icefloe-actor-optimize",
        str(PROJECT_ROOT / "app" / "scripts" / "actor_optimize.py"),
        "demo.events",
        "--action",
        "sort",
        "--json",
        "--partition",
        "day=2026-11-02",
        "--config",
        "/c.yaml",
    ]


def test_skew_spark_submit_argv_is_exact(dagbag: Any) -> None:
    task = dagbag.dags["icefloe_skew"].get_task("skew_detect")
    spec = {"tables": [{"table": "demo.events", "keys": ["user_id", "region"]}]}
    (args,) = ds.skew_runs(spec, "/c.yaml")
    expected = [
        str(PROJECT_ROOT / "app" / "scripts" / "skew_detect.py"),
        "demo.events",
        "--json",
        "--key",
        "user_id",
        "--key",
        "region",
        "--config",
        "/c.yaml",
    ]
    assert submit_argv(task, "skew_detect", args)[-len(expected) :] == expected
    assert parsed_by_the_cli(("skew", "detect"), args)["keys"] == ("user_id", "region")


def test_actor_runs_follow_the_backlog() -> None:
    assert ds.actor_runs(0, 4, 10, 900, "c") == []
    assert len(ds.actor_runs(1, 4, 10, 900, "c")) == 1
    assert len(ds.actor_runs(35, 4, 10, 900, "c")) == 4
    assert len(ds.actor_runs(1000, 3, 10, 900, "c")) == 3


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
    spec = {
        "join": {
            "left": "demo.users",
            "right": "demo.purchases",
            "on": "user_id",
            "how": "left",
            "output": "demo.users_purchases",
        }
    }
    (args,) = ds.salted_join_args(spec, "/c.yaml")
    expected = [
        str(PROJECT_ROOT / "app" / "scripts" / "salted_join.py"),
        "demo.users",
        "demo.purchases",
        "--on",
        "user_id",
        "--how",
        "left",
        "--into",
        "demo.users_purchases",
        "--mode",
        "replace",
        "--reuse-reports",
        "--config",
        "/c.yaml",
    ]
    assert submit_argv(task, "salted_join", args)[-len(expected) :] == expected
    # the command the script runs accepts exactly these arguments
    parsed = parsed_by_the_cli(("skew", "join"), args)
    assert (parsed["into"], parsed["how"], parsed["on"]) == (
        "demo.users_purchases",
        "left",
        ("user_id",),
    )
    assert parsed["reuse_reports"] and parsed["mode"] == "replace"


def parsed_by_the_cli(command: tuple[str, ...], args: list[str]) -> dict[str, Any]:
    """The parameters the ``icefloe`` command a script runs gets from ``args`` (parsed
    only, nothing run), with ``--config`` moved in front as the scripts move it."""
    from icefloe.app.cli import cli
    from icefloe.app.scripts import cli_argv

    argv = cli_argv(command, args)
    assert argv[:2] == ["--config", "/c.yaml"]
    assert argv[2 : 2 + len(command)] == list(command)
    sub: Any = cli
    for name in command:
        sub = sub.commands[name]
    return dict(sub.make_context(command[-1], argv[2 + len(command) :]).params)


def test_adhoc_args_parse_as_icefloe_optimize() -> None:
    conf = {"table": "demo.events", "partitions": ["day=1"], "dry_run": True}
    parsed = parsed_by_the_cli(("optimize",), ds.adhoc_args(conf, "/c.yaml"))
    assert parsed["tables"] == ("demo.events",) and parsed["dry_run"] and parsed["as_json"]
    assert parsed["partitions"] == ("day=1",)
    runs = ds.actor_runs(5, 2, 10, 600, "/c.yaml")
    actor = parsed_by_the_cli(("actor",), runs[0])
    assert (actor["max_actions"], actor["max_seconds"], actor["idle_exit"]) == (10, 600, 5)


# (DAG, task) → retried: a second attempt is safe (app/dags/limits.py says why for each)
RETRIED = {
    ("icefloe_optimize", "decide_once"): True,  # a decider pass is idempotent
    ("icefloe_optimize", "plan_actor_runs"): True,  # reads the backlog
    ("icefloe_optimize", "actor"): True,  # the queue makes actions idempotent
    ("icefloe_optimize", "status_report"): True,  # reads only
    ("icefloe_skew", "plan_detection"): False,  # a bad spec fails again
    ("icefloe_skew", "skew_detect"): True,  # reads; appends a report, the newest wins
    ("icefloe_skew", "plan_join"): False,
    ("icefloe_skew", "salted_join"): False,  # mode append would add the rows twice
    ("icefloe_adhoc", "build_args"): False,  # a bad conf fails again
    ("icefloe_adhoc", "optimize"): True,  # plans again from the table's current state
}


def test_every_task_has_a_timeout_and_retries_only_where_that_is_safe(dagbag: Any) -> None:
    seen = set()
    for dag in dagbag.dags.values():
        for task in dag.tasks:
            key = (dag.dag_id, task.task_id)
            seen.add(key)
            assert isinstance(task.execution_timeout, timedelta), key
            assert timedelta(0) < task.execution_timeout <= timedelta(seconds=MAX_JOB_SECONDS)
            if not RETRIED[key]:
                assert task.retries == 0, key
                continue
            assert task.retries >= 1, key
            assert task.retry_delay >= timedelta(seconds=30), key
            assert task.retry_exponential_backoff > 1, key  # Airflow 3: the multiplier
            assert task.max_retry_delay is not None and task.max_retry_delay >= task.retry_delay
    assert seen == set(RETRIED)


def worst_case(task: Any) -> timedelta:
    """Every attempt timed out, every wait between attempts its longest."""
    waits = task.max_retry_delay * task.retries if task.retries else timedelta(0)
    return task.execution_timeout * (task.retries + 1) + waits


def longest_path(dag: Any) -> timedelta:
    @cache
    def from_task(task_id: str) -> timedelta:
        task = dag.get_task(task_id)
        after = [from_task(t) for t in task.downstream_task_ids]
        return worst_case(task) + max(after, default=timedelta(0))

    return max(from_task(t.task_id) for t in dag.roots)


@pytest.mark.parametrize("dag_id", ["icefloe_optimize", "icefloe_skew", "icefloe_adhoc"])
def test_dagrun_timeout_covers_the_longest_path(dagbag: Any, dag_id: str) -> None:
    """A run ends even where no task's timeout reaches, yet never before its tasks may."""
    dag = dagbag.dags[dag_id]
    assert isinstance(dag.dagrun_timeout, timedelta)
    path = longest_path(dag)
    assert path <= dag.dagrun_timeout <= path + timedelta(minutes=10) * len(dag.tasks)


MAPPED_RUNS = [
    ("icefloe_optimize", "actor", "actor"),
    ("icefloe_adhoc", "optimize", "actor_optimize"),
    ("icefloe_skew", "skew_detect", "skew_detect"),
    ("icefloe_skew", "salted_join", "salted_join"),
]


def test_an_actor_runs_timeout_is_its_max_seconds_plus_the_grace(
    dagbag: Any, tmp_path: Path
) -> None:
    """--max-seconds and the run's execution_timeout come from the config's airflow:
    section at run time; Airflow gives the unmapped task the run's timeout."""
    config = tmp_path / "icefloe.yaml"
    config.write_text(
        "airflow:\n  actor_max_seconds: 600\n  actor_grace_seconds: 300\n"
        "  job_timeout_seconds: 5400\n"
    )
    max_seconds = ds.airflow_settings(config).actor_max_seconds
    (args,) = ds.actor_runs(3, 2, 10, max_seconds, str(config))
    assert args[args.index("--max-seconds") + 1] == "600"
    timeouts = {"actor": timedelta(seconds=600 + 300)}
    for dag_id, task_id, job in MAPPED_RUNS:
        (kw,) = ds.submit_runs(job, str(config), [args if job == "actor" else ["x"]])
        expected = timeouts.get(job, timedelta(seconds=5400))
        assert kw["execution_timeout"] == expected
        task = dagbag.dags[dag_id].get_task(task_id)
        assert task.unmap(kw).execution_timeout == expected  # replaces the task's ceiling


def test_the_default_actor_run_finishes_its_action_before_its_timeout() -> None:
    settings = load_config(DEFAULT_CONFIG).airflow
    (args,) = ds.actor_runs(1, 1, 10, settings.actor_max_seconds, "/c.yaml")
    (kw,) = ds.submit_runs("actor", str(DEFAULT_CONFIG), [args])
    max_seconds = float(args[args.index("--max-seconds") + 1])
    margin = kw["execution_timeout"] - timedelta(seconds=max_seconds)
    assert margin == timedelta(seconds=settings.actor_grace_seconds) >= timedelta(minutes=5)


def test_no_valid_config_outgrows_a_tasks_ceiling(dagbag: Any) -> None:
    """The DAG's dagrun_timeout counts each mapped task's ceiling: no run's timeout is longer."""
    biggest = AirflowSettings(
        actor_max_seconds=MAX_ACTOR_RUN_SECONDS - 60,
        actor_grace_seconds=60,
        job_timeout_seconds=MAX_JOB_SECONDS,
    )
    for dag_id, task_id, job in MAPPED_RUNS:
        ceiling = dagbag.dags[dag_id].get_task(task_id).execution_timeout
        assert ds.run_timeout(job, biggest) == ceiling, (dag_id, task_id)
