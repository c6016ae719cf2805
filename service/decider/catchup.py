"""One table's new snapshots applied to the decider's kept state, and what they touched
decided: the catch-up step of :meth:`icefloe.service.decider.loop.Decider.refresh`."""

from __future__ import annotations

import logging
from typing import Any

from icefloe.base.config import TablePolicy
from icefloe.base.layoutspec import LayoutSpec
from icefloe.optimizer.verdict import Rules
from icefloe.service.decider.layout import enqueue_layout, pass_reads
from icefloe.service.decider.needs import Waits, enqueue_touched
from icefloe.service.decider.report import StepReport
from icefloe.state.layout import LayoutStore
from icefloe.state.ledger import Ledger
from icefloe.state.queue import PriorityQueue
from icefloe.state.rolling import StatsStore
from icefloe.state.rolling.scan import catch_up

log = logging.getLogger("icefloe.decider")


def catch_up_table(
    stores: tuple[StatsStore, LayoutStore, PriorityQueue, Ledger],
    waits: Waits,
    table: Any,
    policy: TablePolicy,
    rules: Rules,
    layout: LayoutSpec | None,
    now: float,
    report: StepReport,
) -> None:
    """Apply the table's new snapshots to its stats (and its layout's file bounds);
    enqueue what they touched needs."""
    stats, layouts, queue, ledger = stores
    name = waits.table
    result = catch_up(stats, name, table, rules.target, now, layout, layouts)
    report.applied.append(result)
    if result.full_scan:
        log.info("full scan of %s (%s): %d partitions", name, result.reason, len(result.touched))
    changed = result.touched.keys() | result.layout_touched
    ordered, read = pass_reads(layouts, name, layout, changed)
    decide = (queue, waits, rules, policy.priority, result.touched, now, ordered)
    candidates = report.count(enqueue_touched(*decide))
    if layout is not None:
        keys = sorted(result.layout_touched)
        lay = (queue, layouts, name, rules, policy.priority, layout, keys, now, read)
        report.count(enqueue_layout(*lay, settled=result.layout_settled))
    if not result.full_scan:
        ledger.count(
            {
                "partitions_changed": len(result.touched),
                "partition_scans": candidates,
                "file_events": result.file_events,
            }
        )
