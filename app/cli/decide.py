"""Decider commands: ``decide``, ``notify`` and ``request``.

Thin: parse and validate arguments (bad input is one :class:`UsageError` line, nothing
changed), connect to Redis and the catalog, and hand over to ``icefloe.service.decider.wiring``,
``icefloe.state.events`` and ``icefloe.state.queue``.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import click

from icefloe.app.cli.common import (
    Context,
    FiniteFloat,
    IntRange,
    emit,
    force_option,
    pass_ctx,
    require_managed,
)
from icefloe.base.catalog import load_catalog, load_table
from icefloe.base.config import (
    ACTIONS,
    MAX_LONG,
    MAX_PRIORITY,
    DeciderSettings,
    parse_table_identifier,
)
from icefloe.base.errors import OperationFailed, ServiceUnavailable, UsageError
from icefloe.base.layoutspec import layout_spec
from icefloe.base.partition_key import display_key
from icefloe.base.redact import service_logging
from icefloe.base.redis_client import connect, connect_retrying, translated
from icefloe.base.signals import on_sigterm
from icefloe.optimizer.actions import LAYOUT_ACTIONS
from icefloe.service.decider.pool import SubmitLauncher
from icefloe.state.open import open_state
from icefloe.state.queue import REQUESTED, ActionItem

log = logging.getLogger("icefloe.decider")


AD_HOC_BENEFIT = float(2**60)  # ad-hoc requests go first within their table


@click.command()
@click.option("--once", is_flag=True, help="One observe/orient/decide pass, then exit.")
@click.option(
    "--poll",
    "poll",
    type=FiniteFloat(min=0.05),
    default=None,
    metavar="SECONDS",
    help="Catalog poll interval (default 10).",
)
@click.option(
    "--metrics-port",
    type=IntRange(0, 65535),
    default=None,
    help="Serve Prometheus metrics on 127.0.0.1:PORT (0 = off; default: decider.metrics_port).",
)
@click.option(
    "--launch-actors",
    is_flag=True,
    help="Start actors with spark-submit when the backlog grows (else only log).",
)
@click.option("--json", "as_json", is_flag=True, help="With --once: print the step as JSON.")
@pass_ctx
def decide(
    ctx: Context,
    once: bool,
    poll: float | None,
    metrics_port: int | None,
    launch_actors: bool,
    as_json: bool,
) -> None:
    """Run the decider: snapshot scans → rolling entropy → queue → fair dispatch."""
    # start-up: the decider's loops and stores, and prometheus_client, only when it runs
    from icefloe.service.decider.wiring import open_decider
    from icefloe.service.observe.metrics import DeciderMetrics, serve

    service_logging()
    cfg = ctx.cfg
    settings = cfg.decider
    if poll:  # re-validated: the leader lease must outlast a poll
        settings = DeciderSettings.from_mapping(
            {**dataclasses.asdict(settings), "poll_seconds": poll}
        )
    if once:
        client = connect(cfg, block_seconds=settings.poll_seconds)
    else:  # a service started while Redis is down waits for it, as after a later outage
        client = connect_retrying(
            cfg,
            settings.poll_seconds,
            settings.backoff_initial_seconds,
            settings.backoff_max_seconds,
        )
    launcher = SubmitLauncher(cfg) if launch_actors else None
    decider = open_decider(cfg, load_catalog(cfg), client, settings=settings, launcher=launcher)
    metrics = DeciderMetrics()
    if metrics_port is None:
        metrics_port = settings.metrics_port
    if metrics_port:
        serve(metrics, metrics_port)

    reports: list[Any] = []
    on_step = _on_step(decider, metrics, once, as_json)

    def step(report: Any) -> None:
        reports.append(report)
        on_step(report)

    stop = threading.Event()
    try:
        with on_sigterm(stop.set):  # the step under way ends first, then the leases go back
            decider.run(once=once, on_step=step, should_stop=stop.is_set)
    finally:  # --once too: the next decider (or the next --once) leads at once
        # a --once pass flushed in its step; a service's leader flushes once more here
        _hand_back(decider, not once and bool(reports) and reports[-1].leader)
    if once and reports:
        _fail_if_all_skipped(reports[-1])


def _fail_if_all_skipped(report: Any) -> None:
    """A ``--once`` pass that could read none of its tables failed (exit 1), and says why."""
    if report.tables and len(report.failed) >= report.tables:
        name, why = sorted(report.failed.items())[0]
        raise OperationFailed(
            f"every table ({report.tables}) was skipped this pass, e.g. {name}: {why}"
        )


def _on_step(decider: Any, metrics: Any, once: bool, as_json: bool) -> Callable[[Any], None]:
    """After each step: update the metrics; with ``--once``, print the step."""

    def on_step(report: Any) -> None:
        with translated("decider metrics"):  # Redis gone after the step: the loop backs off
            depth = decider.queue.depth()
            metrics.update(
                decider.ledger.counters(),
                depth,
                decider.events.lag(),
                decider.duties.live_actors(time.time()),
                report.leader,
                len(report.shards),
            )
        metrics.update_tables(decider.healths, time.time(), decider.scores.totals())
        if once:
            data = step_data(report, depth)
            emit(data, as_json, lambda d: click.echo(" ".join(f"{k}={v}" for k, v in d.items())))

    return on_step


def _hand_back(decider: Any, leader: bool) -> None:
    """A leader's last history flush (so what actors recorded does not wait in Redis for
    the next leader), then the leader and shard leases released, so the other deciders
    take over at once; never raised over the loop's own error (they expire)."""
    try:
        if leader:
            decider.duties.flush_history(time.time(), due_only=False)
        decider.leader.release()
        decider.shards.release()
    except ServiceUnavailable as e:
        log.warning("could not hand the leases back: %s", e)


def step_data(report: Any, depth: dict[str, Any]) -> dict[str, Any]:
    """What ``decide --once`` prints of one step."""
    return {
        "leader": report.leader,
        "leader_holder": report.holder,
        "shards": report.shards,
        "tables": report.tables,
        "events": report.events,
        "rejected": report.rejected,
        "enqueued": report.enqueued,
        "coalesced": report.coalesced,
        "dispatched": report.dispatched,
        "snapshots_applied": sum(a.snapshots_applied for a in report.applied),
        "full_scans": [a.table for a in report.applied if a.full_scan],
        "skipped": sorted(report.failed),
        "desired_actors": report.desired_actors,
        "history_appended": report.history,
        "queue": depth,
    }


@click.command()
@click.argument("table")
@click.argument("snapshot_id", required=False, type=IntRange(1, MAX_LONG))
@pass_ctx
def notify(ctx: Context, table: str, snapshot_id: int | None) -> None:
    """Tell the decider that TABLE committed (SNAPSHOT_ID optional)."""
    parse_table_identifier(table)
    load_table(load_catalog(ctx.cfg, read_only=True), table)  # TableNotFound first
    client = connect(ctx.cfg)
    event_id = open_state(ctx.cfg, client, consumer="cli").events.publish(table, snapshot_id)
    click.echo(f"notified {table} (event {event_id})")


def partition_selector(spec_fields: list[str], pairs: tuple[str, ...]) -> str | None:
    """``("region=eu", "day=1")`` → ``"day=1/region=eu"`` in the spec's field order."""
    if not pairs:
        return None
    given: dict[str, str] = {}
    for pair in pairs:
        col, sep, value = pair.partition("=")
        if not sep or not col or not value:
            raise UsageError(f"bad --partition {pair!r}: expected COL=VALUE")
        if col not in spec_fields:
            raise UsageError(
                f"--partition {col!r} is not a partition field "
                f"(fields: {', '.join(spec_fields) or 'none, unpartitioned'})"
            )
        if col in given:
            raise UsageError(f"--partition {col!r} given twice")
        given[col] = value
    return "/".join(f"{c}={given[c]}" for c in spec_fields if c in given)


@click.command()
@click.argument("table")
@click.option(
    "--partition",
    "partitions",
    multiple=True,
    metavar="COL=VALUE",
    help="Restrict to one partition (repeat for several fields).",
)
@click.option("--action", type=click.Choice(ACTIONS), default="merge", show_default=True)
@click.option(
    "--priority",
    type=IntRange(0, MAX_PRIORITY),
    default=None,
    help=f"Priority class (0 highest, {MAX_PRIORITY} lowest; default: the table's).",
)
@force_option
@click.option("--json", "as_json", is_flag=True)
@pass_ctx
def request(
    ctx: Context,
    table: str,
    partitions: tuple[str, ...],
    action: str,
    priority: int | None,
    force: bool,
    as_json: bool,
) -> None:
    """Queue an ad-hoc action for TABLE (revives a dead-lettered one)."""
    parse_table_identifier(table)
    pt = load_table(load_catalog(ctx.cfg, read_only=True), table)
    require_managed(ctx.cfg, table, force)
    selector = partition_selector([f.name for f in pt.spec().fields], partitions)
    keys: list[str | None] = [None]  # the whole table
    if selector is not None:  # partitions the table has now: nothing queued that fails later
        # start-up: the planner only for a request naming partitions
        from icefloe.jobs.base.selectors import require_partitions

        keys = list(require_partitions(pt, [selector]))  # one item per partition, exactly
    policy = ctx.cfg.policy_for(table, pt.properties)
    if action in LAYOUT_ACTIONS:  # a sort needs an order, a z-order columns: say so now
        layout_spec(pt, policy, action)
    cls = policy.priority if priority is None else priority
    client = connect(ctx.cfg)
    items = [
        ActionItem.new(table, key, action, cls, 1, AD_HOC_BENEFIT, time.time(), reason=REQUESTED)
        for key in keys
    ]
    queue = open_state(ctx.cfg, client).queue
    outcomes = [queue.enqueue(item, time.time(), force=True) for item in items]
    data = {
        "id": items[0].id,
        "queued": outcomes[0] == 1,
        "coalesced": outcomes[0] == 0,
        "items": [
            {"id": i.id, "partition": display_key(i.partition), "queued": o == 1}
            for i, o in zip(items, outcomes, strict=True)
        ],
    }
    emit(
        data,
        as_json,
        lambda d: click.echo(
            "\n".join(
                f"{'queued' if i['queued'] else 'already queued'}: {i['id']}" for i in d["items"]
            )
        ),
    )


COMMANDS = [decide, notify, request]
