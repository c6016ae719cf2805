"""What an action is: :class:`ActionSpec`, registered once in :mod:`icefloe.optimizer.actions`.

An action's module holds everything about it that is not Spark code: its name and scope
(one partition's data files, or a whole table's metadata), its rule (when it is due, over
the inputs the decider keeps), the Iceberg procedures a generic runner calls for it (or
none: a runner of its own in ``jobs``), how its result is verified, its config keys, and the
result fields the action history keeps. The names everywhere (config validation, the CLI's
choices, the DAGs' params, metrics, the queue's batching) come from the registry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from icefloe.optimizer.maintenance_rules import MaintenanceRules, MetadataHealth, Need

PARTITION, TABLE = "partition", "table"

Due = Callable[[MetadataHealth, MaintenanceRules, int, "int | None"], "Need | None"]
"""A table action's rule: (health, thresholds, now in ms, when it last ran in ms or None)
→ the need, or None when not due."""


@dataclass(frozen=True)
class Call:
    """One Iceberg procedure call: its name and its integer arguments (the table is always
    passed, by name)."""

    procedure: str
    args: Mapping[str, int]


Calls = Callable[[Mapping[str, Any]], tuple[Call, ...]]
"""A generic action's Iceberg procedures, in order, for a table of these facts (``Verify``'s)."""

Verify = Callable[[Mapping[str, Any], Mapping[str, Any]], "str | None"]
"""A generic action's check: (the table's facts before, after) → what is wrong, or None.
The facts: ``snapshot`` (current snapshot id), ``snapshots`` (count), ``statistics`` and
``partition_statistics`` (the snapshot ids they describe, in the current ancestry),
``partitioned``, ``changed_rows``."""


COLUMNS = "columns"  # a Setting's kind: column names, read with ``MaintenanceRules.names``


@dataclass(frozen=True)
class Setting:
    """A config key of an action, under ``maintenance:`` (``kind``: ``fraction`` (0, 1],
    ``hours`` > 0, ``count`` >= 1, or :data:`COLUMNS`: a list of column names)."""

    key: str
    default: float | tuple[str, ...]
    kind: str
    doc: str


@dataclass(frozen=True)
class ActionSpec:
    """One action, as its module declares it."""

    name: str
    scope: str  # PARTITION: a partition's data files; TABLE: the table's metadata
    summary: str
    rewrites_data: bool = False  # rewrites data files: batched by the actors, planned
    layout: bool = False  # keeps a layout (sort, zorder): measured by clustering depth
    requestable: bool = False  # ``optimize``/``request``/the ad-hoc DAG take it by name
    keys: tuple[str, ...] = ()  # the policy keys its rule reads (documentation)
    settings: tuple[Setting, ...] = ()  # keys it adds under ``maintenance:``
    due: Due | None = None  # TABLE scope: when it is due (PARTITION: ``icefloe.optimizer.verdict``)
    calls: Calls | None = None  # Iceberg procedures the generic runner CALLs
    verify: Verify | None = None  # the generic runner's check of the calls' result
    # a TABLE action without ``calls``: its runner in ``icefloe.jobs``, ``"module:function"``
    # (named, never imported: the core stays pure; ``icefloe.jobs.maintenance.run`` loads it)
    runner: str = ""
    history: tuple[str, ...] = ()  # result fields the action history keeps
    # ``icefloe maintain`` without ``--action`` runs it when due even if the policy does
    # not enable it (else only when enabled, or named)
    maintain_when_due: bool = True
    dry_run: bool = False  # has a dry run of its own that lists (``maintain --dry-run`` runs it)
    # a queued item is checked to be still due before it runs (another run may have done
    # it since it was queued); a requested one runs regardless
    recheck_due: bool = False
