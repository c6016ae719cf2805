"""The action registry: every action icefloe decides and runs, one module each
(:class:`~icefloe.optimizer.actions.spec.ActionSpec`), registered here once. Adding an action is
its module and one line below.

Everything that names actions takes them from here: config validation (a policy's
``actions``, its ``maintenance:`` settings), the CLI's and the DAGs' choices, the queue's
batching, the decider's table rules (:func:`table_needs`), the metrics.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from icefloe.optimizer.actions import (
    compact_deletes,
    compute_stats,
    expire_snapshots,
    merge,
    remove_orphan_files,
    rewrite_manifests,
    skew_report,
    sort,
    zorder,
)
from icefloe.optimizer.actions.spec import PARTITION, TABLE, ActionSpec, Setting
from icefloe.optimizer.maintenance_rules import MaintenanceRules, MetadataHealth, Need

REGISTRY: tuple[ActionSpec, ...] = (
    merge.SPEC,
    sort.SPEC,
    zorder.SPEC,
    compact_deletes.SPEC,
    rewrite_manifests.SPEC,
    expire_snapshots.SPEC,
    remove_orphan_files.SPEC,
    compute_stats.SPEC,
    skew_report.SPEC,
)

BY_NAME: Mapping[str, ActionSpec] = {a.name: a for a in REGISTRY}
NAMES = tuple(BY_NAME)
REQUESTABLE = tuple(a.name for a in REGISTRY if a.requestable)  # optimize / request
DATA_ACTIONS = frozenset(a.name for a in REGISTRY if a.rewrites_data)  # batched, planned
LAYOUT_ACTIONS = tuple(a.name for a in REGISTRY if a.layout)
TABLE_ACTIONS = tuple(a.name for a in REGISTRY if a.scope == TABLE)
MAINTENANCE_ACTIONS = tuple(a.name for a in REGISTRY if not a.requestable)
SETTINGS: tuple[Setting, ...] = tuple(s for a in REGISTRY for s in a.settings)

__all__ = [
    "BY_NAME",
    "DATA_ACTIONS",
    "LAYOUT_ACTIONS",
    "MAINTENANCE_ACTIONS",
    "NAMES",
    "PARTITION",
    "REGISTRY",
    "REQUESTABLE",
    "SETTINGS",
    "TABLE",
    "TABLE_ACTIONS",
    "ActionSpec",
    "Setting",
    "table_needs",
]


def table_needs(
    health: MetadataHealth,
    rules: MaintenanceRules,
    enabled: Iterable[str],
    now_ms: int,
    last_runs_ms: Mapping[str, int],
    held: Mapping[str, str] | None = None,
) -> list[Need]:
    """The table-level actions due among ``enabled``, in the registry's order, by each one's
    rule. ``last_runs_ms``: when each action last ran (orphan removal: when the table was
    first seen). ``held``: actions that must not run whatever is due, action → why (orphan
    removal on a location another table shares: ``icefloe.optimizer.locations``)."""
    on = set(enabled) - set(held or {})
    needs = []
    for spec in REGISTRY:
        if spec.name in on and spec.due is not None:
            need = spec.due(health, rules, now_ms, last_runs_ms.get(spec.name))
            if need is not None:
                needs.append(need)
    return needs
