"""What the Airflow DAG files need from icefloe, kept out of the DAG files themselves.

The DAG files import this module only (it imports nothing heavier than PyYAML), so a
DagBag parse stays cheap, and parsing loads no config and asks nothing of Spark: every
setting comes from Airflow Variables at run time, inside the tasks (the spark-submit
settings too: a planning task returns the full ``SparkSubmitOperator`` arguments of each
run, built from the ``icefloe_config`` Variable's config, and the operator is mapped over
them with ``expand_kwargs``, each run with its own ``execution_timeout`` from the config's
``airflow:`` section; :mod:`icefloe.app.dags.limits` has what is fixed at parse time). The
Variables, with their defaults:

==========================  ====================================================
Variable                    default
==========================  ====================================================
``icefloe_config``          ``$ICEFLOE_CONFIG``, else ``conf/icefloe.yaml`` of the project
``icefloe_spark_conn_id``   ``spark_default`` (its host is the Spark master)
``icefloe_max_actors``      ``2``: actor runs per ``icefloe_optimize`` run at most
``icefloe_actions_per_actor`` ``10``: actions one actor run takes before it exits
``icefloe_skew``            ``{"tables": [], "join": null}``, see :func:`skew_runs`
==========================  ====================================================
"""

from __future__ import annotations

import json
import math
import os
import shlex
import sys
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

import icefloe
from icefloe.base.config import (
    ACTIONS,
    DEFAULT_CONFIG,
    PROJECT_ROOT,
    AirflowSettings,
    load_config,
    parse_table_identifier,
)
from icefloe.base.errors import UsageError
from icefloe.base.spark import submit_conf
from icefloe.base.submit import python_env
from icefloe.base.versions import jar_settings

SCRIPTS_DIR = PROJECT_ROOT / "app" / "scripts"
IMPORT_ROOT = Path(icefloe.__file__).resolve().parent.parent
"""The folder that holds the ``icefloe`` package: the checkout, or site-packages."""
DEFAULT_CONN_ID = "spark_default"
DEFAULT_MAX_ACTORS = 2
DEFAULT_ACTIONS_PER_ACTOR = 10
CONFIG_VARIABLE = "icefloe_config"

JINJA_FILTERS = {"shell_quote": shlex.quote}
"""The DAGs' ``user_defined_filters``: :func:`icefloe_command` quotes the rendered config
path with ``shell_quote``."""


def default_config_path() -> str:
    """The ``icefloe_config`` Variable's default: ``$ICEFLOE_CONFIG`` or the project's file."""
    return os.environ.get("ICEFLOE_CONFIG") or str(DEFAULT_CONFIG)


def config_path() -> str:
    """The ``icefloe_config`` Variable (call it inside a task, never at parse time)."""
    # airflow: only inside a task (this module imports without Airflow)
    from airflow.sdk import Variable

    return str(Variable.get(CONFIG_VARIABLE, default=default_config_path()))


def config_template() -> str:
    """Jinja for the config path in templated fields (the Variable, else the default),
    shell-quoted once rendered (needs :data:`JINJA_FILTERS`)."""
    default = json.dumps(default_config_path())  # a valid Jinja string literal
    return "{{ var.value.get('" + CONFIG_VARIABLE + "', " + default + ") | shell_quote }}"


def icefloe_command(*args: str) -> str:
    """A templated shell command running this environment's ``icefloe`` CLI; the config path
    is quoted for the shell after rendering, so no part of it is expanded."""
    cli = " ".join(shlex.quote(a) for a in (sys.executable, "-m", "icefloe"))
    return f"{cli} --config {config_template()} " + " ".join(shlex.quote(a) for a in args)


def backlog_size(config_path: str | Path) -> int:
    """Pending actions on the queue (what the actor runs are sized by)."""
    # DAG parsing stays light: every store's reader only inside the task
    from icefloe.service.observe.status import queue_backlog

    return int(queue_backlog(load_config(config_path)))


def airflow_settings(config_path: str | Path) -> AirflowSettings:
    """The config's ``airflow:`` section (call it inside a task, never at parse time)."""
    return load_config(config_path).airflow


def run_timeout(job: str, settings: AirflowSettings) -> timedelta:
    """One spark-submit run's ``execution_timeout``: an actor's ``--max-seconds`` and the grace
    after it (the action in flight finishing); any other job's ``job_timeout_seconds``."""
    if job == "actor":
        return timedelta(seconds=settings.actor_timeout_seconds)
    return timedelta(seconds=settings.job_timeout_seconds)


def spark_submit_kwargs(job: str, config_path: str | Path) -> dict[str, Any]:
    """``SparkSubmitOperator`` arguments for ``app/scripts/<job>.py`` from the config at
    ``config_path``: the catalog's Spark conf and the jars (``icefloe.base.versions``; cluster
    masters can override both through the connection/conf) and the run's
    :func:`run_timeout`. Loads the config: call it at run time."""
    cfg = load_config(config_path)
    jars = jar_settings()
    return {
        "application": str(SCRIPTS_DIR / f"{job}.py"),
        "conf": submit_conf(cfg),  # no secret: the job's driver loads them from the config
        "jars": ",".join(jars.jars) or None,
        "packages": ",".join(jars.packages) or None,
        "name": f"icefloe-{job.replace('_', '-')}",
        "execution_timeout": run_timeout(job, cfg.airflow),  # replaces the task's ceiling
        # the driver (and in-process executors) run this environment's Python, icefloe on it
        "env_vars": {
            "ICEFLOE_CONFIG": str(config_path),
            "PYTHONPATH": str(IMPORT_ROOT),
            **python_env(cfg.spark.master),
        },
    }


def submit_runs(job: str, config_path: str | Path, runs: list[list[str]]) -> list[dict[str, Any]]:
    """One ``SparkSubmitOperator`` kwargs dict per run of ``job`` (for ``expand_kwargs``):
    :func:`spark_submit_kwargs` plus the run's ``application_args``."""
    if not runs:
        return []
    base = spark_submit_kwargs(job, config_path)
    return [{**base, "application_args": list(args)} for args in runs]


def actor_runs(
    backlog: int, max_actors: int, actions_per_actor: int, max_seconds: int, config_path: str | Path
) -> list[list[str]]:
    """Application args of each actor run: enough runs for the backlog, at most ``max_actors``,
    each taking new actions for ``max_seconds`` at most (``airflow.actor_max_seconds``, which
    its :func:`run_timeout` allows for)."""
    if backlog <= 0:
        return []
    runs = min(max_actors, math.ceil(backlog / max(1, actions_per_actor)))
    args = ["--max-actions", str(actions_per_actor), "--max-seconds", str(max_seconds)]
    args += ["--idle-exit", "5"]
    args += ["--config", str(config_path)]
    return [list(args) for _ in range(max(1, runs))]


def adhoc_args(conf: Mapping[str, Any], config_path: str | Path) -> list[str]:
    """Validated args for ``app/scripts/actor_optimize.py`` (``icefloe optimize``) from
    ``dag_run.conf``/params.

    ``{"table": "ns.tbl", "partitions": ["day=2026-11-01"], "action": "merge", "dry_run": false}``
    """
    table = str(conf.get("table", ""))
    parse_table_identifier(table)
    action = str(conf.get("action", "merge"))
    if action not in ACTIONS:
        raise UsageError(f"bad action {action!r}: expected one of {', '.join(ACTIONS)}")
    args = [table, "--action", action, "--json"]
    partitions = conf.get("partitions") or []
    if isinstance(partitions, str):
        partitions = [partitions]
    for p in partitions:
        if not isinstance(p, str) or "=" not in p:
            raise UsageError(f"bad partition {p!r}: expected COL=VALUE")
        args += ["--partition", p]
    if conf.get("dry_run"):
        args.append("--dry-run")
    return [*args, "--config", str(config_path)]


def skew_runs(spec: Mapping[str, Any], config_path: str | Path) -> list[list[str]]:
    """Args of one ``app/scripts/skew_detect.py`` (``icefloe skew detect``) run per configured
    table.

    ``spec = {"tables": [{"table": "demo.events", "keys": ["user_id"]}], ...}``
    """
    runs = []
    for entry in spec.get("tables", []):
        parse_table_identifier(entry["table"])
        args = [entry["table"], "--json"]
        for key in entry.get("keys", []):
            args += ["--key", key]
        runs.append([*args, "--config", str(config_path)])
    return runs


def salted_join_args(spec: Mapping[str, Any] | None, config_path: str | Path) -> list[list[str]]:
    """Args of the ``app/scripts/salted_join.py`` run, if ``spec["join"]`` names one (the job's own
    pure argument builder, so the two never drift apart)."""
    # DAG parsing stays light: the skew jobs only inside the task
    from icefloe.jobs.skew.join_job import build_command_args

    join = (spec or {}).get("join")
    if not join:
        return []
    for key in ("left", "right", "output"):
        parse_table_identifier(join[key])
    on = [join["on"]] if isinstance(join["on"], str) else list(join["on"])
    args = build_command_args(
        join["left"],
        join["right"],
        on,
        join.get("how", "inner"),
        join["output"],
        mode=join.get("mode", "replace"),
    )
    return [[*args, "--reuse-reports", "--config", str(config_path)]]
