"""``icefloe submit``: one of icefloe's Spark jobs through ``spark-submit``."""

from __future__ import annotations

import dataclasses
import os
import shlex
import subprocess
import sys
from pathlib import Path

import click

from service.base.errors import UsageError
from service.base.submit import python_env, submit_command_for
from service.cli.common import Context, pass_ctx

SUBMITTABLE = ("actor", "actor_optimize", "skew_detect", "salted_join")


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--print", "print_only", is_flag=True, help="Print the command, do not run it.")
@click.option("--master", default=None, help="Spark master (default: spark.master of the config).")
@click.option("--deploy-mode", type=click.Choice(["client", "cluster"]), default=None)
@click.argument("job")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@pass_ctx
def submit(
    ctx: Context,
    print_only: bool,
    master: str | None,
    deploy_mode: str | None,
    job: str,
    args: tuple[str, ...],
) -> None:
    """spark-submit JOB (actor, actor_optimize, skew_detect, salted_join) with the config's
    master, catalog settings and jars; ARGS go to the job."""
    if job not in SUBMITTABLE:
        raise UsageError(f"unknown job {job!r} (known: {', '.join(SUBMITTABLE)})")
    cfg = ctx.cfg
    if master:
        cfg = dataclasses.replace(cfg, spark=dataclasses.replace(cfg.spark, master=master))
    argv = submit_command_for(cfg, job, list(args), deploy_mode=deploy_mode)
    argv[0] = str(Path(sys.executable).with_name("spark-submit"))
    if print_only:
        click.echo(" ".join(shlex.quote(a) for a in argv))
        return
    env = {**os.environ, **python_env(cfg.spark.master, deploy_mode)}
    if master:  # the driver loads the config again: it must see the master it runs on
        env["ICEFLOE_SPARK__MASTER"] = master
    raise SystemExit(subprocess.run(argv, env=env).returncode)


COMMANDS = [submit]
