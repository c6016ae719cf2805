"""One table's state from its metadata (PyIceberg, no Spark, no Redis): files, bytes,
partitions with their entropy, the metadata health and the documented health score
(``docs/health-score.md``). ``icefloe tables``, the demo and the dashboard show it."""

from __future__ import annotations

import statistics
import time
from typing import Any

from icefloe.base.catalog import load_table
from icefloe.base.config import Config
from icefloe.base.layoutspec import LayoutSpec, decided_layout
from icefloe.base.tablestats import current_partitions, table_score
from icefloe.base.verdicts import files_verdict, rules_of
from icefloe.optimizer import FileBounds
from icefloe.optimizer.health_score import removable_mse
from icefloe.state.health import read_health, statistics_age


def table_summary(cfg: Config, catalog: Any, name: str, table: Any = None) -> dict[str, Any]:
    """Files, bytes, partitions, snapshot and entropy of one table, from metadata only.
    ``table``: the table as just loaded (None: loaded here)."""
    table = load_table(catalog, name) if table is None else table
    inputs = cfg.plan_inputs(name, table.properties)
    policy, target = inputs.policy, inputs.target
    snap = table.current_snapshot()
    m = policy.maintenance
    health = read_health(table, m.manifest_target(table.properties), m.retain_last)
    parts = []
    pooled = []
    layout = decided_layout(table, policy)
    rules = rules_of(inputs, layout)
    for p in current_partitions(table, layout=layout):
        s, verdict = files_verdict(rules, p, layout)  # what the decider would do now
        pooled.append(s)
        files = p.file_bounds() if layout is not None else []
        parts.append(
            {
                "partition": p.partition.display(),
                "key": p.key,
                "files": s.n,
                "bytes": s.total_bytes,
                "mse": s.mse,
                "rmse_fraction": (s.mse**0.5) / target,
                "needs_work": verdict.action is not None,
                "verdict": verdict.to_dict(),
                **_depth(files, layout),
            }
        )
    score = table_score(policy, removable_mse(pooled, target), health, time.time())
    return {
        "table": name,
        "health": score.to_dict(),
        "snapshot_id": snap.snapshot_id if snap else None,
        "target_file_size_bytes": target,
        "tolerance_bytes": inputs.tolerance,
        "files": sum(p["files"] for p in parts),
        "bytes": sum(p["bytes"] for p in parts),
        "partitions": parts,
        "manifests": health.manifests.n,
        "small_manifests": health.manifests.undersized,
        "snapshots": health.snapshots,
        "metadata_bytes": health.metadata_bytes,
        "delete_files": health.delete_files,
        "delete_ratio": health.delete_ratio,
        "statistics": statistics_age(health),  # Iceberg's table statistics: how far behind
        "clustering": clustering(parts, layout),
    }


def _depth(files: list[FileBounds[str]], layout: LayoutSpec | None) -> dict[str, Any]:
    """A partition's clustering depth (a table with a layout), from its files' bounds."""
    if layout is None:
        return {}
    d = layout.depth(files)
    return {"depth": round(d.mean, 4), "depth_max": d.max}


def clustering(parts: list[dict[str, Any]], layout: LayoutSpec | None) -> dict[str, Any] | None:
    """The table's clustering: its layout, the file-weighted mean depth of its partitions,
    the deepest point and how many partitions are over ``clustering_tolerance``."""
    if layout is None:
        return None
    files = sum(p["files"] for p in parts)
    return {
        "action": layout.action,
        "columns": list(layout.columns),
        "tolerance": layout.tolerance,
        "mean_depth": round(sum(p["depth"] * p["files"] for p in parts) / files, 4)
        if files
        else 0.0,
        "max_depth": max((p["depth_max"] for p in parts), default=0),
        "partitions_over": sum(p["depth"] > layout.tolerance for p in parts),
    }


def plan_ms(catalog: Any, name: str, runs: int = 3, snapshot_id: int | None = None) -> float:
    """Query planning as a fresh reader pays it (PyIceberg: load the table, plan every
    file scan task) at ``snapshot_id`` (the current snapshot when None), median of
    ``runs``, in milliseconds."""
    spent = []
    for _ in range(runs):
        started = time.perf_counter()
        table = catalog.load_table(tuple(name.split(".")))
        list(table.scan(snapshot_id=snapshot_id).plan_files())
        spent.append((time.perf_counter() - started) * 1000)
    return statistics.median(spent)
