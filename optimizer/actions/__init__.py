"""The action registry: every action icefloe decides and runs, one module each
(:class:`~icefloe.optimizer.actions.spec.ActionSpec`), registered here once. Adding an action
is its module and one line in :data:`MODULES`.

Everything that names actions takes them from here: config validation (a policy's
``actions``, its ``maintenance:`` settings), the CLI's and the DAGs' choices, the queue's
batching, the decider's table rules (:func:`table_needs`), the metrics.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from importlib import import_module

from icefloe.optimizer.actions.spec import PARTITION, TABLE, ActionSpec, Setting
from icefloe.optimizer.maintenance_rules import MaintenanceRules, MetadataHealth, Need

MODULES = (
    "merge",
    "sort",
    "zorder",
    "compact_deletes",
    "rewrite_manifests",
    "expire_snapshots",
    "remove_orphan_files",
    "compute_stats",
    "skew_report",
)
"""The registry, one line an action, in the order a table's needs are decided: each names
the module of this package that holds the action's ``SPEC`` (the module is named for it)."""


def _spec(module: str) -> ActionSpec:
    spec = getattr(import_module(f"{__name__}.{module}"), "SPEC", None)
    if not isinstance(spec, ActionSpec) or spec.name != module:
        raise TypeError(f"{__name__}.{module} must hold SPEC, the ActionSpec named {module!r}")
    return spec


REGISTRY: tuple[ActionSpec, ...] = tuple(_spec(m) for m in MODULES)

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
