"""``icefloe tables``: every managed table, its partitions' entropy and its metadata health."""

from __future__ import annotations

import json
import time
from typing import Any

import click
from rich.markup import escape
from rich.table import Table as RichTable

from icefloe.app.cli.common import Context, IntRange, make_console, pass_ctx
from icefloe.base.catalog import load_catalog, managed_tables
from icefloe.base.config import Config
from icefloe.base.config.identifiers import is_namespace
from icefloe.base.errors import OperationFailed, ServiceUnavailable, UsageError, describe
from icefloe.service.observe.kept import kept_names, kept_rows
from icefloe.service.observe.tables import table_summary
from icefloe.state.health import statistics_text

MIB = 1 << 20


console = make_console()


def manages_namespace(cfg: Config, namespace: str) -> bool:
    """Whether the config manages ``namespace`` or a table in it."""
    tables = (*cfg.managed.tables, *cfg.tables)
    return namespace in cfg.managed.namespaces or any(
        t.rsplit(".", 1)[0] == namespace for t in tables
    )


def _fresh_rows(cfg: Config, catalog: Any, names: list[str]) -> list[dict[str, Any]]:
    """Each table's row read from the catalog now (``table_summary``)."""
    rows: list[dict[str, Any]] = []
    for name in names:
        try:  # one broken table (metadata missing, storage refusing) is its row's error
            s = table_summary(cfg, catalog, name)
        except ServiceUnavailable:
            raise  # the catalog itself is gone: the same for every table
        except Exception as e:
            rows.append({"table": name, "error": describe(e)})
            continue
        rows.append(
            {k: s[k] for k in ("table", "health", "files", "bytes", "snapshot_id", "manifests")}
            | {"snapshots": s["snapshots"]}
            | {"delete_files": s["delete_files"], "delete_ratio": s["delete_ratio"]}
            | {"clustering": s["clustering"], "statistics": s["statistics"]}
            | {
                "partitions": len(s["partitions"]),
                "partitions_needing_work": sum(p["needs_work"] for p in s["partitions"]),
                # each partition the decider acts on or holds (``icefloe.optimizer.verdict``)
                "verdicts": {
                    p["key"]: p["verdict"]
                    for p in s["partitions"]
                    if p["verdict"]["state"] != "none"
                },
            }
        )
    return rows


def json_rows(rows: list[dict[str, Any]]) -> str:
    """``rows`` as one JSON array, a row a line (keys sorted): each row through json's C
    encoder (``indent`` runs its Python one, about a second at 10,000 rows)."""
    lines = (json.dumps(r, sort_keys=True, default=str) for r in rows)
    return "[\n" + ",\n".join(lines) + "\n]" if rows else "[]"


def _worst_first(row: dict[str, Any]) -> tuple[int, float]:
    if row.get("seen") is False:
        return (2, 0.0)
    return (0, -1.0) if row.get("error") else (1, float(row["health"]["score"]))


def _seen(row: dict[str, Any]) -> str:
    """When the decider last saw the table (``now``: read fresh)."""
    return "now" if row.get("age_s") is None else f"{row['age_s']:g} s ago"


def _depth_cell(c: dict[str, Any] | None) -> str:
    """Mean clustering depth against the tolerance (``-`` without a layout)."""
    if c is None:
        return "-"
    over = c["mean_depth"] > c["tolerance"] or c["partitions_over"]
    text = f"{c['mean_depth']:.2f}/{c['tolerance']:g}"
    return f"[yellow]{text}[/]" if over else text


def render_partitions(summary: dict[str, Any]) -> None:
    out = RichTable(
        title=(
            f"{summary['table']}  (target {summary['target_file_size_bytes'] / MIB:g} MiB, "
            f"tolerance {summary['tolerance_bytes'] / MIB:g} MiB)"
        )
    )
    cols = ("partition", "files", "MiB", "MSE (MiB²)", "RMSE/target", "depth", "state")
    for col in cols:
        out.add_column(col, justify="left" if col in ("partition", "state") else "right")
    for p in summary["partitions"]:
        out.add_row(
            p["partition"] or "(unpartitioned)",
            str(p["files"]),
            f"{p['bytes'] / MIB:.2f}",
            f"{p['mse'] / MIB**2:.3f}",
            f"{p['rmse_fraction']:.2f}",
            f"{p['depth']:.2f}/{p['depth_max']}" if "depth" in p else "-",
            "[yellow]needs work[/]" if p["needs_work"] else "[green]healthy[/]",
        )
    console.print(out)


def _render(rows: list[dict[str, Any]], worst: bool) -> None:
    """Print the rows as a table; each unreadable table's one line after it."""
    out = RichTable(title="managed tables" + (" (worst first)" if worst else ""))
    cols: tuple[str, ...] = ("table", "score", "worst part", "files", "MiB", "partitions")
    cols += ("need work",)
    cols += ("manifests", "snapshots", "deleted", "depth", "statistics", "snapshot")
    for col in (*cols, "seen"):
        out.add_column(col)
    for r in rows:
        if r.get("error"):  # the row says so; its one line follows the table
            out.add_row(r["table"], "[red]error[/]", *["-"] * (len(cols) - 1), _seen(r))
            continue
        if r.get("seen") is False:
            out.add_row(r["table"], "-", *["-"] * (len(cols) - 2), "not seen yet")
            continue
        out.add_row(
            r["table"],
            f"{r['health']['score']:.1f}",
            r["health"]["worst"] or "-",
            str(r["files"]),
            f"{r['bytes'] / MIB:.1f}",
            str(r["partitions"]),
            str(r["partitions_needing_work"]),
            str(r["manifests"]),
            str(r["snapshots"]),
            f"{r['delete_ratio']:.1%}",
            _depth_cell(r["clustering"]),
            statistics_text(r["statistics"]),
            str(r["snapshot_id"]),
            _seen(r),
        )
    if not rows:
        console.print("no managed tables: set managed.namespaces or managed.tables in the config")
    else:
        console.print(out)
    for r in rows:
        if r.get("error"):
            console.print(f"[red]{escape(r['table'])}: error: {escape(r['error'])}[/]")


@click.command()
@click.option(
    "--worst",
    type=IntRange(min=1),
    default=None,
    metavar="N",
    help="Only the N tables of lowest health score, worst first.",
)
@click.option(
    "--fresh",
    is_flag=True,
    help="Read each table from the catalog now, not as the decider keeps it (one catalog "
    "load a table).",
)
@click.option(
    "--namespace",
    "namespaces",
    multiple=True,
    metavar="NS",
    help="Only the tables of namespace NS (repeatable).",
)
@click.option("--limit", type=IntRange(min=1), default=None, metavar="N", help="At most N rows.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@pass_ctx
def tables(
    ctx: Context,
    worst: int | None,
    fresh: bool,
    namespaces: tuple[str, ...],
    limit: int | None,
    as_json: bool,
) -> None:
    """List managed tables with their health score (0-100: docs/health-score.md), files,
    bytes, partitions, verdicts and current snapshot, as the decider keeps them (with how
    long ago it saw each; Redis only once a decider has listed them, else one catalog call
    a namespace); --fresh reads each from the catalog instead; --worst N for the N in the
    worst shape."""
    for ns in namespaces:
        if not is_namespace(ns):
            raise UsageError(f"bad namespace {ns!r}: expected names of letters, digits, _ (a.b)")
        if not manages_namespace(ctx.cfg, ns):
            raise UsageError(
                f"namespace {ns!r} is not managed (managed.namespaces, managed.tables or "
                "tables.<name> in the config)"
            )
    names = None if fresh else kept_names(ctx.cfg)  # as the decider last listed them
    catalog = None
    if names is None:  # not listed yet, or not as the config manages them now
        catalog = load_catalog(ctx.cfg, read_only=True)
        names = managed_tables(ctx.cfg, catalog)
    if namespaces:
        names = [n for n in names if n.rsplit(".", 1)[0] in namespaces]
    if fresh:
        rows = _fresh_rows(ctx.cfg, catalog, names)
    else:
        rows = kept_rows(ctx.cfg, names, time.time())
    if worst is not None:  # unreadable tables first, then by score; not seen yet: last
        rows.sort(key=_worst_first)
        rows = rows[:worst]
    rows = rows[:limit]

    if as_json:
        click.echo(json_rows(rows))
    else:
        _render(rows, worst is not None)
    failed = [r["table"] for r in rows if r.get("error")]
    if failed:
        raise OperationFailed(
            f"{len(failed)} of {len(rows)} table(s) could not be read: {', '.join(failed)}"
        )


COMMANDS = [tables]
