"""The leader's history duty: the actors' action records, from Redis into the history table.

Actors add each record to a Redis stream as they finish (``record_action``); every
``history.flush_seconds`` the leader takes the records after the newest one the table
holds and appends them in one commit (:func:`jobs.history.table.append`: the rows and that
newest id together), then trims the stream up to it. A crash between the commit and the
trim leaves records the table already holds in the stream; the next flush starts after
the table's newest id, so they are skipped: nothing is lost, nothing appended twice. A
Redis ``FLUSHALL`` loses only what was not yet flushed.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Protocol

from jobs.history import table as history
from service.base.config import Config

log = logging.getLogger("icefloe.history")


class HistoryLog(Protocol):
    """The records actors handed to Redis, oldest first (the ledger's stream)."""

    def history_after(
        self, last_id: str | None, count: int
    ) -> list[tuple[str, Mapping[str, Any]]]: ...

    def trim_history(self, upto_id: str) -> None: ...


def flush(cfg: Config, catalog: Any, records: HistoryLog, decider_id: str | None) -> int:
    """Append the records the table does not hold yet (at most ``flush_records``, one
    commit); the number appended."""
    if not cfg.history.enabled:
        return 0
    table = history.ensure_table(catalog, cfg.history.table)
    last = history.last_appended(table)
    batch = records.history_after(last, cfg.history.flush_records)
    if batch:
        rows = [history.to_row(rid, entry, decider_id) for rid, entry in batch]
        history.append(table, rows, batch[-1][0])
        last = batch[-1][0]
        log.info("history: %d records appended to %s", len(batch), cfg.history.table)
    if last is not None:
        records.trim_history(last)
    return len(batch)


def pending(
    cfg: Config, catalog: Any, records: HistoryLog, decider_id: str | None = None
) -> list[dict[str, Any]]:
    """The records not yet in the table, as rows (``icefloe history`` shows them too)."""
    table = history.ensure_table(catalog, cfg.history.table)
    batch = records.history_after(history.last_appended(table), 1_000_000)
    return [history.to_row(rid, entry, decider_id) for rid, entry in batch]
