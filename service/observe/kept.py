"""Each table's state as the decider keeps it: one record a table, read by ``tables``,
``status`` and the dashboard without a catalog call.

The decider builds a table's record (:func:`build_record`) from what it keeps anyway -- the
rolling stats of every partition, the metadata health, the layout's file bounds and depths,
the holds -- whenever the table's snapshot or health changed, it enqueued something for it,
or the record is ``RECORD_MAX_AGE_S`` old, and stores it in one Redis hash
(``HealthStore.save_record``). A reader gets every table's record in one round trip and
turns it into the row ``tables --fresh`` reads from the catalog (:func:`kept_row`): the same
health score, files, bytes, partitions, the verdicts (``icefloe.optimizer.verdict``; at most
``VERDICTS_KEPT`` a table, the count beside), the clustering and the statistics' age, with
when the decider last saw it (``seen_at``).

The score is the one the reader would work out at its own ``now`` from the kept inputs,
with the table's policy resolved against the target the decider resolved (once a distinct
policy: :class:`Policies`). The decider scores each record as it writes it and keeps the
times that score holds over (:func:`kept_score`: only the oldest snapshot's age moves a
score, and only on its ramp); a reader whose policy is the decider's and whose ``now`` is
within them takes it as is, any other works it out again (:func:`row_score`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from contextlib import closing
from typing import Any

from icefloe.base.config import TARGET_PROPERTY, Config, PlanInputs, TablePolicy
from icefloe.base.errors import ServiceUnavailable
from icefloe.base.layoutspec import LayoutSpec, key_sizes
from icefloe.base.partition_key import display_key
from icefloe.base.redis_client import connect
from icefloe.base.tablestats import score_inputs, table_score
from icefloe.base.verdicts import layout_of
from icefloe.optimizer import PartitionStats
from icefloe.optimizer.health_score import health_score, removable_mse, steady_ages
from icefloe.optimizer.layout import Depth
from icefloe.optimizer.maintenance_rules import MetadataHealth
from icefloe.optimizer.verdict import ACT, NONE, WAIT, Rules, Verdict, partition_verdict
from icefloe.state.health import from_summary, statistics_age, summary, to_fields
from icefloe.state.layout import LayoutStore, kept_and_missing, zorder_columns
from icefloe.state.open import open_state

RECORD_MAX_AGE_S = 300.0  # a record is built again at least this often (ages, waits)
VERDICTS_KEPT = 100  # verdicts kept a table (the rest counted): a record stays small
RECORD_VERSION = 1  # a record without "score" (an older decider's) is scored by its reader


def inputs_of(cfg: Config, name: str, target: int | None) -> PlanInputs:
    """The table's plan inputs as the decider resolved them: its policy with the target the
    decider kept (override, the table's property, default) as the table's property, so the
    tolerance and the rest follow without a catalog round trip."""
    props = {} if target is None else {TARGET_PROPERTY: str(target)}
    return cfg.plan_inputs(name, props)


def policy_key(policy: TablePolicy) -> str:
    """A short fingerprint of the whole policy: a kept score is reused only by a reader
    whose policy of the table is the one the decider scored it with."""
    return hashlib.blake2b(repr(policy).encode(), digest_size=8).hexdigest()


class Policies:
    """:func:`inputs_of` and :func:`policy_key` of each table, resolved once a distinct
    policy: the tables without an override of their own that keep the same target share one
    (resolving a policy copies a dataclass; at 10,000 tables that was a quarter of a row)."""

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        self._known: dict[tuple[str | None, int | None], tuple[PlanInputs, str]] = {}

    def of(self, name: str, target: int | None) -> tuple[PlanInputs, str]:
        key = (name if name in self.cfg.tables else None, target)
        known = self._known.get(key)
        if known is None:
            inputs = inputs_of(self.cfg, name, target)
            known = self._known[key] = (inputs, policy_key(inputs.policy))
        return known


def kept_verdicts(
    layouts: LayoutStore | None,
    name: str,
    rules: Rules,
    parts: Mapping[str, PartitionStats],
    spec: LayoutSpec | None,
) -> dict[str, Verdict]:
    """Each partition's verdict (:func:`icefloe.optimizer.verdict.partition_verdict`) from the kept
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
    where none is kept (:func:`~icefloe.state.layout.kept_and_missing`)."""
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
    data_mse = removable_mse(parts.values(), inputs.target)
    return {
        "v": RECORD_VERSION,
        "at": now,
        "target": inputs.target,
        "files": sum(s.n for s in parts.values()),
        "bytes": sum(s.total_bytes for s in parts.values()),
        "partitions": len(parts),
        "data_mse": data_mse,
        **kept_score(inputs.policy, data_mse, health, now),
        "acting": sum(v.state == ACT for _, v in shown),
        "waiting": sum(v.state == WAIT for _, v in shown),
        "verdicts": {k: v.to_dict() for k, v in shown[:VERDICTS_KEPT]},
        "clustering": clustering,
        "health": to_fields(health),
        "held": dict(held),
    }


def kept_score(
    policy: TablePolicy, data_mse: float, health: MetadataHealth, now: float
) -> dict[str, Any]:
    """The table's health score at ``now`` as a record keeps it: the score, the times (ms,
    both included; None: unbounded) between which it stays that score
    (:func:`icefloe.optimizer.health_score.steady_ages`: only the oldest snapshot's age moves it),
    and the policy it was scored against (:func:`policy_key`)."""
    inputs = score_inputs(policy, data_mse, health, now)
    low, high = steady_ages(inputs)
    oldest = health.oldest_snapshot_ms or 0  # None: the score does not age (both None)
    return {
        "score": health_score(inputs).to_dict(),
        "score_ms": [None if a is None else oldest + a for a in (low, high)],
        "policy": policy_key(policy),
    }


def held_score(
    policies: Policies, name: str, record: Mapping[str, Any], now: float
) -> dict[str, Any] | None:
    """The score ``record`` keeps (as kept: not a copy) when it holds at ``now`` for this
    reader: scored against the same policy, ``now`` within its span; else None."""
    kept: dict[str, Any] | None = record.get("score")
    return kept if kept is not None and _holds(policies, name, record, now) else None


def rank_of(record: Mapping[str, Any]) -> dict[str, Any] | None:
    """What a list ranks ``record``'s table by, kept beside it (a few dozen bytes): its
    error, or its score's number with the span and policy it holds for (its ``at`` to
    tell a reader's cached score of it). None for a record without a score (an older
    decider's)."""
    if record.get("error"):
        return {"at": record.get("at"), "error": True}
    score = record.get("score")
    if score is None or "score_ms" not in record:
        return None
    keep = ("at", "score_ms", "policy", "target")
    return {"score": score["score"], **{k: record.get(k) for k in keep}}


def held_rank(policies: Policies, name: str, rank: Mapping[str, Any], now: float) -> float | None:
    """The score number a kept ``rank`` (:func:`rank_of`) holds at ``now`` for this
    reader, as :func:`held_score` for its record; None when it does not."""
    score = rank.get("score")
    return float(score) if score is not None and _holds(policies, name, rank, now) else None


def _holds(policies: Policies, name: str, kept: Mapping[str, Any], now: float) -> bool:
    """Whether a kept score (a record's or its rank's) was scored against this reader's
    policy of ``name`` and ``now`` is within the span it holds for."""
    span = kept.get("score_ms")
    if span is None or kept.get("policy") != policies.of(name, kept["target"])[1]:
        return False  # an older decider's record, or another policy
    now_ms = int(now * 1000)
    return (span[0] is None or now_ms >= span[0]) and (span[1] is None or now_ms <= span[1])


def row_score(
    policies: Policies, name: str, record: Mapping[str, Any], now: float
) -> dict[str, Any]:
    """The table's health score at ``now`` from its kept record: the record's own while it
    holds (:func:`held_score`), else worked out again from the record's inputs."""
    held = held_score(policies, name, record, now)
    if held is not None:
        return dict(held)
    health = from_summary(summary(record["health"]))
    policy = policies.of(name, record["target"])[0].policy
    return table_score(policy, record["data_mse"], health, now).to_dict()


def kept_row(
    policies: Policies,
    name: str,
    record: Mapping[str, Any],
    now: float,
    score: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``tables`` row of a kept record, as :func:`icefloe.service.observe.tables.table_summary`
    gives it fresh (its partitions counted, not listed), with ``seen_at`` and ``age_s``.
    ``score``: its :func:`row_score` as the caller has it (None: worked out here)."""
    if record.get("error"):
        return {"table": name, "error": record["error"], "seen_at": record.get("at")}
    inputs, _ = policies.of(name, record["target"])
    health = from_summary(summary(record["health"]))
    return {
        "table": name,
        "health": row_score(policies, name, record, now) if score is None else score,
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


def kept_names(cfg: Config) -> list[str] | None:
    """The tables ``cfg`` manages as the decider last listed them (one Redis read, no
    catalog call), when that list covers what ``cfg`` manages: every table it names and a
    table of each namespace it manages. None when it does not (no decider has listed them,
    the config manages more since, a namespace has no table) or Redis is away: then list
    them from the catalog."""
    try:
        with closing(connect(cfg)) as client:
            listed = open_state(cfg, client).health.managed()
    except ServiceUnavailable:
        return None  # the catalog lists them; reading their records says what is wrong
    if listed is None:
        return None
    history = cfg.history.table if cfg.history.enabled else None
    names = [n for n in listed if cfg.is_managed(n) or n == history]
    spaces = {n.rsplit(".", 1)[0] for n in names}
    named = set(cfg.managed.tables) | set(cfg.tables)
    if not named <= set(names) or not set(cfg.managed.namespaces) <= spaces:
        return None
    return names


def kept_rows(cfg: Config, names: list[str], now: float) -> list[dict[str, Any]]:
    """The ``tables`` rows of ``names`` from the records the decider keeps (one Redis round
    trip a thousand tables); a table with none is listed as not seen yet."""
    if not names:
        return []
    try:
        with closing(connect(cfg)) as client:
            records = open_state(cfg, client).health.records(names)
    except ServiceUnavailable as e:  # say what works without Redis
        raise ServiceUnavailable(f"{e} (--fresh reads each table from the catalog)") from e
    policies = Policies(cfg)
    return [
        kept_row(policies, n, records[n], now) if n in records else {"table": n, "seen": False}
        for n in names
    ]
