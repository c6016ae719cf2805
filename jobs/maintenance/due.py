"""Which table-level maintenance is due on a table now, without a queue.

The decider turns the same decision into queue items (``icefloe.service.decider.needs``); this is
what ``icefloe maintain`` shows and what an actor checks before rewriting a table's
manifests in the lease of the batch it just committed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from icefloe.optimizer.actions import TABLE_ACTIONS, table_needs
from icefloe.optimizer.maintenance_rules import MetadataHealth, Need
from icefloe.state.health import read_health

if TYPE_CHECKING:
    from icefloe.base.config import TablePolicy

ORPHANS = "remove_orphan_files"


def assess(
    table: Any,
    policy: TablePolicy,
    now: float,
    last_runs_ms: Mapping[str, int],
    known: Mapping[str, Any] | None = None,
    actions: tuple[str, ...] = TABLE_ACTIONS,
    held: Mapping[str, str] | None = None,
) -> tuple[MetadataHealth, list[Need]]:
    """The health and the due actions among ``actions`` (default: all three, whatever
    the policy enables), but none of ``held`` (action → why)."""
    m = policy.maintenance
    target = m.manifest_target(table.properties)
    current = read_health(table, target, m.retain_last, known)
    runs = dict(last_runs_ms)
    runs.setdefault(ORPHANS, 0)  # never run: due now
    return current, table_needs(current, m.rules(target), actions, int(now * 1000), runs, held)
