"""``icefloe status``: the queue, leases, deciders, actors and recent actions
(``icefloe.service.observe.status``)."""

from __future__ import annotations

import json
import time
from typing import Any

import click

from icefloe.app.cli.common import Context, make_console, pass_ctx
from icefloe.base.config import parse_table_identifier
from icefloe.base.errors import OperationFailed, UsageError
from icefloe.base.redis_client import connect
from icefloe.state.open import open_state


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
    from icefloe.service.observe.status import gather, render

    for name in tables:
        parse_table_identifier(name)
        if not ctx.cfg.is_managed(name):
            raise UsageError(
                f"table {name!r} is not managed (managed.namespaces, managed.tables or "
                "tables.<name> in the config)"
            )
    client = connect(ctx.cfg)
    data = gather(ctx.cfg, client, open_state(ctx.cfg, client).queue, time.time(), tables)
    for name in tables:
        if "seen_at" not in data["tables"][name]:  # only a kept record has one
            raise OperationFailed(
                f"the decider keeps no record of table {name!r}: no decider has seen it yet "
                "(`icefloe tables --fresh` reads it from the catalog)"
            )
    if as_json:
        click.echo(json_text(data))
    else:
        render(data, make_console())


def json_text(data: dict[str, Any]) -> str:
    """``data`` as JSON, indented with its keys sorted, but each table on one line: the
    tables through json's C encoder (``indent`` runs its Python one, most of a second at
    10,000 tables)."""
    rest = json.dumps({**data, "tables": {}}, indent=2, sort_keys=True, default=str)
    entries = ",\n".join(
        f"    {json.dumps(name)}: {json.dumps(row, sort_keys=True, default=str)}"
        for name, row in sorted(data["tables"].items())
    )
    tables = "{\n" + entries + "\n  }" if entries else "{}"
    return rest.replace('\n  "tables": {}', '\n  "tables": ' + tables, 1)


COMMANDS = [status]
