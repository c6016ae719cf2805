"""What the decider and the actors are doing, read from the adapters over Redis only (no
catalog, no JVM).

One function builds a plain dict (the ``--json`` form) and one renders it. The counters it
shows are the ones the metrics endpoint exports. The Redis URL appears only redacted.

"Scans avoided": every partition a rolling update touched either stayed under tolerance
(the rolling stats alone decided it: no partition scan) or became an action (the actor's
partition scan plans it). The share of the first kind is what the published design
reported as 22% fewer partition scans.
"""

from __future__ import annotations

from collections.abc import Collection
from contextlib import closing
from dataclasses import replace
from typing import Any

from rich.console import Console
from rich.table import Table

from icefloe.base.config import Config
from icefloe.base.partition_key import display_key
from icefloe.base.redis_client import connect
from icefloe.base.tablestats import table_score
from icefloe.base.verdicts import rules_of
from icefloe.optimizer.health_score import removable_mse
from icefloe.optimizer.verdict import NONE, Verdict
from icefloe.service.observe.kept import Policies, clustering_of, inputs_of, kept_row, kept_verdicts
from icefloe.state.health import from_summary, statistics_age, statistics_text
from icefloe.state.layout import spec_of
from icefloe.state.open import State, open_state
from icefloe.state.queue import ActionItem, PriorityQueue

RECENT_SHOWN = 20
TABLES_SHOWN = 20  # rows of the tables section (worst first): ``--json`` has them all
MIB = 1 << 20


def scans_avoided_pct(c: dict[str, int]) -> float:
    """Share of changed partitions the rolling stats let us skip (no partition scan)."""
    changed = c.get("partitions_changed", 0)
    return 100.0 * (changed - c.get("partition_scans", 0)) / changed if changed else 0.0


def _item(it: ActionItem) -> dict[str, Any]:
    return {
        "id": it.id,
        "table": it.table,
        "partition": display_key(it.partition) if it.partition else it.partition,
        "key": it.partition,
        "action": it.action,
        "priority": it.priority,
        "attempts": it.attempts,
        "last_error": it.last_error,
    }


def gather(
    cfg: Config,
    client: Any,
    queue: PriorityQueue,
    now: float,
    detail: bool | Collection[str] = False,
    tables_too: bool = True,
) -> dict[str, Any]:
    """:func:`collect` from the Redis adapters on ``client`` (``queue``: the one the caller
    opened; the leader's and the shards' are read only: their holders)."""
    return collect(cfg, replace(open_state(cfg, client), queue=queue), now, detail, tables_too)


def _table(cfg: Config, src: State, name: str, now: float) -> dict[str, Any]:
    store = src.stats
    # the stats keep the target the decider resolved (override, the table's property,
    # default): resolved again with it as the table's property, the policy is the
    # decider's, tolerance included, without a catalog round trip
    target = store.target(name)
    inputs = inputs_of(cfg, name, target)
    tol = inputs.tolerance
    parts = store.partitions(name)
    sig = src.layouts.signature(name)
    spec = None if sig is None else spec_of(sig, inputs.policy.clustering_tolerance)
    verdicts = kept_verdicts(src.layouts, name, rules_of(inputs, spec), parts, spec)
    over = [
        {
            "partition": display_key(k),
            "key": k,
            "mse": s.mse,
            "files": s.n,
            "undersized": s.undersized,
            "small": s.small_files,  # under 0.75·T: what a merge rewrites
            # what the decider makes of it: merge, wait (for min_input_files), or None:
            # nothing a merge can lower (fewer than two small files, or no fewer files)
            "merge": _merge_state(verdicts.get(k)),
        }
        for k, s in sorted(parts.items())
        if s.needs_work(tol)
    ]
    health = src.health.load(name) or {}
    score = None
    if health:  # the documented score (docs/health-score.md), as the decider exports it
        data_mse = removable_mse(parts.values(), inputs.target)
        score = table_score(inputs.policy, data_mse, from_summary(health), now).to_dict()
    return {
        "health": score,
        "manifests": health.get("manifests"),
        "small_manifests": health.get("manifests_undersized"),
        "snapshots": health.get("snapshots"),
        "metadata_bytes": health.get("metadata_bytes"),
        "delete_files": health.get("delete_files"),
        "statistics": statistics_age(from_summary(health)) if health else None,
        "last_snapshot": store.last_applied(name),
        "target_file_size_bytes": target,
        "tolerance_bytes": tol,
        "partitions": len(parts),
        "over_tolerance": over,
        # every partition the decider acts on or holds (the rest: nothing to do)
        "verdicts": {k: v.to_dict() for k, v in sorted(verdicts.items()) if v.state != NONE},
        "held": src.health.holds(name),  # action → why the decider does not run it
        "clustering": clustering_of(src.layouts, name, inputs.policy.clustering_tolerance),
    }


def _merge_state(verdict: Verdict | None) -> str | None:
    """The verdict as ``status`` has always shown it: ``merge`` (a rewrite of the
    partition is due), ``wait`` (for more small files), or None."""
    if verdict is None or verdict.state == NONE:
        return None
    return "wait" if verdict.waiting else "merge"


def collect(
    cfg: Config,
    src: State,
    now: float,
    detail: bool | Collection[str] = False,
    tables_too: bool = True,
) -> dict[str, Any]:
    """The ``status`` data: every table the decider keeps a record of (one read:
    :mod:`icefloe.service.observe.kept`), the leader, the deciders' shards, the queue, the recent
    actions, the actors' heartbeats and the counters, each through its adapter (so a Redis
    failure arrives as :class:`~icefloe.base.errors.ServiceUnavailable`). ``detail``: the
    tables (True: every table with stats) whose partitions over tolerance and clustering
    are listed too, worked out from their kept stats. ``tables_too`` False: no table rows
    (the dashboard's overview: its list pages them itself)."""
    queue = src.queue
    kept = src.health.records() if tables_too else {}
    policies = Policies(cfg)
    tables = {n: kept_row(policies, n, r, now) for n, r in sorted(kept.items())}
    wanted = src.stats.known_tables() if detail is True else detail or ()
    for name in wanted:
        tables[name] = tables.get(name, {}) | _table(cfg, src, name, now)
    classes = queue.pending_tables()
    by_class: dict[str, int] = {}
    for table, count in queue.pending_by_table().items():
        cls = str(classes.get(table, 0))
        by_class[cls] = by_class.get(cls, 0) + count
    shards: dict[str, int] = {}  # decider → shards it observes
    for token in src.shards.holders().values():
        shards[token] = shards.get(token, 0) + 1
    counters = src.ledger.counters()
    return {
        "redis": cfg.redis.redacted_url(),
        "leader": src.leader.holder(),
        "deciders": dict(sorted(shards.items())),
        "tables": tables,
        "queue": {
            "depth": queue.depth(),
            "pending_by_class": by_class,
            "pending_by_table": queue.pending_by_table(),
        },
        "inflight": [
            {
                **_item(f.item),
                "lease_age_s": round(now - f.leased_at, 3),
                "lease_left_s": round(f.deadline - now, 3),
            }
            for f in queue.inflight()
        ],
        "dead": [_item(d) for d in queue.dead()],
        "recent": src.ledger.recent(RECENT_SHOWN),
        "actors": {a: round(now - at, 1) for a, at in src.ledger.actors().items()},
        "counters": counters,
        "scans_avoided_pct": round(scans_avoided_pct(counters), 2),
    }


def _depth_cell(c: dict[str, Any] | None) -> str:
    if c is None:
        return "-"
    return f"{c['mean_depth']:.2f}/{c['tolerance']:g} ({c['partitions_over']})"


def _score(info: dict[str, Any]) -> float:
    """Worst first: unreadable tables, then the lowest health scores."""
    return -1.0 if info.get("error") else float((info.get("health") or {}).get("score", 101.0))


def render(data: dict[str, Any], console: Any = None) -> None:
    """Print ``data`` to ``console`` (a rich Console; the CLI's never cuts lines)."""
    console = console or Console()
    console.print(
        f"redis {data['redis']}  leader {data['leader'] or '-'}  "
        f"deciders {' '.join(f'{d}:{n}' for d, n in data['deciders'].items()) or '-'}  "
        f"scans avoided {data['scans_avoided_pct']}%"
    )
    rows = sorted(data["tables"].items(), key=lambda kv: _score(kv[1]))
    t = Table(title=f"tables (worst {min(len(rows), TABLES_SHOWN)} of {len(rows)})")
    for col in ("table", "score", "snapshot", "partitions", "to act (waiting)", "manifests"):
        t.add_column(col)
    for col in ("snapshots", "delete files", "depth (over)", "statistics", "seen"):
        t.add_column(col)
    for name, info in rows[:TABLES_SHOWN]:
        if info.get("error"):
            t.add_row(name, "[red]error[/]", *["-"] * 9)
            continue
        score = info.get("health")
        snapshot = info.get("snapshot_id", info.get("last_snapshot"))
        acting = info.get("partitions_needing_work", 0)
        stats = info.get("statistics")
        t.add_row(
            name,
            "-" if score is None else f"{score['score']:.1f}",
            str(snapshot),
            str(info.get("partitions", "-")),
            f"{acting} ({info.get('partitions_waiting', 0)})",
            "-" if info.get("manifests") is None else str(info["manifests"]),
            "-" if info.get("snapshots") is None else str(info["snapshots"]),
            "-" if info.get("delete_files") is None else str(info["delete_files"]),
            _depth_cell(info.get("clustering")),
            "-" if stats is None else statistics_text(stats),
            "-" if info.get("age_s") is None else f"{info['age_s']:g} s ago",
        )
    console.print(t)
    for name, info in rows:
        if info.get("error"):
            console.print(f"  error: {name}: {info['error']}", soft_wrap=True)
        for p in info.get("over_tolerance", []):  # the tables asked for in detail
            target = info["target_file_size_bytes"] or 1
            console.print(
                f"  {name} {p['partition']}: {p['files']} files, MSE {p['mse'] / target**2:.3f}·T²"
                f", {p['merge'] or 'nothing a merge lowers'}",
                soft_wrap=True,
            )
    for name, info in data["tables"].items():
        for action, reason in sorted(info.get("held", {}).items()):
            console.print(f"  held: {name} {action}: {reason}", soft_wrap=True)
    d = data["queue"]["depth"]
    console.print(
        f"queue: pending {d['pending']} (by class {data['queue']['pending_by_class']}) "
        f"ready {d['ready']} in-flight {d['inflight']} dead {d['dead']}"
    )
    for f in data["inflight"]:
        console.print(
            f"  in flight {f['id']} lease age {f['lease_age_s']}s (expires in {f['lease_left_s']}s)"
        )
    for dead in data["dead"]:
        console.print(
            f"  dead {dead['id']} after {dead['attempts']} attempts: {dead['last_error']}"
        )
    for r in data["recent"]:
        console.print(f"  {recent_line(r)}", soft_wrap=True)


def recent_line(r: dict[str, Any]) -> str:
    """One action record as a line: what ran on which table and partitions, its outcome,
    files and bytes, the partitions' RMSE (RMS shortfall from the target) before and after,
    and the batch it was part of."""
    where = ", ".join(r.get("partitions") or []) or r.get("partition") or "whole table"
    head = f"{'done' if r.get('ok') else 'FAILED'} {r.get('action')} {r.get('table')} {where}"
    if not r.get("ok"):
        return f"{head}: {r.get('error') or r.get('outcome') or 'no reason recorded'}"
    parts = [head + ":"]
    if r.get("files_rewritten") == 0:
        parts.append("nothing to rewrite any more,")
    elif r.get("files_rewritten") is not None:
        parts.append(
            f"{r['files_rewritten']} files -> {r.get('files_added', 0)}, "
            f"{(r.get('bytes_rewritten') or 0) / MIB:.2f} MiB rewritten,"
        )
    if r.get("mse_before") is not None and r.get("mse_after") is not None:
        parts.append(
            f"RMSE {r['mse_before'] ** 0.5 / MIB:.2f} -> {r['mse_after'] ** 0.5 / MIB:.2f} MiB,"
        )
    if r.get("seconds") is not None:
        parts.append(f"in {r['seconds']:g} s")
    b = r.get("batch")
    if b:
        parts.append(
            f"(batch of {b.get('items')}: {b.get('partitions_rewritten')} partitions in "
            f"{b.get('commits')} commit(s), {b.get('seconds_per_partition')} s/partition)"
        )
    return " ".join(parts)


def queue_backlog(cfg: Config) -> int:
    """Actions waiting for an actor (pending + ready): what actor pools are sized by."""
    with closing(connect(cfg)) as client:
        depth = open_state(cfg, client).queue.depth()
    return int(depth["pending"] + depth["ready"])
