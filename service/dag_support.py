"""What the Airflow DAG files need from icefloe, kept out of the DAG files themselves.

The DAG files import this module only (it imports nothing heavier than PyYAML), so a
DagBag parse stays cheap. Settings come from Airflow Variables at run time, with the
defaults documented here:

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

import math
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from service.catalog import ICEBERG_RUNTIME
from service.config import DEFAULT_CONFIG, PROJECT_ROOT, load_config

JOBS_DIR = PROJECT_ROOT / "jobs"
DEFAULT_CONN_ID = "spark_default"
DEFAULT_MAX_ACTORS = 2
DEFAULT_ACTIONS_PER_ACTOR = 10


def default_config_path() -> str:
    """The ``icefloe_config`` Variable's default: ``$ICEFLOE_CONFIG`` or the project's file."""
    return os.environ.get("ICEFLOE_CONFIG") or str(DEFAULT_CONFIG)


def config_template() -> str:
    """Jinja for the config path in templated fields (the Variable, else the default)."""
    return "{{ var.value.get('icefloe_config', '" + default_config_path() + "') }}"


def icefloe_command(*args: str) -> str:
    """A templated shell command running this environment's ``icefloe`` CLI."""
    import shlex

    cli = " ".join(shlex.quote(a) for a in (sys.executable, "-m", "service"))
    return f'{cli} --config "{config_template()}" ' + " ".join(shlex.quote(a) for a in args)


def backlog_size(config_path: str | Path) -> int:
    """Pending actions on the queue (what the actor runs are sized by)."""
    from service.status import queue_backlog

    return int(queue_backlog(load_config(config_path)))


def spark_submit_kwargs(job: str, config_path: str | Path = DEFAULT_CONFIG) -> dict[str, Any]:
    """``SparkSubmitOperator`` arguments for ``jobs/<job>.py``: the catalog's Spark conf and
    the local jars (cluster masters can override both through the connection/conf)."""
    from service.spark import local_jars, spark_conf
    from service.submit import python_env

    cfg = load_config(config_path)
    conf = spark_conf(cfg, under_submit=True)
    jars = local_jars()
    return {
        "application": str(JOBS_DIR / f"{job}.py"),
        "conf": conf,
        "jars": ",".join(jars) if jars else None,
        "packages": None if jars else ICEBERG_RUNTIME,
        "name": f"icefloe-{job.replace('_', '-')}",
        # the driver (and in-process executors) run this environment's Python, icefloe on it
        "env_vars": {
            "ICEFLOE_CONFIG": str(config_path),
            "PYTHONPATH": str(PROJECT_ROOT),
            **python_env(cfg.spark.master),
        },
    }


def actor_runs(
    backlog: int, max_actors: int, actions_per_actor: int, config_path: str | Path
) -> list[list[str]]:
    """Application args of each actor run: enough runs for the backlog, at most ``max_actors``."""
    if backlog <= 0:
        return []
    runs = min(max_actors, math.ceil(backlog / max(1, actions_per_actor)))
    args = [
        "--config",
        str(config_path),
        "--max-actions",
        str(actions_per_actor),
        "--idle-exit",
        "5",
    ]
    return [list(args) for _ in range(max(1, runs))]


def adhoc_args(conf: Mapping[str, Any], config_path: str | Path) -> list[str]:
    """Validated args for ``jobs/scripts/actor_optimize.py`` from ``dag_run.conf``/params.

    ``{"table": "ns.tbl", "partitions": ["day=2026-11-01"], "action": "merge", "dry_run": false}``
    """
    from service.config import parse_table_identifier
    from service.errors import UsageError

    table = str(conf.get("table", ""))
    parse_table_identifier(table)
    action = str(conf.get("action", "merge"))
    if action not in ("merge", "sort"):
        raise UsageError(f"bad action {action!r}: expected merge or sort")
    args = [table, "--action", action, "--config", str(config_path), "--json"]
    partitions = conf.get("partitions") or []
    if isinstance(partitions, str):
        partitions = [partitions]
    for p in partitions:
        if not isinstance(p, str) or "=" not in p:
            raise UsageError(f"bad partition {p!r}: expected COL=VALUE")
        args += ["--partition", p]
    if conf.get("dry_run"):
        args.append("--dry-run")
    return args


def skew_runs(spec: Mapping[str, Any], config_path: str | Path) -> list[list[str]]:
    """Args of one ``jobs/scripts/skew_detect.py`` run per configured table.

    ``spec = {"tables": [{"table": "demo.events", "keys": ["user_id"]}], ...}``
    """
    from service.config import parse_table_identifier

    runs = []
    for entry in spec.get("tables", []):
        parse_table_identifier(entry["table"])
        args = [entry["table"], "--config", str(config_path), "--json"]
        for key in entry.get("keys", []):
            args += ["--key", key]
        runs.append(args)
    return runs


def salted_join_args(spec: Mapping[str, Any] | None, config_path: str | Path) -> list[list[str]]:
    """Args of the ``jobs/scripts/salted_join.py`` run, if ``spec["join"]`` names one (the job's own
    pure argument builder, so the two never drift apart)."""
    from jobs.skew.salted_join import build_command_args
    from service.config import parse_table_identifier

    join = (spec or {}).get("join")
    if not join:
        return []
    for key in ("left", "right", "output"):
        parse_table_identifier(join[key])
    on = [join["on"]] if isinstance(join["on"], str) else list(join["on"])
    args = build_command_args(
        join["left"], join["right"], on, join.get("how", "inner"), join["output"],
        mode=join.get("mode", "replace"),
    )
    return [[*args, "--reuse-reports", "--config", str(config_path)]]
