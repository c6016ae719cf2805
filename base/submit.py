"""The ``spark-submit`` command line of an icefloe job, as a pure function.

Like Airflow's Spark hook (``_build_spark_submit_command``), the argv is built by one
function of its inputs only, so tests assert it exactly and the decider's launcher and
the Airflow DAGs agree on it. No shell is involved: the result is an argv list, values
are never quoted or interpolated into a command string.

Order: ``spark-submit --master M [--deploy-mode D] [--name N] [--jars a,b]
[--packages p,q] [--py-files x,y] [--conf k=v ...sorted by key] SCRIPT [ARGS...]
[--config PATH]``. ``--config`` goes last, after the application's arguments, because it
is the application's option, not spark-submit's.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from icefloe.base.errors import UsageError
from icefloe.base.spark import in_process_master, submit_conf
from icefloe.base.versions import jar_settings

if TYPE_CHECKING:
    from icefloe.base.config import Config

JOBS_DIR = Path(__file__).resolve().parents[1] / "app" / "scripts"
DEPLOY_MODES = ("client", "cluster")
_JOB_NAME = re.compile(r"^[a-z_][a-z0-9_]*$")


def job_script(job: str, jobs_dir: Path = JOBS_DIR) -> str:
    """``"actor_optimize"`` -> ``<jobs_dir>/actor_optimize.py``; a ``*.py`` path is kept."""
    if job.endswith(".py"):
        return job
    if not _JOB_NAME.match(job):
        raise UsageError(f"bad job {job!r}: expected a job name like actor_optimize or a .py path")
    return str(jobs_dir / f"{job}.py")


def _csv(values: Sequence[str], what: str) -> str:
    for v in values:
        if not v or "," in v or v != v.strip():
            raise UsageError(f"bad {what} entry {v!r}: non-empty, no commas, no surrounding space")
    return ",".join(values)


def build_submit_command(
    job: str,
    *,
    master: str,
    deploy_mode: str | None = None,
    app_name: str | None = None,
    jars: Sequence[str] = (),
    packages: Sequence[str] = (),
    py_files: Sequence[str] = (),
    conf: Mapping[str, str] | None = None,
    config_path: str | None = None,
    args: Sequence[str] = (),
    spark_submit: str = "spark-submit",
    jobs_dir: Path = JOBS_DIR,
) -> list[str]:
    """The argv that runs ``job`` (a name under ``jobs/`` or a ``.py`` path)."""
    if not master or master != master.strip():
        raise UsageError(f"bad Spark master {master!r}")
    if deploy_mode is not None and deploy_mode not in DEPLOY_MODES:
        raise UsageError(f"bad deploy mode {deploy_mode!r}: expected client or cluster")
    cmd = [spark_submit, "--master", master]
    if deploy_mode:
        cmd += ["--deploy-mode", deploy_mode]
    if app_name:
        cmd += ["--name", app_name]
    if jars:
        cmd += ["--jars", _csv(jars, "jars")]
    if packages:
        cmd += ["--packages", _csv(packages, "packages")]
    if py_files:
        cmd += ["--py-files", _csv(py_files, "py-files")]
    for key in sorted(conf or {}):
        if not key or "=" in key or key != key.strip():
            raise UsageError(f"bad Spark conf key {key!r}")
        cmd += ["--conf", f"{key}={(conf or {})[key]}"]
    cmd.append(job_script(job, jobs_dir))
    cmd += [str(a) for a in args]
    if config_path is not None:
        cmd += ["--config", str(config_path)]
    return cmd


def python_env(master: str, deploy_mode: str | None = None) -> dict[str, str]:
    """The ``PYSPARK_*`` variables ``spark-submit`` gets: a client-mode driver runs this
    interpreter, and so do Python tasks under an in-process master (``local[N]``). On a
    cluster the executors run their own Python (a path on this machine means nothing
    there), with the ``spark.executor_deps`` archive on its path."""
    env = {}
    if deploy_mode != "cluster":
        env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    if in_process_master(master):
        env["PYSPARK_PYTHON"] = sys.executable
    return env


def driver_python_conf(conf: Mapping[str, str], deploy_mode: str | None = None) -> dict[str, str]:
    """``spark.pyspark.driver.python``: this interpreter, for a client-mode driver whose conf
    names a Python (``spark.pyspark.python``, e.g. the executors' on a cluster).

    ``spark-submit`` starts the driver's Python with ``spark.pyspark.driver.python``, else
    ``spark.pyspark.python``, and only then ``PYSPARK_DRIVER_PYTHON`` (:func:`python_env`):
    without this the driver would run the executors' Python, which has no icefloe."""
    if deploy_mode == "cluster" or "spark.pyspark.driver.python" in conf:
        return {}
    if "spark.pyspark.python" not in conf:
        return {}
    return {"spark.pyspark.driver.python": sys.executable}


def submit_command_for(
    cfg: Config,
    job: str,
    args: Sequence[str] = (),
    config_path: str | None = None,
    deploy_mode: str | None = None,
) -> list[str]:
    """The argv for ``job`` from the icefloe config: its master, catalog conf and jars.

    Not pure (it looks at ``.jars/``); everything it decides is in ``build_submit_command``.
    """
    jars = jar_settings()
    conf = submit_conf(cfg)  # no secret on a command line: the driver loads the config
    conf.update(driver_python_conf(conf, deploy_mode))
    return build_submit_command(
        job,
        master=cfg.spark.master,
        deploy_mode=deploy_mode,
        app_name=f"icefloe-{job.replace('_', '-')}" if not job.endswith(".py") else None,
        jars=jars.jars,
        packages=jars.packages,
        conf=conf,
        config_path=config_path if config_path is not None else cfg.source,
        args=args,
    )
