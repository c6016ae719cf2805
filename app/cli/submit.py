"""``icefloe submit``: one of icefloe's Spark jobs through ``spark-submit``."""

from __future__ import annotations

import dataclasses
import os
import shlex
import subprocess
import sys
from pathlib import Path

import click

from icefloe.app.cli.common import Context, pass_ctx
from icefloe.base.errors import UsageError
from icefloe.base.submit import python_env, submit_command_for

JOB_COMMANDS = {  # each job script hands its arguments to this icefloe command
    "actor": ("actor",),
    "actor_optimize": ("optimize",),
    "skew_detect": ("skew", "detect"),
    "salted_join": ("skew", "join"),
}
SUBMITTABLE = tuple(JOB_COMMANDS)


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
    if master is not None and not master.strip():
        raise UsageError(
            "--master is empty: give a Spark master (local[*], spark://H:7077, yarn...)"
        )
    if master:
        cfg = dataclasses.replace(cfg, spark=dataclasses.replace(cfg.spark, master=master))
    check_job_args(job, args)
    argv = submit_command_for(cfg, job, list(args), deploy_mode=deploy_mode)
    argv[0] = str(Path(sys.executable).with_name("spark-submit"))
    if print_only:
        click.echo(" ".join(shlex.quote(a) for a in argv))
        return
    env = {**os.environ, **python_env(cfg.spark.master, deploy_mode)}
    if master:  # the driver loads the config again: it must see the master it runs on
        env["ICEFLOE_SPARK__MASTER"] = master
    raise SystemExit(subprocess.run(argv, env=env).returncode)


def check_job_args(job: str, args: tuple[str, ...]) -> None:
    """Parse ``args`` as the job's own command will (its options, their types and ranges)
    before anything is submitted: a bad one is a UsageError here, not a failed Spark job
    minutes later. ``--config`` is the submitted config's, and left out."""
    root = click.get_current_context().find_root()
    command: click.Command | None = root.command
    for name in JOB_COMMANDS[job]:
        assert isinstance(command, click.Group)
        command = command.get_command(root, name)
    assert command is not None
    rest, skip = [], False
    for i, arg in enumerate(args):
        if skip or arg == "--config" or arg.startswith("--config="):
            skip = arg == "--config" and not skip and i + 1 < len(args)
            continue
        rest.append(arg)
    try:
        command.make_context(" ".join(JOB_COMMANDS[job]), rest, parent=root)
    except click.ClickException as e:
        raise UsageError(f"{job}'s arguments: {e.format_message()}") from None


COMMANDS = [submit]
