"""``icefloe demo``: the demo on the configured warehouse (``icefloe.app.demo``)."""

from __future__ import annotations

import time
from pathlib import Path

import click

from icefloe.app.cli.common import Context, IntRange, Steps, emit, make_console, pass_ctx
from icefloe.app.cli.tables import render_partitions
from icefloe.app.demo import DEFAULT_ROUNDS
from icefloe.app.demo.report import render_demo
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
@click.option(
    "--charts",
    "charts",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Directory for the charts (icefloe-demo-rounds.png, icefloe-demo-sizes.png) "
    "[default: beside the warehouse, <lakehouse>/demo].",
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable summary at the end.")
@pass_ctx
def demo(
    ctx: Context,
    namespace: str,
    seed: int,
    rounds: int,
    quick: bool,
    charts: Path | None,
    as_json: bool,
) -> None:
    """Stream small commits into a warehouse in rounds, compacting between them: icefloe's
    decider and actors on the tables, Iceberg's rewrite_data_files on identical copies;
    then readers' queries on both sides, and a skewed join with and without icefloe's SQL
    extension."""
    parse_table_identifier(f"{namespace}.x", "namespace")
    cfg = ctx.cfg
    if quick:
        _demo_quick(cfg, namespace, seed, rounds, as_json)
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

        result = run_demo(
            cfg, say, namespace=namespace, seed=seed, rounds=rounds, out=charts, step=steps.step
        )
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


def _demo_quick(cfg: Config, namespace: str, seed: int, rounds: int, as_json: bool) -> None:
    # start-up: the demo's ingest only for --quick
    from icefloe.app.demo.run import create, ingest_round
    from icefloe.app.demo.workload import demo_config, demo_workload

    cfg = demo_config(cfg, namespace, demo_workload(rounds))  # as the full demo runs it
    started = time.monotonic()
    with console.status("streaming the demo's commits") as status:
        wh = create(cfg, namespace, seed, rounds, lambda _: None)
        for index in range(rounds):
            ingest_round(wh, index, status.update)
    summaries = []
    for table in wh.tables:
        summary = table_summary(cfg, wh.catalog, wh.name("icefloe", table))
        summaries.append(summary)
        if not as_json:
            render_partitions(summary)
    elapsed = time.monotonic() - started
    if as_json:
        emit({"tables": summaries, "seconds": round(elapsed, 1)}, True, lambda _: None)
    else:
        console.print(f"demo warehouse ready in {elapsed:.1f}s at {cfg.catalog.warehouse}")


COMMANDS = [demo]
