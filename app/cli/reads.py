"""``icefloe reads``: what readers do with each managed table, from their scan reports.

Readers report through ``dev.icefloe.iceberg.ReadReporter`` (``--spark-conf`` prints the
settings) or icefloe's REST catalog server; the decider's leader folds their reports into
each table's read statistics every step, and this command folds what is pending first, so
it shows every report that reached Redis.
"""

from __future__ import annotations

import time
from typing import Any

import click
from rich.table import Table as RichTable

from icefloe.app.cli.common import Context, emit, make_console, pass_ctx
from icefloe.base.catalog import load_catalog, managed_tables
from icefloe.base.config import parse_table_identifier
from icefloe.base.errors import UsageError
from icefloe.service.observe.reads import fold_reads, read_rows, reporter_conf, shown
from icefloe.state.open import open_state

console = make_console()
MAX_FOLDS = 100  # folds of cfg.reads.max_per_step reports per call at most


@click.command()
@click.argument("table", required=False)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option(
    "--spark-conf",
    is_flag=True,
    help="Print the Spark settings that make a reader's catalog report its scans, and exit.",
)
@click.option(
    "--catalog",
    metavar="NAME",
    default=None,
    help="With --spark-conf: the reader's name for the catalog (default: catalog.name).",
)
@pass_ctx
def reads(
    ctx: Context, table: str | None, as_json: bool, spark_conf: bool, catalog: str | None
) -> None:
    """Each managed table's readers: scans (and per hour, decayed), data files, bytes and
    planning time per scan, the share of files skipped, the columns filtered on, the last
    read; TABLE: that table only."""
    cfg = ctx.cfg
    if spark_conf:
        conf = reporter_conf(cfg, catalog)
        for key, value in conf.items():
            click.echo(f"{key}={shown(value) if key.endswith('redis-url') else value}")
        return
    if table is not None:
        parse_table_identifier(table)
    managed = managed_tables(cfg, load_catalog(cfg, read_only=True))
    if table is not None and table not in managed:
        raise UsageError(f"table {table!r} is not managed (managed.namespaces, managed.tables)")
    store = open_state(cfg, consumer=f"cli-{ctx.config_path or 'default'}").reads
    for _ in range(MAX_FOLDS):  # what readers reported and no decider folded yet
        if fold_reads(cfg, store, managed, cfg.reads.max_per_step).reports == 0:
            break
    stats = store.stats([table] if table else None)
    rows = read_rows(cfg, {t: s for t, s in stats.items() if t in managed}, time.time())
    data = {"tables": rows, "reports": store.counters() | {"pending": store.lag()}}
    if table is not None and not rows:
        data["tables"] = [{"table": table, "scans": 0, "last_read": None}]
    emit(data, as_json, _render)


def _render(data: dict[str, Any]) -> None:
    out = RichTable(title="reads of managed tables (most read first)")
    cols = ("table", "scans", "per hour", "files/scan", "MiB/scan", "planning ms", "skipped")
    for col in (*cols, "filtered on", "last read"):
        out.add_column(col)
    for r in data["tables"]:
        if not r["scans"]:
            out.add_row(r["table"], "0", *["-"] * (len(cols) - 2), "-", "never")
            continue
        out.add_row(
            r["table"],
            str(r["scans"]),
            f"{r['scans_per_hour']:g}",
            f"{r['files_per_scan']:g}",
            f"{r['bytes_per_scan'] / (1 << 20):.1f}",
            f"{r['planning_ms']:g}",
            f"{r['skipped_share']:.0%}",
            ", ".join(r["filter_columns"][:4]) or "-",
            r["last_read"],
        )
    console.print(out)
    c = data["reports"]
    console.print(
        f"reports: {c['folded']} folded, {c['own']} of icefloe's own rewrites, "
        f"{c['unmanaged']} of unmanaged tables, {c['malformed']} malformed, "
        f"{c['dropped']} dropped by readers, {c['pending']} pending"
    )
    if not data["tables"]:
        console.print("No reads seen yet: `icefloe reads --spark-conf` prints a reader's settings.")


COMMANDS = [reads]
