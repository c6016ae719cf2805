"""``icefloe history``: what icefloe did, from the durable action history.

Reads the history table (``history.table``; PyIceberg, nothing written) and, while Redis
answers, the records actors handed over that are not appended yet (marked ``pending``): so
an action shows here as soon as it ends. Pending records last only while an actor runs:
each appends what is pending before it exits (and on SIGTERM), the leader every
``history.flush_seconds``.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import click
from rich.table import Table as RichTable

from icefloe.app.cli.common import Context, IntRange, emit, make_console, pass_ctx
from icefloe.base.config import Config, parse_table_identifier
from icefloe.base.errors import ServiceUnavailable, UsageError
from icefloe.state.ledger import Ledger

console = make_console()
MIB = 1 << 20
_SPAN = re.compile(r"^(\d+)([smhdw])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_since(text: str, now: datetime) -> datetime:
    """``7d``, ``12h``, ``30m`` (before now) or an ISO date or time (UTC unless it says)."""
    span = _SPAN.match(text.strip())
    if span:
        try:
            return now - timedelta(**{_UNITS[span.group(2)]: int(span.group(1))})
        except OverflowError:  # past year 1, or past what a timedelta holds
            raise UsageError(
                f"--since {text!r}: a span that reaches before year 1; give a shorter one"
            ) from None
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise UsageError(
            f"--since {text!r}: give a span such as 7d, 12h, 30m, or an ISO date such as "
            "2026-11-01 or 2026-11-01T08:00"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


@click.command()
@click.argument("table", required=False)
@click.option("--since", metavar="WHEN", help="Only actions ended since: 7d, 12h, or a date.")
@click.option("--limit", type=IntRange(min=1), default=None, help="The newest N only.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@pass_ctx
def history(
    ctx: Context, table: str | None, since: str | None, limit: int | None, as_json: bool
) -> None:
    """Every action icefloe ran (on TABLE, or on every table), oldest first: when, what,
    files and bytes rewritten, entropy before and after, the commit, the outcome. Records
    not appended to the history table yet (an actor still running) are marked pending."""
    # start-up: the catalog and the history table only when the command runs
    from icefloe.base.catalog import load_catalog
    from icefloe.jobs.history.flush import read_all

    if table is not None:
        parse_table_identifier(table)  # a bad identifier: one line, before any connection
    start = None if since is None else parse_since(since, datetime.now(tz=UTC))
    rows = read_all(ctx.cfg, load_catalog(ctx.cfg, read_only=True), _ledger(ctx.cfg), table, start)
    if limit is not None:
        rows = rows[-limit:]
    emit(rows, as_json, _render)


def _ledger(cfg: Config) -> Ledger | None:
    """The Redis ledger for the records not appended yet; None (one warning) when Redis
    does not answer: the table's records are shown alone."""
    # start-up: redis-py only when the command runs
    from icefloe.state.open import open_state

    try:
        ledger = open_state(cfg).ledger
        ledger.counters()  # reachable now, or not at all
    except ServiceUnavailable as e:
        click.echo(f"icefloe: warning: {e}: records not yet appended are not shown", err=True)
        return None
    return ledger


def _render(rows: list[dict[str, Any]]) -> None:
    out = RichTable(title=f"icefloe history ({len(rows)} actions)")
    for col in (
        "ended (UTC)",
        "table",
        "action",
        "parts",
        "files",
        "MiB",
        "RMSE MiB",
        "s",
        "outcome",
    ):
        out.add_column(col)
    for r in rows:
        before, after = r.get("mse_before"), r.get("mse_after")
        rmse = "-" if before is None else f"{before**0.5 / MIB:.1f}"
        if after is not None:
            rmse += f" → {after**0.5 / MIB:.1f}"
        if r.get("mse_predicted") is not None:
            rmse += f" (planned {r['mse_predicted'] ** 0.5 / MIB:.1f})"
        outcome = r.get("outcome") or ("ok" if r.get("ok") else "failed")
        if r.get("pending"):
            outcome += " (pending)"
        out.add_row(
            r["ended_at"].strftime("%Y-%m-%d %H:%M:%S"),
            r["table_name"],
            r["action"],
            str(len(r.get("partitions") or []) or "-"),
            str(r.get("files_rewritten") if r.get("files_rewritten") is not None else "-"),
            f"{(r.get('bytes_rewritten') or 0) / MIB:.1f}",
            rmse,
            "-" if r.get("seconds") is None else f"{r['seconds']:.1f}",
            outcome,
        )
    console.print(out)


COMMANDS = [history]
