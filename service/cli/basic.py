"""Foundation commands: ``doctor``, ``tables`` and ``demo``."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import click
from rich.markup import escape
from rich.table import Table as RichTable

from service.cli.common import Context, emit, make_console, pass_ctx
from service.config import Config
from service.demo import DEFAULT_ROUNDS
from service.errors import OperationFailed, ServiceUnavailable, UsageError, describe

MIB = 1 << 20
console = make_console()


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@pass_ctx
def doctor(ctx: Context, as_json: bool) -> None:
    """Check the packages, Java, the jars, the catalog, the warehouse (a write-read-delete
    probe), the Spark master and Redis; say how to fix what fails. Prints no secret."""
    from service.ops.doctor import run_checks

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
    from service.health import read_health
    from service.tablestats import current_partitions

    table = load_table(catalog, name)
    policy = cfg.policy_for(name, table.properties)
    target = policy.target
    snap = table.current_snapshot()
    m = policy.maintenance
    health = read_health(table, m.manifest_target(table.properties), m.retain_last)
    parts = []
    for p in current_partitions(table):
        s = p.stats(target)
        parts.append(
            {
                "partition": p.partition.display(),
                "key": p.key,
                "files": s.n,
                "bytes": s.total_bytes,
                "mse": s.mse,
                "rmse_fraction": (s.mse**0.5) / target,
                # over tolerance with enough small files to merge (min_input_files)
                "needs_work": s.needs_work(policy.tolerance_bytes)
                and s.undersized >= policy.min_input_files,
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
        "manifests": health.manifests.n,
        "small_manifests": health.manifests.undersized,
        "snapshots": health.snapshots,
        "metadata_bytes": health.metadata_bytes,
        "delete_files": health.delete_files,
        "delete_ratio": health.delete_ratio,
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
    rows: list[dict[str, Any]] = []
    for name in managed_tables(ctx.cfg, catalog):
        try:  # one broken table (metadata missing, storage refusing) is its row's error
            s = table_summary(ctx.cfg, catalog, name)
        except ServiceUnavailable:
            raise  # the catalog itself is gone: the same for every table
        except Exception as e:
            rows.append({"table": name, "error": describe(e)})
            continue
        rows.append(
            {k: s[k] for k in ("table", "files", "bytes", "snapshot_id", "manifests", "snapshots")}
            | {"delete_files": s["delete_files"], "delete_ratio": s["delete_ratio"]}
            | {
                "partitions": len(s["partitions"]),
                "partitions_needing_work": sum(p["needs_work"] for p in s["partitions"]),
            }
        )

    def render(_: Any) -> None:
        out = RichTable(title="managed tables")
        cols: tuple[str, ...] = ("table", "files", "MiB", "partitions", "need work")
        cols += ("manifests", "snapshots", "deleted")
        for col in (*cols, "snapshot"):
            out.add_column(col)
        for r in rows:
            if r.get("error"):  # the row says so; its one line follows the table
                out.add_row(r["table"], "[red]error[/]", *["-"] * (len(cols) - 1))
                continue
            out.add_row(
                r["table"],
                str(r["files"]),
                f"{r['bytes'] / MIB:.1f}",
                str(r["partitions"]),
                str(r["partitions_needing_work"]),
                str(r["manifests"]),
                str(r["snapshots"]),
                f"{r['delete_ratio']:.1%}",
                str(r["snapshot_id"]),
            )
        if not rows:
            console.print(
                "no managed tables: set managed.namespaces or managed.tables in the config"
            )
        else:
            console.print(out)
        for r in rows:
            if r.get("error"):
                console.print(f"[red]{escape(r['table'])}: error: {escape(r['error'])}[/]")

    emit(rows, as_json, render)
    failed = [r["table"] for r in rows if r.get("error")]
    if failed:
        raise OperationFailed(
            f"{len(failed)} of {len(rows)} table(s) could not be read: {', '.join(failed)}"
        )


@click.command()
@click.option("--namespace", default="demo", show_default=True, help="Demo namespace.")
@click.option("--seed", default=7, show_default=True, type=int)
@click.option(
    "--rounds",
    default=DEFAULT_ROUNDS,
    show_default=True,
    type=click.IntRange(min=1),
    help="Rounds of streaming ingest, each followed by compaction on both sides.",
)
@click.option("--quick", is_flag=True, help="Only build the warehouse and show its entropy.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable summary at the end.")
@pass_ctx
def demo(ctx: Context, namespace: str, seed: int, rounds: int, quick: bool, as_json: bool) -> None:
    """Build a streaming-ingest warehouse in rounds, compacting between them: icefloe's
    decider and actors on the tables, Iceberg's rewrite_data_files on identical copies."""
    from service.config import parse_table_identifier

    parse_table_identifier(f"{namespace}.x", "namespace")
    cfg = ctx.cfg
    if quick:
        _demo_quick(cfg, namespace, seed, as_json)
        return
    from service.demo.report import render_demo
    from service.demo.run import run_demo

    def say(text: str) -> None:
        if not as_json:
            console.print(f"[dim]{time.strftime('%H:%M:%S')}[/] {text}")

    result = run_demo(cfg, say, namespace=namespace, seed=seed, rounds=rounds)
    spark = result.pop("spark")
    try:
        if as_json:
            emit(result, True, lambda _: None)
        else:
            render_demo(console, result)
    finally:
        spark.stop()
    if not all(t["rows_ok"] for t in result["tables"]) or not result["skew"]["identical"]:
        raise SystemExit(1)


def _demo_quick(cfg: Config, namespace: str, seed: int, as_json: bool) -> None:
    from service.catalog import load_catalog
    from service.demo.ingest import demo_tables, ingest

    catalog = load_catalog(cfg)
    started = time.monotonic()
    summaries = []
    for i, spec in enumerate(demo_tables(namespace)):
        with console.status(f"ingesting {spec.name}") as status:

            def tick(info: Any, spec: Any = spec, status: Any = status) -> None:
                status.update(f"ingesting {spec.name}: snapshot {info.snapshot_id}")

            commits = ingest(catalog, spec, seed=seed + i, on_commit=tick)
        summary = table_summary(cfg, catalog, spec.name)
        summaries.append(summary)
        if not as_json:
            late = sum(c.late for c in commits)
            console.print(f"[bold]{spec.name}[/]: {len(commits)} commits, {late} late")
            render_partitions(summary)
    elapsed = time.monotonic() - started
    if as_json:
        emit({"tables": summaries, "seconds": round(elapsed, 1)}, True, lambda _: None)
    else:
        console.print(f"demo warehouse ready in {elapsed:.1f}s at {cfg.catalog.warehouse}")


SUBMITTABLE = ("actor", "actor_optimize", "skew_detect", "salted_join")


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
    import dataclasses
    import shlex
    import subprocess

    from service.submit import python_env, submit_command_for

    if job not in SUBMITTABLE:
        raise UsageError(f"unknown job {job!r} (known: {', '.join(SUBMITTABLE)})")
    cfg = ctx.cfg
    if master:
        cfg = dataclasses.replace(cfg, spark=dataclasses.replace(cfg.spark, master=master))
    argv = submit_command_for(cfg, job, list(args), deploy_mode=deploy_mode)
    argv[0] = str(Path(sys.executable).with_name("spark-submit"))
    if print_only:
        click.echo(" ".join(shlex.quote(a) for a in argv))
        return
    env = {**os.environ, **python_env(cfg.spark.master, deploy_mode)}
    if master:  # the driver loads the config again: it must see the master it runs on
        env["ICEFLOE_SPARK__MASTER"] = master
    raise SystemExit(subprocess.run(argv, env=env).returncode)


COMMANDS = [doctor, tables, demo, submit]
