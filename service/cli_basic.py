"""Foundation commands: ``doctor``, ``tables`` and ``demo``."""

from __future__ import annotations

import time
from typing import Any

import click
from rich.console import Console
from rich.table import Table as RichTable

from service.cli_common import Context, emit, pass_ctx
from service.config import Config

MIB = 1 << 20
console = Console()


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@pass_ctx
def doctor(ctx: Context, as_json: bool) -> None:
    """Check Java, the jars, the catalog and Redis; say how to fix what is missing."""
    from service.doctor import run_checks

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


def table_summary(cfg: Config, catalog: Any, name: str) -> dict[str, Any]:
    """Files, bytes, partitions, snapshot and entropy of one table, from metadata only."""
    from service.catalog import load_table
    from service.tablestats import current_partitions

    table = load_table(catalog, name)
    policy = cfg.policy_for(name, table.properties)
    target = policy.target
    snap = table.current_snapshot()
    parts = []
    for p in current_partitions(table):
        s = p.stats(target)
        parts.append(
            {
                "partition": p.key,
                "files": s.n,
                "bytes": s.total_bytes,
                "mse": s.mse,
                "rmse_fraction": (s.mse**0.5) / target,
                "needs_work": s.needs_work(policy.tolerance_bytes),
            }
        )
    return {
        "table": name,
        "snapshot_id": snap.snapshot_id if snap else None,
        "target_file_size_bytes": target,
        "tolerance_bytes": policy.tolerance_bytes,
        "files": sum(p["files"] for p in parts),
        "bytes": sum(p["bytes"] for p in parts),
        "partitions": parts,
    }


def render_partitions(summary: dict[str, Any]) -> None:
    out = RichTable(
        title=(
            f"{summary['table']}  (target {summary['target_file_size_bytes'] / MIB:g} MiB, "
            f"tolerance {summary['tolerance_bytes'] / MIB:g} MiB)"
        )
    )
    for col in ("partition", "files", "MiB", "MSE (MiB²)", "RMSE/target", "state"):
        out.add_column(col, justify="left" if col in ("partition", "state") else "right")
    for p in summary["partitions"]:
        out.add_row(
            p["partition"] or "(unpartitioned)",
            str(p["files"]),
            f"{p['bytes'] / MIB:.2f}",
            f"{p['mse'] / MIB**2:.3f}",
            f"{p['rmse_fraction']:.2f}",
            "[yellow]needs work[/]" if p["needs_work"] else "[green]healthy[/]",
        )
    console.print(out)


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@pass_ctx
def tables(ctx: Context, as_json: bool) -> None:
    """List managed tables with files, bytes, partitions and current snapshot."""
    from service.catalog import load_catalog, managed_tables

    catalog = load_catalog(ctx.cfg)
    rows = []
    for name in managed_tables(ctx.cfg, catalog):
        s = table_summary(ctx.cfg, catalog, name)
        rows.append(
            {k: s[k] for k in ("table", "files", "bytes", "snapshot_id")}
            | {
                "partitions": len(s["partitions"]),
                "partitions_needing_work": sum(p["needs_work"] for p in s["partitions"]),
            }
        )

    def render(_: Any) -> None:
        out = RichTable(title="managed tables")
        for col in ("table", "files", "MiB", "partitions", "need work", "snapshot"):
            out.add_column(col)
        for r in rows:
            out.add_row(
                r["table"],
                str(r["files"]),
                f"{r['bytes'] / MIB:.1f}",
                str(r["partitions"]),
                str(r["partitions_needing_work"]),
                str(r["snapshot_id"]),
            )
        if not rows:
            console.print(
                "no managed tables: set managed.namespaces or managed.tables in the config"
            )
        else:
            console.print(out)

    emit(rows, as_json, render)


@click.command()
@click.option(
    "--namespace", default="demo", show_default=True, help="Namespace of the demo tables."
)
@click.option("--seed", default=7, show_default=True, type=int)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable summary at the end.")
@pass_ctx
def demo(ctx: Context, namespace: str, seed: int, as_json: bool) -> None:
    """(Re)create a demo warehouse by simulated streaming ingestion and show its entropy."""
    from jobs.ingest import demo_tables, ingest
    from service.catalog import load_catalog
    from service.config import parse_table_identifier

    parse_table_identifier(f"{namespace}.x", "namespace")
    cfg = ctx.cfg
    catalog = load_catalog(cfg)
    started = time.monotonic()
    summaries = []
    for i, spec in enumerate(demo_tables(namespace)):
        with console.status(f"ingesting {spec.name}") as status:

            def tick(info: Any, spec: Any = spec, status: Any = status) -> None:
                status.update(
                    f"ingesting {spec.name}: snapshot {info.snapshot_id} (+{info.rows} rows)"
                )

            commits = ingest(catalog, spec, seed=seed + i, on_commit=tick)
        if not as_json:
            console.print(
                f"[bold]{spec.name}[/]: {len(commits)} commits, {sum(c.late for c in commits)} late"
            )
        summary = table_summary(cfg, catalog, spec.name)
        summaries.append(summary)
        if not as_json:
            render_partitions(summary)
    elapsed = time.monotonic() - started
    if as_json:
        emit({"tables": summaries, "seconds": round(elapsed, 1)}, True, lambda _: None)
    else:
        console.print(f"demo warehouse ready in {elapsed:.1f}s at {cfg.catalog.warehouse}")


COMMANDS = [doctor, tables, demo]
