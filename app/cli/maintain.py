"""``icefloe maintain``: a table's metadata maintenance by hand, and its health.

It assesses the table as the decider would (``icefloe.jobs.maintenance.due.assess``: manifests
against the manifest target, snapshots past retention, the orphan-scan schedule; the last runs
come from Redis when it answers), then runs the actions due, or the ones named with
``--action`` whether due or not, each through ``icefloe.jobs.maintenance.run`` (Iceberg's procedure
with the policy's parameters, verified from the metadata). ``--dry-run`` changes nothing: it
shows the health and what would run, and lets orphan removal list its candidates.
Orphan removal is held (not due, refused when named) while another table of the catalog
overlaps the location (``icefloe.jobs.maintenance.sharing``), unless ``--allow-shared-location`` or
the policy's ``maintenance.allow_shared_location`` names each such table.
:func:`maintenance_plan` is also the maintenance part of ``icefloe plan``.
"""

from __future__ import annotations

import time
from typing import Any

import click

from icefloe.app.cli.common import (
    Context,
    Steps,
    emit,
    force_option,
    make_console,
    pass_ctx,
    require_managed,
)
from icefloe.base.catalog import load_catalog, load_table
from icefloe.base.config import Config, parse_table_identifier
from icefloe.base.errors import OperationFailed, ServiceUnavailable
from icefloe.base.spark import build_spark
from icefloe.jobs.maintenance.due import assess
from icefloe.jobs.maintenance.sharing import orphan_hold
from icefloe.optimizer.actions import BY_NAME, TABLE_ACTIONS
from icefloe.optimizer.maintenance_rules import MetadataHealth
from icefloe.state.health import statistics_age, statistics_text
from icefloe.state.open import open_state

console = make_console()


def health_dict(h: MetadataHealth, now: float) -> dict[str, Any]:
    m = h.manifests
    oldest = h.oldest_snapshot_ms
    return {
        "manifests": m.n,
        "small_manifests": m.undersized,
        "manifest_bytes": m.total_bytes,
        "manifest_target_bytes": h.manifest_target,
        "manifest_rmse_fraction": (m.mse**0.5) / h.manifest_target,
        "snapshots": h.snapshots,
        "oldest_snapshot_age_hours": None if oldest is None else (now - oldest / 1000) / 3600,
        "snapshots_beyond_retain_last": len(h.expirable),
        "metadata_bytes": h.metadata_bytes,
        "delete_files": h.delete_files,
        "delete_ratio": h.delete_ratio,
        "statistics": statistics_age(h),
    }


def maintenance_plan(
    cfg: Config,
    name: str,
    table: Any,
    now: float,
    last_runs: dict[str, int],
    allow_shared: tuple[str, ...] = (),
) -> dict[str, Any]:
    """Health, the due actions (whether the policy enables them), the enabled ones, and
    the held ones: orphan removal while another table of the catalog (listed here, see
    ``icefloe.jobs.maintenance.sharing``) overlaps the location, unless the policy's
    ``maintenance.allow_shared_location`` or ``allow_shared`` names it."""
    policy = cfg.policy_for(name, table.properties)
    allowed = (*policy.maintenance.allow_shared_location, *allow_shared)
    hold = orphan_hold(table.catalog, name, table, allowed)
    held = {} if hold is None else {"remove_orphan_files": hold}
    health, needs = assess(table, policy, now, last_runs, held=held)
    enabled = [a for a in policy.actions if a in TABLE_ACTIONS]
    return {
        "health": health_dict(health, now),
        "enabled": enabled,
        "due": [
            {"action": n.action, "reason": n.reason, "enabled": n.action in enabled} for n in needs
        ],
        "held": [{"action": a, "reason": r} for a, r in held.items()],
    }


def stored_runs(cfg: Config, name: str) -> tuple[dict[str, int], Any]:
    """When each action last ran (from Redis), and the store; ({}, None) without Redis."""
    try:
        store = open_state(cfg).health
        return store.last_runs(name), store
    except ServiceUnavailable:
        return {}, None


def render_health(d: dict[str, Any]) -> None:
    h = d["health"]
    age = h["oldest_snapshot_age_hours"]
    console.print(
        f"{d['table']}: {h['manifests']} manifests ({h['small_manifests']} under "
        f"{h['manifest_target_bytes'] / (1 << 20):g} MiB, RMSE/target "
        f"{h['manifest_rmse_fraction']:.2f}), {h['snapshots']} snapshots (oldest "
        f"{'-' if age is None else f'{age:.1f} h'}), metadata {h['metadata_bytes']} B, "
        f"{h['delete_files']} delete files ({h['delete_ratio']:.1%} of rows deleted), "
        f"statistics {statistics_text(h['statistics'])}"
    )
    for n in d["due"]:
        state = "" if n["enabled"] else " (not in the policy's actions: the decider skips it"
        if not n["enabled"]:
            by_default = BY_NAME[n["action"]].maintain_when_due
            state += ")" if by_default else "; run it here with --action)"
        console.print(f"  due: {n['action']}: {n['reason']}{state}")
    for n in d.get("held", []):
        console.print(f"  held: {n['action']}: {n['reason']}", soft_wrap=True)
    if not d["due"]:
        console.print("  nothing due")


def _run(
    cfg: Config,
    table: str,
    actions: list[str],
    dry_run: bool,
    allow_shared: tuple[str, ...],
    store: Any,
    as_json: bool,
) -> list[dict[str, Any]]:
    """Run ``actions`` on ``table`` in one Spark session, each verified, with progress;
    each run marked in Redis (``store``) unless a dry run."""
    # start-up: the maintenance procedures only when one runs
    from icefloe.jobs.maintenance.run import run_table_action

    spark = build_spark(cfg, app_name="icefloe-maintain")
    ran = []
    with Steps(f"maintain {table}", len(actions), quiet=as_json) as steps:
        for action in actions:
            done = run_table_action(
                spark, cfg, table, action, dry_run=dry_run, allow_shared=allow_shared
            )
            ran.append(done)
            if store is not None and not dry_run:
                store.mark_run(table, action, int(time.time() * 1000))
            steps.step(action)
    return ran


@click.command()
@click.argument("table")
@click.option(
    "--action",
    "actions",
    multiple=True,
    type=click.Choice(TABLE_ACTIONS),
    help="Run this action whether due or not (repeatable; default: the actions due).",
)
@click.option(
    "--allow-shared-location",
    "allow_shared",
    multiple=True,
    metavar="OTHER_TABLE",
    help="Let orphan removal run although OTHER_TABLE's location overlaps TABLE's "
    "(repeatable; its files there are deleted unless TABLE references them).",
)
@click.option("--dry-run", is_flag=True, help="Show what would run; change nothing.")
@force_option
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@pass_ctx
def maintain(
    ctx: Context,
    table: str,
    actions: tuple[str, ...],
    allow_shared: tuple[str, ...],
    dry_run: bool,
    force: bool,
    as_json: bool,
) -> None:
    """Run TABLE's metadata maintenance now (rewrite_manifests, expire_snapshots,
    remove_orphan_files): the actions due, or those named; each verified. Orphan removal
    is refused while another table's location overlaps TABLE's."""
    cfg = ctx.cfg
    parse_table_identifier(table)
    for other in allow_shared:
        parse_table_identifier(other, "--allow-shared-location table")
    pt = load_table(load_catalog(cfg), table)  # TableNotFound before Spark starts
    if not dry_run:  # a dry run changes nothing: any table
        require_managed(cfg, table, force)
    runs, store = stored_runs(cfg, table)
    now = time.time()
    data = {"table": table, **maintenance_plan(cfg, table, pt, now, runs, allow_shared)}
    todo = list(dict.fromkeys(actions)) or [
        n["action"] for n in data["due"] if n["enabled"] or BY_NAME[n["action"]].maintain_when_due
    ]
    for held in data["held"]:
        if held["action"] in todo:  # named by --action: refused before Spark starts
            raise OperationFailed(f"{held['action']} on {table} refused: {held['reason']}")
    data["dry_run"], data["ran"] = dry_run, []
    # only an action with a dry run of its own runs in one (orphan removal: it lists)
    chosen = [a for a in todo if not dry_run or BY_NAME[a].dry_run]
    if chosen:
        data["ran"] = _run(cfg, table, chosen, dry_run, allow_shared, store, as_json)
    data["would_run"] = todo if dry_run else []

    def render(d: dict[str, Any]) -> None:
        render_health(d)
        for r in d["ran"]:
            if r["dry_run"]:
                found = r["result"].get("orphan_file_location") or []
                console.print(f"  orphan candidates ({len(found)}): {', '.join(found) or '-'}")
                continue
            counts = {k: v for k, v in r["result"].items() if isinstance(v, int)}
            console.print(f"  ran {r['action']} in {r['seconds']} s: {counts}; verified")
        if d["dry_run"]:
            console.print(f"  dry run: would run {', '.join(d['would_run']) or 'nothing'}")

    emit(data, as_json, render)


COMMANDS = [maintain]
