"""``icefloe optimize`` and ``icefloe plan``: the actors, by hand.

``plan`` reads PyIceberg metadata only (no Spark, no data read, nothing written), so it
answers in a second and is safe on any table. ``optimize`` plans its tables with
PyIceberg first (a typo or a broken table fails before a JVM starts), then starts Spark
in-process (``build_spark``) once, only if a plan has work, and runs the same
``icefloe.jobs.data.optimize.optimize_table`` the decider's actors run, table after table.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import click
from rich.table import Table as RichTable

from icefloe.app.cli.common import Context, Steps, emit, make_console, pass_ctx
from icefloe.app.cli.maintain import maintenance_plan, render_health, stored_runs
from icefloe.base.catalog import load_catalog, managed_tables
from icefloe.base.config import ACTIONS, Config, parse_table_identifier
from icefloe.base.errors import OperationFailed, ServiceUnavailable, UsageError, describe
from icefloe.base.partition_key import display_key
from icefloe.base.spark import build_spark

if TYPE_CHECKING:
    from icefloe.jobs.base.plan import Planned

console = make_console()


MIB = 1 << 20


_partition_option = click.option(
    "--partition",
    "partitions",
    multiple=True,
    metavar="COL=VALUE",
    help="Only this partition (repeatable; COL is a field of the current partition spec).",
)


_action_option = click.option(
    "--action", type=click.Choice(ACTIONS), default="merge", show_default=True
)


_json_option = click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")


def _rmse(mse: float | None) -> str:
    return "-" if mse is None else f"{mse**0.5 / MIB:.3f}"


def _depth(depth: Any) -> dict[str, float] | None:
    return None if depth is None else {"mean": round(depth.mean, 4), "max": depth.max}


def _depth_cell(depth: dict[str, float] | None) -> str:
    return "-" if depth is None else f"{depth['mean']:.2f}/{depth['max']:g}"


def plan_data(cfg: Config, table: str, partitions: list[str], action: str) -> dict[str, Any]:
    """The plan of ``table`` as plain data: what ``optimize`` would rewrite, and into what."""
    planned = _plan(cfg, load_catalog(cfg, read_only=True), table, partitions, action)
    pt, plan, target = planned.table, planned.plan, planned.target

    maintenance = maintenance_plan(cfg, table, pt, time.time(), stored_runs(cfg, table)[0])
    return {
        "table": table,
        "action": action,
        "snapshot_id": plan.snapshot_id,
        "target_file_size_bytes": target,
        "tolerance_bytes": planned.tolerance,
        "sort_columns": list(planned.sort_columns),
        # the row order written, field by field (direction, nulls, transform), and its id
        "sort_order": [] if planned.layout is None else [str(f) for f in planned.layout.fields],
        "sort_order_id": None if planned.layout is None else planned.layout.sort_order_id,
        "zorder_columns": list(planned.zorder_columns),
        "clustering_tolerance": None if planned.layout is None else planned.layout.tolerance,
        "partitions": [
            {
                "partition": display_key(p.key),
                "key": p.key,
                "spec_id": p.spec_id,
                "files": len(p.paths),
                "bytes": sum(p.sizes),
                "delete_files": p.delete_files,
                "mse": p.mse_before,
                "predicted_files_after": p.predicted_files_after,
                "predicted_mse_after": p.predicted_mse_after,
                "groups": [list(g.paths) for g in p.groups],
                "depth": _depth(p.depth_before),
                "predicted_depth_after": _depth(p.depth_after),
                "relayout": p.layout,
                "reason": p.reason,
                # what the decider makes of it under the table's policy
                # (``icefloe.optimizer.verdict``)
                "verdict": None if p.verdict is None else p.verdict.to_dict(),
            }
            for p in plan.partitions
        ],
        "maintenance": maintenance,
    }


@click.command()
@click.argument("table")
@_partition_option
@_action_option
@_json_option
@pass_ctx
def plan(ctx: Context, table: str, partitions: tuple[str, ...], action: str, as_json: bool) -> None:
    """Show what `optimize` would do to TABLE (metadata only; writes nothing)."""
    data = plan_data(ctx.cfg, table, list(partitions), action)

    def render(d: dict[str, Any]) -> None:
        out = RichTable(
            title=f"plan {d['table']} ({d['action']}, target {d['target_file_size_bytes']} B, "
            f"snapshot {d['snapshot_id']})"
        )
        for col in (
            "partition",
            "spec",
            "N",
            "MiB",
            "RMSE MiB",
            "groups",
            "N after",
            "RMSE after",
            "depth",
            "depth after",
            "note",
        ):
            out.add_column(col)
        for p in d["partitions"]:
            out.add_row(
                p["partition"] or "(unpartitioned)",
                str(p["spec_id"]),
                str(p["files"]),
                f"{p['bytes'] / MIB:.2f}",
                _rmse(p["mse"]),
                " ".join(f"[{len(g)}]" for g in p["groups"]) or "-",
                str(p["predicted_files_after"]),
                _rmse(p["predicted_mse_after"]),
                _depth_cell(p["depth"]),
                _depth_cell(p["predicted_depth_after"]),
                p["reason"],
            )
        console.print(out)
        for p in d["partitions"]:
            for i, group in enumerate(p["groups"]):
                console.print(f"{p['partition'] or '(table)'} group {i}: " + ", ".join(group))

        render_health({"table": f"metadata of {d['table']}", **d["maintenance"]})

    emit(data, as_json, render)


@click.command()
@click.argument("tables", nargs=-1, metavar="[TABLE]...")
@click.option("--all", "all_managed", is_flag=True, help="Every managed table.")
@_partition_option
@_action_option
@click.option("--dry-run", is_flag=True, help="Plan and report; write and commit nothing.")
@_json_option
@pass_ctx
def optimize(
    ctx: Context,
    tables: tuple[str, ...],
    all_managed: bool,
    partitions: tuple[str, ...],
    action: str,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Merge (or sort) each TABLE's small files (or every managed table's, with --all):
    exact planned groups, verified, then one `replace` commit per table (per partition
    only after a conflict). The
    tables share one Spark session, started only when a plan has work; a table that fails
    does not stop the others."""
    cfg = ctx.cfg
    if bool(tables) == all_managed:
        raise UsageError("name one or more TABLEs, or --all for every managed table")
    catalog = load_catalog(cfg)
    names = managed_tables(cfg, catalog) if all_managed else list(dict.fromkeys(tables))
    if partitions and (all_managed or len(names) != 1):
        raise UsageError("--partition needs exactly one TABLE")
    single = len(names) == 1 and not all_managed  # its report, its errors as they are
    work: dict[str, bool] = {}
    failed: list[dict[str, str]] = []
    for name in names:  # a typo fails here, before a JVM starts
        try:
            work[name] = has_work(cfg, catalog, name, list(partitions), action)
        except ServiceUnavailable:
            raise  # the catalog is gone: the same for every table
        except Exception as e:
            if single:
                raise
            failed.append({"table": name, "error": describe(e)})
    spark: Any = None  # PyIceberg planned: Spark (15 s to start) only for real work
    adhoc: Any = None
    if not dry_run and any(work.values()):
        # start-up: the ad-hoc lease and intents only for real work
        from icefloe.service.actor.adhoc import open_adhoc

        spark = build_spark(cfg, app_name="icefloe-optimize")
        adhoc = open_adhoc(cfg)  # write intents: no orphan file even after kill -9
    if single:
        report = _optimize_one(spark, cfg, names[0], list(partitions), action, dry_run, adhoc)
        emit(report.to_dict(), as_json, _render_report)
        if report.partitions_failed:
            raise SystemExit(1)  # some partitions could not be committed (see the report)
        return
    reports = []
    with Steps("optimize", len(work), quiet=as_json) as steps:
        for name in work:
            try:
                report = _optimize_one(spark, cfg, name, [], action, dry_run, adhoc)
                reports.append(report.to_dict())
            except ServiceUnavailable:
                raise
            except Exception as e:  # one broken table must not stop the others
                failed.append({"table": name, "error": describe(e)})
            steps.step(name)
    emit({"tables": reports, "failed": failed}, as_json, _render_reports)
    if failed:
        raise OperationFailed(
            f"{len(failed)} of {len(names)} table(s) failed: "
            + "; ".join(f"{f['table']} ({f['error']})" for f in failed)
        )
    if any(r["partitions_failed"] for r in reports):
        raise SystemExit(1)  # some partitions could not be committed (see the reports)


def _optimize_one(
    spark: Any,
    cfg: Config,
    name: str,
    partitions: list[str],
    action: str,
    dry_run: bool,
    adhoc: Any,
) -> Any:
    """``optimize_table`` of one table, its new files recorded under a lease of the run's
    own (:mod:`icefloe.service.actor.adhoc`) when there is Spark, i.e. work, to do."""
    # start-up: the rewrite engines only when a table is optimized
    from icefloe.jobs.data.optimize import optimize_table

    if spark is None or dry_run:
        return optimize_table(spark, cfg, name, partitions or None, action, dry_run)
    # start-up: the rewrite engines and the ad-hoc lease only with Spark
    from icefloe.jobs.rewrite.exact import Collaborators
    from icefloe.service.actor.adhoc import adhoc_run

    with adhoc_run(adhoc, name) as guard:
        return optimize_table(
            spark, cfg, name, partitions or None, action, collaborators=Collaborators(guard=guard)
        )


def has_work(cfg: Config, catalog: Any, name: str, partitions: list[str], action: str) -> bool:
    """Whether ``optimize`` would rewrite anything in table ``name`` (PyIceberg planning
    only, as ``optimize_table`` plans it); raises what loading or planning it raises."""
    return bool(_plan(cfg, catalog, name, partitions, action).plan.work)


def _plan(cfg: Config, catalog: Any, name: str, partitions: list[str], action: str) -> Planned:
    """Table ``name`` loaded and planned as ``optimize_table`` plans it (PyIceberg only)."""
    # start-up: the planner only when a table is planned
    from icefloe.jobs.base.plan import load_and_plan

    parse_table_identifier(name)
    return load_and_plan(cfg, catalog, name, action, partitions or None)


def _render_reports(d: dict[str, Any]) -> None:
    for report in d["tables"]:
        _render_report(report)
    for f in d["failed"]:
        console.print(f"[red]{f['table']}: {f['error']}[/]")
    if not d["tables"] and not d["failed"]:
        console.print("no managed tables")


def _render_report(d: dict[str, Any]) -> None:
    planned = sum(p["status"] == "planned" for p in d["partitions"])
    done = f"{planned} planned" if d["dry_run"] else f"{d['partitions_rewritten']} rewritten"
    out = RichTable(
        title=f"{d['action']} {d['table']}{' (dry run)' if d['dry_run'] else ''}: "
        f"{done}, {d['partitions_skipped']} skipped, {d['partitions_failed']} failed, "
        f"{d['seconds']} s"
    )
    for col in (
        "partition",
        "status",
        "N",
        "rewritten",
        "added",
        "RMSE before",
        "predicted",
        "actual",
        "snapshot",
        "note",
    ):
        out.add_column(col)
    for p in d["partitions"]:
        out.add_row(
            p["partition"] or "(unpartitioned)",
            p["status"],
            str(p["files"]),
            str(p["files_rewritten"]),
            str(p["files_added"]),
            _rmse(p["mse_before"]),
            _rmse(p["predicted_mse_after"]),
            _rmse(p["actual_mse_after"]),
            str(p["snapshot_id"] or "-"),
            p["reason"],
        )
    console.print(out)
    suite = d.get("expectations")
    if suite is not None:
        console.print(
            f"checks: {d['rows_verified']} rows verified by checksum; expectations "
            f"{'passed' if suite['success'] else 'FAILED'} ({suite['expectations']})"
        )


COMMANDS = [optimize, plan]
