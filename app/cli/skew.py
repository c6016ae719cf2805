"""``icefloe skew detect``: hot keys and skewed partitions of an Iceberg table;
``icefloe skew join``: a salted join of two tables, written to a third.

Storage skew comes from Iceberg metadata; key skew is counted with Spark (exact below
2M rows, sample-then-verify above). The report is stored per table snapshot in
``<namespace>.skew_reports`` (default ``icefloe``) and reused until the table changes; each
column's hot keys are published as the table property ``icefloe.skew.hot-keys.<column>``
that the JVM's ``SkewRule`` salts by.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import click

from icefloe.app.cli.common import Context, FiniteFloat, emit, pass_ctx
from icefloe.base.catalog import load_catalog, load_table
from icefloe.base.config import Config, parse_table_identifier
from icefloe.base.errors import UsageError
from icefloe.base.spark import build_spark
from icefloe.jobs.skew.salting import JOIN_TYPES  # no Spark import: the join types are plain data
from icefloe.optimizer.actions.skew_report import KEYS as SKEW_KEYS
from icefloe.optimizer.skew_stats import HotKeyRules


@click.group()
def skew() -> None:
    """Detect data skew: hot keys, oversized partitions, join blow-up."""


_reports_namespace_option = click.option(
    "--reports-namespace",
    default="icefloe",
    show_default=True,
    help="Namespace of the skew_reports table.",
)


def _detect_rules(
    table: str,
    join_with: str | None,
    on: str | None,
    reports_namespace: str,
    min_share: float,
    median_multiple: float,
) -> Any:
    """Validate ``skew detect``'s arguments (UsageError) and build its hot-key rules."""
    parse_table_identifier(table)
    if join_with:
        parse_table_identifier(join_with, "--join-with table")
    parse_table_identifier(f"{reports_namespace}.x", "--reports-namespace")
    if bool(join_with) != bool(on):
        raise UsageError("--join-with and --on go together")
    try:
        return HotKeyRules(min_share=min_share, median_multiple=median_multiple)
    except ValueError as e:
        raise UsageError(str(e)) from None


def _policy_keys(cfg: Config, table: str, properties: Mapping[str, str]) -> tuple[str, ...]:
    """The policy's ``maintenance.skew_keys`` of ``table`` (UsageError: none)."""
    keys = cfg.policy_for(table, properties).maintenance.column_settings()[SKEW_KEYS]
    if not keys:
        raise UsageError("give --key COL, or set the policy's maintenance.skew_keys")
    return keys


@skew.command()
@click.argument("table")
@click.option(
    "--key",
    "keys",
    multiple=True,
    metavar="COL",
    help="Key column to check (repeatable; default: the policy's maintenance.skew_keys).",
)
@click.option("--join-with", metavar="TABLE2", help="Estimate join output with this table.")
@click.option("--on", "on", metavar="COL", help="Join column (present in both tables).")
@click.option(
    "--method",
    type=click.Choice(["auto", "exact", "sample"]),
    default="auto",
    show_default=True,
    help="Exact counts, or sample then verify candidates.",
)
@click.option(
    "--min-share",
    type=FiniteFloat(),
    default=0.01,
    show_default=True,
    help="A hot key holds at least this share of the rows.",
)
@click.option(
    "--median-multiple",
    type=FiniteFloat(),
    default=10.0,
    show_default=True,
    help="...and at least this many times the median key's rows.",
)
@_reports_namespace_option
@click.option("--refresh", is_flag=True, help="Recount even if a report of this snapshot exists.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@pass_ctx
def detect(
    ctx: Context,
    table: str,
    keys: tuple[str, ...],
    join_with: str | None,
    on: str | None,
    method: str,
    min_share: float,
    median_multiple: float,
    reports_namespace: str,
    refresh: bool,
    as_json: bool,
) -> None:
    """Hot keys of TABLE's --key columns and its skewed partitions; each column's hot keys
    published as TABLE's property icefloe.skew.hot-keys.<column> (the SkewRule's)."""
    rules = _detect_rules(table, join_with, on, reports_namespace, min_share, median_multiple)
    # start-up: the skew jobs only when one runs
    from icefloe.jobs.skew.detect import detect_table, render_text

    cfg = ctx.cfg
    catalog = load_catalog(cfg)
    pt = load_table(catalog, table)  # fail fast, before starting Spark
    if join_with:
        load_table(catalog, join_with)
    keys = keys or _policy_keys(cfg, table, pt.properties)
    spark = build_spark(cfg, app_name="icefloe-skew-detect")
    report = detect_table(
        spark,
        cfg,
        catalog,
        table,
        list(keys),
        join_with,
        on,
        rules,
        method,
        reports_namespace,
        refresh,
    )

    def render(data: Any) -> None:
        click.echo(render_text(data))

    emit(report, as_json, render)


@skew.command()
@click.argument("left")
@click.argument("right", required=False)
@click.option("--right-sql", metavar="SQL", help="A query instead of a RIGHT table.")
@click.option(
    "--on", "on", multiple=True, required=True, metavar="COL", help="Join column (repeatable)."
)
@click.option("--how", type=click.Choice(sorted(JOIN_TYPES)), default="inner", show_default=True)
@click.option("--into", required=True, metavar="TABLE", help="The table the result is written to.")
@click.option(
    "--mode",
    type=click.Choice(["create", "replace", "append"]),
    default="create",
    show_default=True,
    help="create fails if --into exists.",
)
@click.option("--skewed-side", type=click.Choice(["left", "right"]), default=None)
@click.option(
    "--reuse-reports",
    is_flag=True,
    help="Take hot keys from the stored skew report of the current snapshot.",
)
@_reports_namespace_option
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@pass_ctx
def join(
    ctx: Context,
    left: str,
    right: str | None,
    right_sql: str | None,
    on: tuple[str, ...],
    how: str,
    into: str,
    mode: str,
    skewed_side: str | None,
    reuse_reports: bool,
    reports_namespace: str,
    as_json: bool,
) -> None:
    """Join LEFT with RIGHT (or --right-sql) on --on, salting hot keys, into --into. A
    column both sides have (other than an --on key) comes out as COL_left and COL_right."""
    # start-up: the skew jobs only when one runs
    from icefloe.jobs.skew.join_job import JoinJob, run

    job = JoinJob(
        left, right, on, into, how, right_sql, mode, skewed_side, reuse_reports, reports_namespace
    )
    parse_table_identifier(left)
    if right:
        parse_table_identifier(right, "RIGHT table")
    parse_table_identifier(into, "--into table")

    cfg = ctx.cfg
    catalog = load_catalog(cfg)
    spark = build_spark(cfg, app_name="icefloe-salted-join")
    result = run(spark, cfg, catalog, job)

    def render(data: Any) -> None:
        how_ = (
            f"salted ({data['side']} side, {len(data['salts'])} hot keys)"
            if data["salted"]
            else "plain"
        )
        click.echo(f"{data['into']}: {how_} join; " + ("; ".join(data["reasons"]) or "-"))

    emit(result, as_json, render)


COMMANDS = [skew]
