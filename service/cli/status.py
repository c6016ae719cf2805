"""``icefloe status``: the queue, leases, deciders, actors and recent actions
(``service.observe.status``)."""

from __future__ import annotations

import time

import click

from service.base.config import parse_table_identifier
from service.base.redis_client import connect
from service.cli.common import (
    Context,
    emit,
    make_console,
    pass_ctx,
)
from service.state.queue.redis import open_queue


@click.command()
@click.option(
    "--table",
    "tables",
    multiple=True,
    metavar="TABLE",
    help="Also list TABLE's partitions over tolerance and its clustering (repeatable).",
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@pass_ctx
def status(ctx: Context, tables: tuple[str, ...], as_json: bool) -> None:
    """Every table as the decider keeps it (worst first; one Redis read, no catalog call),
    queue depth by class, leases, dead letters, recent actions."""
    # start-up: every store's reader only for status
    from service.observe.status import gather, render

    for name in tables:
        parse_table_identifier(name)
    client = connect(ctx.cfg)
    data = gather(ctx.cfg, client, open_queue(ctx.cfg, client), time.time(), tables)
    emit(data, as_json, lambda d: render(d, make_console()))


COMMANDS = [status]
