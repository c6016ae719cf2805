"""What one table needs, as queue items: its partitions' rewrites and its maintenance.

:func:`partition_items`: every touched partition whose data files' MSE is over tolerance²
and whose small files' merge lowers it (``icefloe.optimizer.merge_need``) becomes one ``merge`` item
(``sort`` when the policy sorts), valued by entropy removed per byte rewritten
(``icefloe.optimizer.merge_estimate``), once it holds ``min_input_files`` small files (files under
Iceberg's minimum size, 0.75·T: the files a merge rewrites), or small files that together
hold more than a target file (Iceberg's rule, counted exactly as the actor's plan counts
it: ``PartitionStats.fills_target``), or has waited ``max_wait_hours``
with fewer (:func:`waiting`: the decider keeps when each such partition started waiting).
A table with a layout merges only neighbours in key order: its partitions are planned
from the file bounds the decider keeps (``ordered``), and queued only where a run merges.

Called by :meth:`icefloe.service.decider.loop.Decider.refresh` on every poll of every table: the
table's :class:`~icefloe.optimizer.maintenance_rules.MetadataHealth` is brought up to date (the
manifest list is read only when the snapshot changed) and stored for ``status``, ``tables`` and the
metrics; then each table-level action the policy enables (``rewrite_manifests``,
``expire_snapshots``, ``remove_orphan_files``) and the rules in
``icefloe.optimizer.maintenance_rules`` find due becomes one queue item for the whole table
(``partition`` None), on the same queue and under the same fair scheduling as the merges. An item's
enqueue time counts as the action's last run (an action pending or in flight is coalesced; an
interval runs from when it was scheduled). Orphan removal's interval starts when the table is first
seen; when it comes due, every table of the catalog is listed first, and it is *held* (not enqueued,
the reason kept for ``status``) while another table's location overlaps the table's
(:func:`hold_orphans`, ``icefloe.jobs.maintenance.sharing``).

The same decision without a queue, for ``icefloe maintain`` and the actor's manifests
after a batch: :func:`icefloe.jobs.maintenance.due.assess`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from icefloe.base.config import TablePolicy
from icefloe.jobs.maintenance.due import ORPHANS
from icefloe.jobs.maintenance.sharing import orphan_hold
from icefloe.optimizer import PartitionStats
from icefloe.optimizer.actions import TABLE_ACTIONS, table_needs
from icefloe.optimizer.maintenance_rules import MetadataHealth, Need
from icefloe.optimizer.verdict import Rules, Verdict, partition_verdict
from icefloe.state.health import HealthStore, read_health, summary, to_fields
from icefloe.state.queue import ActionItem, PriorityQueue
from icefloe.state.rolling import StatsStore

log = logging.getLogger("icefloe.decider")


def need_item(
    name: str,
    partition: str | None,
    need: Need,
    policy: TablePolicy,
    now: float,
    lane: str | None = None,
) -> ActionItem:
    """The queue item of one maintenance need, in the table's priority class."""
    return ActionItem.new(
        name,
        partition,
        need.action,
        policy.priority,
        need.cost_bytes,
        need.benefit,
        now,
        reason=need.reason,
        lane=lane,
    )


Ordered = Callable[[Sequence[str]], Mapping[str, Sequence[int]]]
"""Partition keys → each one's data file sizes in key order (a table with a layout:
:func:`icefloe.service.decider.layout.ordered_sizes`)."""


def partition_items(
    name: str,
    rules: Rules,
    priority: int,
    touched: Mapping[str, PartitionStats],
    now: float,
    min_input_files: int | None = None,
    ordered: Ordered | None = None,
) -> list[ActionItem]:
    """The data-rewrite items of the touched partitions whose verdict
    (:func:`icefloe.optimizer.verdict.partition_verdict`) is to act: a merge (the table's rewrite:
    merge, sort or z-order) or a delete compaction, which merges its small files too, under
    the id of its merge. ``min_input_files``: None = the policy's (2: a partition that has
    waited ``max_wait_hours``, :func:`waiting`). ``ordered`` (a table with a layout): its
    partitions' file sizes in key order, where a merge takes only neighbours."""
    verdicts = {k: partition_verdict(rules, s, floor=min_input_files) for k, s in touched.items()}
    merges = sorted(k for k, v in verdicts.items() if v.action == rules.rewrite)
    if ordered is not None and merges:  # again, with the sizes in key order
        for key, sizes in ordered(merges).items():
            verdicts[key] = partition_verdict(rules, touched[key], sizes, floor=min_input_files)
    items = []
    for key, verdict in sorted(verdicts.items()):
        if verdict.action is None:
            continue
        floor = verdict.min_input_files or 2  # a delete compaction: any two files
        items.append(verdict_item(name, key, verdict, priority, now, rules.rewrite, floor))
    return items


def verdict_item(
    name: str, key: str, verdict: Verdict, priority: int, now: float, lane: str, floor: int
) -> ActionItem:
    """The queue item of a partition's verdict to act (``icefloe.optimizer.verdict``), on ``lane``
    (the table's rewrite: a merge, a delete compaction and a re-sort of one partition
    coalesce) and planned with ``floor`` small files."""
    assert verdict.action is not None
    return ActionItem.new(
        name,
        key or None,
        verdict.action,
        priority,
        verdict.cost,
        verdict.benefit,
        now,
        reason=verdict.reason,
        lane=lane,
        min_input_files=floor,
    )


def _merges(rules: Rules) -> bool:
    return rules.enabled and rules.rewrite in rules.actions


@dataclass
class Waits:
    """One table's partitions that wait for ``min_input_files`` small files (:func:`waiting`)
    and when each started, read once per pass; only what changes is written back."""

    stats: StatsStore
    table: str
    since: dict[str, float]

    @classmethod
    def read(cls, stats: StatsStore, table: str, rules: Rules) -> Waits:
        """Read unless the policy never merges (then nothing of the table waits)."""
        return cls(stats, table, stats.waiting(table) if _merges(rules) else {})

    @classmethod
    def of(cls, stats: StatsStore, table: str, rules: Rules, waiting: dict[str, float]) -> Waits:
        """As :meth:`read`, from ``stats.waiting(table)`` read already."""
        return cls(stats, table, waiting if _merges(rules) else {})

    def update(self, held: Sequence[str], released: Sequence[str], now: float) -> None:
        """``held`` wait from ``now`` unless they wait already; ``released`` wait no more."""
        new = [k for k in held if k not in self.since]
        gone = [k for k in released if k in self.since]
        if new or gone:
            self.stats.mark_waiting(self.table, new, gone, now)
        self.since.update(dict.fromkeys(new, now))
        for key in gone:
            del self.since[key]


def enqueue_touched(
    queue: PriorityQueue,
    waits: Waits,
    rules: Rules,
    priority: int,
    touched: Mapping[str, PartitionStats],
    now: float,
    ordered: Ordered | None = None,
) -> list[int]:
    """One item per touched partition of ``waits.table`` that needs work (one pipelined
    enqueue), and the waiting ones kept in ``waits``; the enqueue outcomes (1 new, 0
    coalesced). ``ordered``: :func:`partition_items`'."""
    items = partition_items(waits.table, rules, priority, touched, now, ordered=ordered)
    outcomes = queue.enqueue_many(items, now) if items else []
    waits.update(*waiting(rules, touched), now)
    return list(outcomes)


def enqueue_overdue(
    queue: PriorityQueue,
    waits: Waits,
    rules: Rules,
    priority: int,
    now: float,
    ordered: Ordered | None = None,
) -> list[int]:
    """The partitions that waited ``max_wait_hours`` for ``min_input_files`` small files and
    still need work, enqueued as they are (two small files at least); released only after.
    ``ordered``: :func:`partition_items`'."""
    started_by = now - rules.max_wait_hours * 3600
    due = sorted(k for k, t in waits.since.items() if t <= started_by)
    if not due:
        return []
    found = waits.stats.partitions_of(waits.table, due)
    items = partition_items(waits.table, rules, priority, found, now, 2, ordered)
    outcomes = queue.enqueue_many(items, now) if items else []
    waits.update([], due, now)
    return list(outcomes)


def waiting(rules: Rules, touched: Mapping[str, PartitionStats]) -> tuple[list[str], list[str]]:
    """The touched partitions (held, the rest) that a merge would help but that hold fewer
    than ``min_input_files`` small files (two at least): they wait for more files, or for
    ``max_wait_hours`` (the decider keeps when each started waiting), whichever comes first.
    One queued at once because its small files fill a target file waits too: by the time
    the actor plans it the partition may have changed (a commit since, or another merge),
    and it must still be merged in time."""
    floor = rules.min_input_files
    held = []
    for key, stats in sorted(touched.items()):
        verdict = partition_verdict(rules, stats)
        if verdict.waiting or (verdict.action == rules.rewrite and stats.small_files < floor):
            held.append(key)
    chosen = set(held)
    return held, sorted(k for k in touched if k not in chosen)


def current_health(
    name: str, table: Any, policy: TablePolicy, health: HealthStore, cached: MetadataHealth | None
) -> MetadataHealth:
    """The table's health now; stored when it changed. ``cached``: this process's last
    health of the table (an unchanged table then costs neither a read nor a write)."""
    m = policy.maintenance
    target = m.manifest_target(table.properties)
    snap = table.current_snapshot()
    snapshot_id = None if snap is None else snap.snapshot_id
    if cached is not None and (cached.snapshot_id, cached.manifest_target) == (snapshot_id, target):
        same: dict[str, Any] = {
            "snapshot": snapshot_id,
            "manifest_target": target,
            "manifest_stats": cached.manifests,
            "metadata_bytes": cached.metadata_bytes,
        }
        current = read_health(table, target, m.retain_last, same)
        if to_fields(current) != to_fields(cached):  # e.g. new statistics: no new snapshot
            health.save(name, current)
        return current
    known = health.load(name)
    current = read_health(table, target, m.retain_last, known)
    if known is None or summary(to_fields(current)) != known:
        health.save(name, current)
    return current


def hold_orphans(
    name: str, table: Any, policy: TablePolicy, health: HealthStore, now_ms: int, needs: list[Need]
) -> list[Need]:
    """``needs`` without orphan removal when another table shares the location
    (``icefloe.jobs.maintenance.sharing``: the catalog is listed only when orphan removal is due).
    A held scan counts as run: it is checked again after ``orphan_interval_hours``; the
    reason is kept for ``status``."""
    if not any(n.action == ORPHANS for n in needs):
        return needs

    hold = orphan_hold(table.catalog, name, table, policy.maintenance.allow_shared_location)
    health.mark_hold(name, ORPHANS, hold)
    if hold is None:
        return needs
    log.warning("%s: remove_orphan_files held: %s", name, hold)
    health.mark_run(name, ORPHANS, now_ms)
    return [n for n in needs if n.action != ORPHANS]


def check_table(
    name: str,
    table: Any,
    policy: TablePolicy,
    now: float,
    queue: PriorityQueue,
    health: HealthStore,
    cached: MetadataHealth | None = None,
) -> tuple[list[int], MetadataHealth]:
    """Keep ``name``'s health and enqueue the table-level maintenance it needs: the enqueue
    outcomes (1 new, 0 coalesced) and the health. ``table`` None: its metadata is as
    ``cached`` was read (``icefloe.service.decider.light``); orphan removal then waits for a full
    refresh (its hold lists the catalog)."""
    if table is None and cached is not None:
        current = cached
    else:
        current = current_health(name, table, policy, health, cached)
    enabled = [a for a in policy.actions if a in TABLE_ACTIONS] if policy.enabled else []
    if table is None:
        enabled = [a for a in enabled if a != ORPHANS]
    if not enabled:
        return [], current
    now_ms = int(now * 1000)
    if ORPHANS in enabled:
        health.mark_run(name, ORPHANS, now_ms, only_if_unset=True)
    m = policy.maintenance
    rules = m.rules(current.manifest_target)
    needs = table_needs(current, rules, enabled, now_ms, health.last_runs(name))
    needs = hold_orphans(name, table, policy, health, now_ms, needs)
    outcomes = []
    for need in needs:
        outcomes.append(queue.enqueue(need_item(name, None, need, policy, now), now))
        health.mark_run(name, need.action, now_ms)
        log.info("%s: %s (%s)", name, need.action, need.reason)
    return outcomes, current
