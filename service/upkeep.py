"""The decider's maintenance decisions for one table: manifests, snapshots, orphan files.

Called by :meth:`service.decider.Decider.refresh` on every poll of a table whose policy
enables a table-level maintenance action (``rewrite_manifests``, ``expire_snapshots``,
``remove_orphan_files``): the table's :class:`~optimizer.maintenance.MetadataHealth` is
brought up to date (the manifest list is read only when the snapshot changed), stored for
``status`` and the metrics, and each action the rules in ``optimizer.maintenance`` find
due becomes one queue item for the whole table (``partition`` None), on the same queue and
under the same fair scheduling as the merges. An item's enqueue time counts as the action's
last run (an action pending or in flight is not decided again; an interval runs from when
it was scheduled). Orphan removal's interval starts when the table is first seen.
"""

from __future__ import annotations

import logging
from typing import Any

from optimizer.maintenance import TABLE_ACTIONS, table_needs
from service.health import HealthStore, read_health
from service.queue import ActionItem, PriorityQueue

log = logging.getLogger("icefloe.decider")


def check_table(
    name: str,
    table: Any,
    policy: Any,
    now: float,
    queue: PriorityQueue,
    health: HealthStore,
) -> list[int]:
    """Enqueue the table-level maintenance ``name`` needs; the enqueue outcomes (1 new,
    0 coalesced)."""
    enabled = [a for a in policy.actions if a in TABLE_ACTIONS]
    if not enabled or not policy.enabled:
        return []
    now_ms = int(now * 1000)
    m = policy.maintenance
    target = m.manifest_target(table.properties)
    known = health.load(name)
    current = read_health(table, target, m.retain_last, known)
    if known is None or known["snapshot"] != current.snapshot_id:
        health.save(name, current)
    if "remove_orphan_files" in enabled:
        health.mark_run(name, "remove_orphan_files", now_ms, only_if_unset=True)
    needs = table_needs(current, m.rules(target), enabled, now_ms, health.last_runs(name))
    outcomes = []
    for need in needs:
        item = ActionItem.new(
            name,
            None,
            need.action,
            policy.priority,
            need.cost_bytes,
            need.benefit,
            now,
            reason=need.reason,
        )
        outcomes.append(queue.enqueue(item, now))
        health.mark_run(name, need.action, now_ms)
        log.info("%s: %s (%s)", name, need.action, need.reason)
    return outcomes
