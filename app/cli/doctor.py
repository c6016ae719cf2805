"""``icefloe doctor``: check what a deployment needs and say how to fix what fails."""

from __future__ import annotations

from typing import Any

import click
from rich.table import Table as RichTable

from icefloe.app.cli.common import Context, emit, make_console, pass_ctx

console = make_console()


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@pass_ctx
def doctor(ctx: Context, as_json: bool) -> None:
    """Check the packages, Java, the jars, the catalog, the warehouse (a write-read-delete
    probe), the Spark master and Redis; say how to fix what fails. Prints no secret."""
    # start-up: the checks and probes only for doctor
    from icefloe.app.ops.doctor import run_checks

    checks = run_checks(ctx.cfg)

    def render(_: Any) -> None:
        out = RichTable(title=f"icefloe doctor ({ctx.cfg.source})")
        for col in ("check", "status", "detail", "fix"):
            out.add_column(col)
        for c in checks:
            out.add_row(c.name, "[green]ok[/]" if c.ok else "[red]FAIL[/]", c.detail, c.fix)
        console.print(out)

    emit(
        {"ok": all(c.ok for c in checks), "checks": [c.to_dict() for c in checks]}, as_json, render
    )
    if not all(c.ok for c in checks):
        raise SystemExit(1)


COMMANDS = [doctor]
