"""``icefloe actor``: take actions off the queue and run them (``service.actor.loop``)."""

from __future__ import annotations

import click

from service.cli.common import (
    Context,
    FiniteFloat,
    pass_ctx,
)


@click.command()
@click.option(
    "--max-actions",
    type=click.IntRange(min=1),
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
@pass_ctx
def actor(ctx: Context, max_actions: int | None, idle_exit: float | None) -> None:
    """Run actions from the queue with Spark until told to stop."""
    # start-up: the actor loop reaches the rewrite engines
    from service.actor.loop import run_actor

    report = run_actor(ctx.cfg, max_actions, idle_exit)
    click.echo(f"actor done={report.done} failed={report.failed} lost={report.lost}")


COMMANDS = [actor]
