"""What the decider and the actors are doing, read from Redis only (no catalog, no JVM).

One function builds a plain dict (the ``--json`` form) and one renders it. The counters it
shows are the ones the metrics endpoint exports. The Redis URL appears only redacted.

"Scans avoided": every partition a rolling update touched either stayed under tolerance
(the rolling stats alone decided it: no partition scan) or became an action (the actor's
partition scan plans it). The share of the first kind is what the published design
reported as 22% fewer partition scans.
"""

from __future__ import annotations

import json
from typing import Any

from service.base.config import TARGET_PROPERTY, Config
from service.base.keys import Keys
from service.base.partition_key import display_key
from service.base.redis_client import connect, text
from service.state.health import RedisHealth
from service.state.queue import ActionItem, PriorityQueue
from service.state.queue.redis import open_queue
from service.state.rolling import RollingStats
from service.state.shards import RedisShards

RECENT_SHOWN = 20


def counters(client: Any, keys: Keys) -> dict[str, int]:
    return {text(k): int(v) for k, v in client.hgetall(keys.counters).items()}


def scans_avoided_pct(c: dict[str, int]) -> float:
    """Share of changed partitions the rolling stats let us skip (no partition scan)."""
    changed = c.get("partitions_changed", 0)
    return 100.0 * (changed - c.get("partition_scans", 0)) / changed if changed else 0.0


def record_action(client: Any, keys: Keys, entry: dict[str, Any], cap: int = 200) -> None:
    """Actors append what they did (newest first, capped); counters for the metrics."""
    pipe = client.pipeline(transaction=True)
    pipe.lpush(keys.recent, json.dumps(entry, sort_keys=True, default=str))
    pipe.ltrim(keys.recent, 0, cap - 1)
    pipe.hincrby(keys.counters, "actions_ok" if entry.get("ok") else "actions_failed", 1)
    pipe.hincrby(keys.counters, "bytes_rewritten", int(entry.get("bytes_rewritten") or 0))
    if entry.get("orphans_deleted"):
        pipe.hincrby(keys.counters, "orphans_deleted", int(entry["orphans_deleted"]))
    if entry.get("seconds"):  # whole milliseconds: every counter is an integer
        pipe.hincrby(keys.counters, "action_ms", round(float(entry["seconds"]) * 1000))
    if entry.get("snapshot_ids"):
        pipe.hincrby(keys.counters, "commits", len(entry["snapshot_ids"]))
    if entry.get("partitions_rewritten"):
        pipe.hincrby(keys.counters, "partitions_rewritten", int(entry["partitions_rewritten"]))
    if entry.get("batch"):
        pipe.hincrby(keys.counters, "batches", 1)
        pipe.hincrby(keys.counters, "batch_items", int(entry["batch"].get("items") or 0))
    pipe.execute()


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


def gather(cfg: Config, client: Any, queue: PriorityQueue, now: float) -> dict[str, Any]:
    keys = Keys.for_config(cfg)
    store = RollingStats(client, keys)
    tables: dict[str, Any] = {}
    for raw in sorted(client.smembers(keys.known_tables)):
        name = text(raw)
        # the stats keep the target the decider resolved (override, the table's property,
        # default): resolved again with it as the table's property, the policy is the
        # decider's, tolerance included, without a catalog round trip
        target = store.target(name)
        props = {} if target is None else {TARGET_PROPERTY: str(target)}
        tol = cfg.plan_inputs(name, props).tolerance
        parts = store.partitions(name)
        over = [
            {
                "partition": display_key(k),
                "key": k,
                "mse": s.mse,
                "files": s.n,
                "undersized": s.undersized,
            }
            for k, s in sorted(parts.items())
            if s.needs_work(tol)
        ]
        store_health = RedisHealth(client, keys)
        health = store_health.load(name) or {}
        tables[name] = {
            "manifests": health.get("manifests"),
            "small_manifests": health.get("manifests_undersized"),
            "snapshots": health.get("snapshots"),
            "metadata_bytes": health.get("metadata_bytes"),
            "delete_files": health.get("delete_files"),
            "last_snapshot": store.last_applied(name),
            "target_file_size_bytes": store.target(name),
            "tolerance_bytes": tol,
            "partitions": len(parts),
            "over_tolerance": over,
            "held": store_health.holds(name),  # action → why the decider does not run it
        }
    classes = queue.pending_tables()
    by_class: dict[str, int] = {}
    for table, count in queue.pending_by_table().items():
        cls = str(classes.get(table, 0))
        by_class[cls] = by_class.get(cls, 0) + count
    leader = client.get(keys.leader)
    shards: dict[str, int] = {}  # decider → shards it observes
    for token in RedisShards(client, keys, cfg.decider.shards, 1).holders().values():
        shards[token] = shards.get(token, 0) + 1
    return {
        "redis": cfg.redis.redacted_url(),
        "leader": None if leader is None else text(leader),
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
        "recent": [json.loads(r) for r in client.lrange(keys.recent, 0, RECENT_SHOWN - 1)],
        "actors": {
            text(k): round(now - float(v), 1) for k, v in client.hgetall(keys.actors).items()
        },
        "counters": counters(client, keys),
        "scans_avoided_pct": round(scans_avoided_pct(counters(client, keys)), 2),
    }


def render(data: dict[str, Any], console: Any = None) -> None:
    """Print ``data`` to ``console`` (a rich Console; the CLI's never cuts lines)."""
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    console.print(
        f"redis {data['redis']}  leader {data['leader'] or '-'}  "
        f"deciders {' '.join(f'{d}:{n}' for d, n in data['deciders'].items()) or '-'}  "
        f"scans avoided {data['scans_avoided_pct']}%"
    )
    t = Table(title="tables")
    for col in ("table", "snapshot", "partitions", "over tolerance", "worst MSE"):
        t.add_column(col)
    for col in ("manifests (small)", "snapshots", "delete files"):
        t.add_column(col)
    for name, info in data["tables"].items():
        worst = max((p["mse"] for p in info["over_tolerance"]), default=0.0)
        manifests = (
            "-" if info["manifests"] is None else f"{info['manifests']} ({info['small_manifests']})"
        )
        t.add_row(
            name,
            str(info["last_snapshot"]),
            str(info["partitions"]),
            str(len(info["over_tolerance"])),
            f"{worst:.4g}",
            manifests,
            "-" if info["snapshots"] is None else str(info["snapshots"]),
            "-" if info["delete_files"] is None else str(info["delete_files"]),
        )
    console.print(t)
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
        b = r.get("batch")
        batch = (
            f" batch of {b.get('items')}: {b.get('partitions_rewritten')} partitions in "
            f"{b.get('commits')} commit(s), {b.get('seconds_per_partition')} s/partition"
            if b
            else ""
        )
        console.print(
            f"  done {r.get('id')} ok={r.get('ok')} mse {r.get('mse_before')} -> "
            f"{r.get('mse_after')} bytes {r.get('bytes_rewritten')}{batch}",
            soft_wrap=True,
        )


def queue_backlog(cfg: Config) -> int:
    """Actions waiting for an actor (pending + ready): what actor pools are sized by."""
    client = connect(cfg)
    try:
        depth = open_queue(cfg, client).depth()
    finally:
        client.close()
    return int(depth["pending"] + depth["ready"])
