"""The history flush: the actors' action records, from Redis into the history table.

Actors add each record to a Redis stream as they finish (``record_action``); every
``history.flush_seconds`` the leader takes the records after the newest one the table
holds and appends them in one commit (:func:`icefloe.jobs.history.table.append`: the rows and that
newest id together), then trims the stream up to it. A crash between the commit and the
trim leaves records the table already holds in the stream; the next flush starts after
the table's newest id, so they are skipped: nothing is lost, nothing appended twice. The
commit is conditional on the table as read (PyIceberg does not retry it on a refreshed
table): a flusher that stalled while another leader appended the same records finds its
commit refused, reads the newest id again and appends only what is still new. An actor
flushes too before it exits (:func:`icefloe.service.actor.loop.run_actor`), so a run's records do
not wait in Redis for the next leader pass. A Redis ``FLUSHALL`` loses only what was not
yet flushed.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from icefloe.base.config import Config
from icefloe.jobs.history import table as history
from icefloe.state.ledger import Ledger

log = logging.getLogger("icefloe.history")


ATTEMPTS = 5
"""Flushes whose commit another flusher beat, each read again from the table, before this
flush gives up until its next turn (the records stay in Redis)."""


def flush(cfg: Config, catalog: Any, records: Ledger, decider_id: str | None) -> int:
    """Append the records the table does not hold yet (at most ``flush_records``, one
    commit); the number appended."""
    if not cfg.history.enabled:
        return 0
    for _ in range(ATTEMPTS):
        appended = _flush_once(cfg, catalog, records, decider_id)
        if appended is not None:
            return appended
        log.info("history: another flusher committed first; reading the table again")
    log.warning("history: %d commits in a row lost to other flushers; next time", ATTEMPTS)
    return 0


def _flush_once(cfg: Config, catalog: Any, records: Ledger, decider_id: str | None) -> int | None:
    """One read of the table's newest id and one conditional commit of what follows it;
    None when another commit came first (nothing committed, nothing trimmed)."""
    table = history.load(catalog, cfg.history.table)
    if table is None:  # created with the first record, then read as any flusher reads it
        if not records.history_after(None, 1):
            return 0
        table = history.ensure_table(catalog, cfg.history.table)
    table = history.without_retries(table)
    last = history.last_appended(table)
    batch = records.history_after(last, cfg.history.flush_records)
    if batch:
        rows = [history.to_row(rid, entry, decider_id) for rid, entry in batch]
        if not history.append(table, rows, batch[-1][0]):
            return None
        last = batch[-1][0]
        log.info("history: %d records appended to %s", len(batch), cfg.history.table)
    if last is not None:
        records.trim_history(last)
    return len(batch)


Kept = dict[tuple[str | None, datetime | None], tuple[str, list[dict[str, Any]]]]
"""The history table's rows as read at one metadata version, by (table name, since)."""


def read_all(
    cfg: Config,
    catalog: Any,
    records: Ledger | None,
    name: str | None,
    since: datetime | None,
    kept: Kept | None = None,
) -> list[dict[str, Any]]:
    """What ``icefloe history`` shows: the table's records of ``name`` (every table when
    None) ended since ``since``, then those still waiting in Redis (``pending``: true),
    oldest first; ``records`` None when Redis is away. Nothing is written. ``kept``: a
    caller that reads often (the dashboard) keeps the table's rows here, and they are read
    again only when the table changed."""
    table = history.load(catalog, cfg.history.table)
    rows = [] if table is None else _flushed(table, name, since, kept)
    last = None if table is None else history.last_appended(table)
    waiting = [] if records is None else records.history_after(last, cfg.history.flush_records)
    for rid, entry in waiting:
        row = history.to_row(rid, entry, None) | {"pending": True}
        if (name is None or row["table_name"] == name) and (
            since is None or row["ended_at"] >= since
        ):
            rows.append(row)
    return [history.with_predictions(r) for r in rows]


def _flushed(
    table: Any, name: str | None, since: datetime | None, kept: Kept | None
) -> list[dict[str, Any]]:
    """The history table's rows of ``name`` since ``since``; from ``kept`` when it holds
    them as of the table's current metadata."""
    if kept is None:
        return history.read(table, name, since)
    version = str(table.metadata_location)
    hit = kept.get((name, since))
    if hit is None or hit[0] != version:
        hit = kept[(name, since)] = (version, history.read(table, name, since))
    return [dict(row) for row in hit[1]]
