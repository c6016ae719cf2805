"""``icefloe demo``: the demo on the configured warehouse (``icefloe.app.demo``)."""

from __future__ import annotations

import time
from typing import Any

import click

from icefloe.app.cli.common import Context, IntRange, Steps, emit, make_console, pass_ctx
from icefloe.app.cli.tables import render_partitions
from icefloe.app.demo import DEFAULT_ROUNDS
from icefloe.app.demo.report import render_demo
from icefloe.base.catalog import load_catalog
from icefloe.base.config import Config, parse_table_identifier
from icefloe.service.observe.tables import table_summary

console = make_console()


@click.command()
@click.option("--namespace", default="demo", show_default=True, help="Demo namespace.")
@click.option("--seed", default=7, show_default=True, type=int)
@click.option(
    "--rounds",
    default=DEFAULT_ROUNDS,
    show_default=True,
    type=IntRange(min=1),
    help="Rounds of streaming ingest, each followed by compaction on both sides.",
)
@click.option("--quick", is_flag=True, help="Only build the warehouse and show its entropy.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable summary at the end.")
@pass_ctx
def demo(ctx: Context, namespace: str, seed: int, rounds: int, quick: bool, as_json: bool) -> None:
    """Build a streaming-ingest warehouse in rounds, compacting between them: icefloe's
    decider and actors on the tables, Iceberg's rewrite_data_files on identical copies."""
    parse_table_identifier(f"{namespace}.x", "namespace")
    cfg = ctx.cfg
    if quick:
        _demo_quick(cfg, namespace, seed, as_json)
        return
    # start-up: the full demo reaches the actors, rewrite engines and matplotlib
    from icefloe.app.demo.run import run_demo

    with Steps("demo", rounds + 1, quiet=as_json) as steps:

        def say(text: str) -> None:
            line = f"[dim]{time.strftime('%H:%M:%S')}[/] {text}"
            if steps.live:
                steps.say(line)
            elif not as_json:
                console.print(line)

        result = run_demo(cfg, say, namespace=namespace, seed=seed, rounds=rounds, step=steps.step)
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
    # start-up: the demo's ingest only for --quick
    from icefloe.app.demo.ingest import demo_tables, ingest

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


COMMANDS = [demo]
