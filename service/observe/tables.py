"""One table's state from its metadata (PyIceberg, no Spark, no Redis): files, bytes,
partitions with their entropy, the metadata health and the documented health score
(``docs/health-score.md``). ``icefloe tables``, the demo and the dashboard show it."""

from __future__ import annotations

import statistics
import time
from typing import Any

from optimizer.health_score import removable_mse
from service.base.catalog import load_table
from service.base.config import Config
from service.base.tablestats import current_partitions, table_score
from service.state.health import read_health


def table_summary(cfg: Config, catalog: Any, name: str) -> dict[str, Any]:
    """Files, bytes, partitions, snapshot and entropy of one table, from metadata only."""
    table = load_table(catalog, name)
    inputs = cfg.plan_inputs(name, table.properties)
    policy, target = inputs.policy, inputs.target
    snap = table.current_snapshot()
    m = policy.maintenance
    health = read_health(table, m.manifest_target(table.properties), m.retain_last)
    parts = []
    pooled = []
    for p in current_partitions(table):
        s = p.stats(target)
        pooled.append(s)
        parts.append(
            {
                "partition": p.partition.display(),
                "key": p.key,
                "files": s.n,
                "bytes": s.total_bytes,
                "mse": s.mse,
                "rmse_fraction": (s.mse**0.5) / target,
                # over tolerance with enough small files to merge (min_input_files)
                "needs_work": s.needs_work(inputs.tolerance)
                and s.undersized >= inputs.min_input_files,
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
