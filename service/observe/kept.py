"""Each table's state as the decider keeps it: one record a table, read by ``tables``,
``status`` and the dashboard without a catalog call.

The decider builds a table's record (:func:`build_record`) from what it keeps anyway -- the
rolling stats of every partition, the metadata health, the layout's file bounds and depths,
the holds -- whenever the table's snapshot or health changed, it enqueued something for it,
or the record is ``RECORD_MAX_AGE_S`` old, and stores it in one Redis hash
(``HealthStore.save_record``). A reader gets every table's record in one round trip and
turns it into the row ``tables --fresh`` reads from the catalog (:func:`kept_row`): the same
health score (computed at the reader's ``now`` from the kept inputs, with the table's
policy resolved against the target the decider resolved), files, bytes, partitions, the
verdicts (``optimizer.verdict``; at most ``VERDICTS_KEPT`` a table, the count beside), the
clustering and the statistics' age, with when the decider last saw it (``seen_at``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from optimizer import PartitionStats
from optimizer.health_score import removable_mse
from optimizer.layout import Depth
from optimizer.maintenance_rules import MetadataHealth
from optimizer.verdict import ACT, NONE, WAIT, Rules, Verdict, partition_verdict
from service.base.config import TARGET_PROPERTY, Config, PlanInputs
from service.base.errors import ServiceUnavailable
from service.base.keys import Keys
from service.base.layoutspec import LayoutSpec, key_sizes
from service.base.partition_key import display_key
from service.base.redis_client import connect
from service.base.tablestats import table_score
from service.base.verdicts import layout_of
from service.state.health import from_summary, statistics_age, summary, to_fields
from service.state.health.redis import RedisHealth
from service.state.layout import LayoutStore, kept_and_missing, zorder_columns

RECORD_MAX_AGE_S = 300.0  # a record is built again at least this often (ages, waits)
VERDICTS_KEPT = 100  # verdicts kept a table (the rest counted): a record stays small
RECORD_VERSION = 1


def inputs_of(cfg: Config, name: str, target: int | None) -> PlanInputs:
    """The table's plan inputs as the decider resolved them: its policy with the target the
    decider kept (override, the table's property, default) as the table's property, so the
    tolerance and the rest follow without a catalog round trip."""
    props = {} if target is None else {TARGET_PROPERTY: str(target)}
    return cfg.plan_inputs(name, props)


def kept_verdicts(
    layouts: LayoutStore | None,
    name: str,
    rules: Rules,
    parts: Mapping[str, PartitionStats],
    spec: LayoutSpec | None,
) -> dict[str, Verdict]:
    """Each partition's verdict (:func:`optimizer.verdict.partition_verdict`) from the kept
    stats and, with a kept layout, the kept file bounds of the partitions it may act on
    (over tolerance², or deeper than the clustering tolerance)."""
    verdicts = {k: partition_verdict(rules, s) for k, s in parts.items()}
    if spec is None or layouts is None:
        return verdicts
    depths = kept_depths(layouts, name, spec.corner_columns)
    deep = {k for k, d in depths.items() if d.mean > rules.clustering_tolerance}
    settled = layouts.saved_settled(name) if deep else set()  # the decider's: not queued
    keys = sorted(k for k in parts if k in deep or parts[k].needs_work(rules.tolerance))
    for key, files in layouts.files(name, keys).items():
        if key in parts and files:
            sizes = key_sizes(files, spec.corner_columns)
            layout = layout_of(spec, files, rules.target, settled=key in settled)
            verdicts[key] = partition_verdict(rules, parts[key], sizes, layout)
    return verdicts


def kept_depths(layouts: LayoutStore, name: str, zorder: int) -> dict[str, Depth]:
    """Each partition's depth as the decider keeps it; measured from the stored files only
    where none is kept (:func:`~service.state.layout.kept_and_missing`)."""
    kept, measured = kept_and_missing(layouts, name, zorder)
    return kept | measured


def clustering_of(
    layouts: LayoutStore | None, name: str, tolerance: float, detail: bool = True
) -> dict[str, Any] | None:
    """The layout the decider keeps of ``name`` (None without one): its mean depth (over
    files), the deepest point and the partitions deeper than ``clustering_tolerance``
    (``detail``: each; else how many)."""
    sig = None if layouts is None else layouts.signature(name)
    if layouts is None or sig is None:
        return None
    by_part = kept_depths(layouts, name, zorder_columns(sig))
    files = sum(d.files for d in by_part.values())
    over = [(k, d) for k, d in sorted(by_part.items()) if d.mean > tolerance]
    out: dict[str, Any] = {
        "layout": sig,
        "tolerance": tolerance,
        "mean_depth": round(sum(d.mean * d.files for d in by_part.values()) / files, 4)
        if files
        else 0.0,
        "max_depth": max((d.max for d in by_part.values()), default=0),
        "partitions_over": len(over),
    }
    if detail:
        out["over_tolerance"] = [
            {"partition": display_key(k), "key": k, "depth": round(d.mean, 4), "max": d.max}
            for k, d in over
        ]
    return out


def build_record(
    inputs: PlanInputs,
    parts: Mapping[str, PartitionStats],
    health: MetadataHealth,
    verdicts: Mapping[str, Verdict],
    clustering: dict[str, Any] | None,
    held: Mapping[str, str],
    now: float,
) -> dict[str, Any]:
    """One table's kept record (JSON-able): what :func:`kept_row` needs and nothing more."""
    shown = sorted((k, v) for k, v in verdicts.items() if v.state != NONE)
    return {
        "v": RECORD_VERSION,
        "at": now,
        "target": inputs.target,
        "files": sum(s.n for s in parts.values()),
        "bytes": sum(s.total_bytes for s in parts.values()),
        "partitions": len(parts),
        "data_mse": removable_mse(parts.values(), inputs.target),
        "acting": sum(v.state == ACT for _, v in shown),
        "waiting": sum(v.state == WAIT for _, v in shown),
        "verdicts": {k: v.to_dict() for k, v in shown[:VERDICTS_KEPT]},
        "clustering": clustering,
        "health": to_fields(health),
        "held": dict(held),
    }


def kept_row(cfg: Config, name: str, record: Mapping[str, Any], now: float) -> dict[str, Any]:
    """The ``tables`` row of a kept record, as :func:`service.observe.tables.table_summary`
    gives it fresh (its partitions counted, not listed), with ``seen_at`` and ``age_s``."""
    if record.get("error"):
        return {"table": name, "error": record["error"], "seen_at": record.get("at")}
    inputs = inputs_of(cfg, name, record["target"])
    health = from_summary(summary(record["health"]))
    score = table_score(inputs.policy, record["data_mse"], health, now)
    return {
        "table": name,
        "health": score.to_dict(),
        "files": record["files"],
        "bytes": record["bytes"],
        "snapshot_id": health.snapshot_id,
        "manifests": health.manifests.n,
        "snapshots": health.snapshots,
        "delete_files": health.delete_files,
        "delete_ratio": health.delete_ratio,
        "clustering": record["clustering"],
        "statistics": statistics_age(health),
        "partitions": record["partitions"],
        "partitions_needing_work": record["acting"],
        "partitions_waiting": record["waiting"],
        "verdicts": record.get("verdicts"),  # None: read without them
        "held": record.get("held", {}),
        "target_file_size_bytes": inputs.target,
        "tolerance_bytes": inputs.tolerance,
        "seen_at": record["at"],
        "age_s": round(max(0.0, now - record["at"]), 1),
    }


def kept_rows(cfg: Config, names: list[str], now: float) -> list[dict[str, Any]]:
    """The ``tables`` rows of ``names`` from the records the decider keeps (one Redis round
    trip a thousand tables); a table with none is listed as not seen yet."""
    if not names:
        return []
    try:
        client = connect(cfg)
        try:
            records = RedisHealth(client, Keys.for_config(cfg)).records(names)
        finally:
            client.close()
    except ServiceUnavailable as e:  # say what works without Redis
        raise ServiceUnavailable(f"{e} (--fresh reads each table from the catalog)") from e
    return [
        kept_row(cfg, n, records[n], now) if n in records else {"table": n, "seen": False}
        for n in names
    ]
