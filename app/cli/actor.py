"""``icefloe actor``: take actions off the queue and run them (``icefloe.service.actor.loop``)."""

from __future__ import annotations

import click

from icefloe.app.cli.common import (
    Context,
    FiniteFloat,
    IntRange,
    pass_ctx,
)


@click.command()
@click.option(
    "--max-actions",
    type=IntRange(min=1),
    default=None,
    metavar="N",
    help="Exit after taking this many actions (a table's batch counts as one).",
)
@click.option(
    "--idle-exit",
    type=FiniteFloat(min=0),
    default=None,
    metavar="SECONDS",
    help="Exit after this long without work.",
)
@click.option(
    "--max-seconds",
    type=FiniteFloat(min=0),
    default=None,
    metavar="SECONDS",
    help="Take no new action after this long; the one under way is finished first.",
)
@pass_ctx
def actor(
    ctx: Context, max_actions: int | None, idle_exit: float | None, max_seconds: float | None
) -> None:
    """Run actions from the queue with Spark until told to stop. SIGTERM stops it after
    the action under way; before it exits, what it ran is appended to the history table."""
    # start-up: the actor loop reaches the rewrite engines
    from icefloe.service.actor.loop import run_actor

    report = run_actor(ctx.cfg, max_actions, idle_exit, max_seconds=max_seconds)
    stopped = f" stopped: {report.stopped}" if report.stopped else ""
    click.echo(f"actor done={report.done} failed={report.failed} lost={report.lost}{stopped}")


COMMANDS = [actor]
