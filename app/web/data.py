"""What the dashboard shows, as JSON-ready dicts, from the functions the CLI already uses:
``status`` (:func:`icefloe.service.observe.status.gather`), ``tables``
(:func:`icefloe.app.cli.tables.table_summary`), ``history``
(:func:`icefloe.jobs.history.flush.read_all`) and the stored skew reports
(:func:`icefloe.jobs.skew.detect.stored_reports`). Nothing here writes.

One :class:`Dashboard` serves every request; its calls run one at a time (a lock), so the
catalog's connection and the Redis client are never used by two request threads at once.
"""

from __future__ import annotations

import copy
import json
import logging
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from icefloe.base.catalog import load_catalog, load_table, managed_tables
from icefloe.base.config import Config
from icefloe.base.errors import ServiceUnavailable, describe
from icefloe.base.redis_client import connect
from icefloe.base.tablestats import current_partitions
from icefloe.jobs.history.flush import Kept, read_all
from icefloe.jobs.skew.detect import reports_version, stored_reports
from icefloe.service.observe.kept import Policies, held_rank, held_score, kept_row, row_score
from icefloe.service.observe.status import gather
from icefloe.service.observe.tables import plan_ms, table_summary
from icefloe.state.health import HealthStore
from icefloe.state.ledger import Ledger
from icefloe.state.open import open_state

log = logging.getLogger("icefloe.ui")

HISTORY_SHOWN = 200  # the newest actions the page lists and charts
SUMMARY_MAX_AGE_S = 60.0
"""An unchanged table's summary is reused this long (the page polls every 2 s; reading a
wide table's manifests takes longer than that). A new metadata version is read at once;
the health score, which ages with the table's snapshots, at most this late."""
PAGE_ROWS = 50  # tables a page of the list shows
ROW_MAX_AGE_S = 30.0  # a kept table's score is worked out again this often
PLANNED = 10  # the newest actions whose planning time before and after is measured
BINS = 10  # file-size histogram: tenths of the target, then one bin at or above it


def histogram(sizes: list[int], target: int) -> list[dict[str, Any]]:
    """File counts by size: ``BINS`` equal bins under ``target``, then one for the files at
    or above it (they cost nothing)."""
    counts = [0] * (BINS + 1)
    for s in sizes:
        counts[min(BINS, s * BINS // target) if target > 0 else BINS] += 1
    step = target / BINS
    bins = [
        {"lo": round(i * step), "hi": round((i + 1) * step), "files": counts[i]}
        for i in range(BINS)
    ]
    return [*bins, {"lo": target, "hi": None, "files": counts[BINS]}]


def _jsonable(row: dict[str, Any]) -> dict[str, Any]:
    out = {k: v.isoformat() if isinstance(v, datetime) else v for k, v in row.items()}
    out.pop("detail", None)  # the whole record again: too much for a page
    rewritten, added = row.get("files_rewritten"), row.get("files_added")
    out["files_removed"] = None if rewritten is None or added is None else rewritten - added
    return out


@dataclass
class _Summary:
    """One table's summary, as read at one version of its metadata."""

    version: str  # the metadata file's location
    at: float
    summary: dict[str, Any]
    sizes: list[int] | None = None  # its data files' sizes, once the table page asks


class Dashboard:
    """The data behind each API route of :mod:`icefloe.app.web.server`."""

    def __init__(self, cfg: Config, now: Callable[[], float] = time.time) -> None:
        self.cfg = cfg
        self.now = now
        self._policies = Policies(cfg)  # each distinct policy resolved once
        self._lock = threading.Lock()
        self._catalog: Any = None
        self._client: Any = None
        # (table, first snapshot, last snapshot) → planning ms before and after, or None
        self._plans: dict[tuple[str, int, int], tuple[float, float] | None] = {}
        self._summaries: dict[str, _Summary] = {}  # see SUMMARY_MAX_AGE_S
        self._scores: dict[str, tuple[float, float, dict[str, Any]]] = {}  # ROW_MAX_AGE_S
        self._history: Kept = {}  # the history table's rows, read again when it changes
        self._reports: tuple[str | None, list[dict[str, Any]]] | None = None  # by version

    def _cat(self) -> Any:
        if self._catalog is None:
            self._catalog = load_catalog(self.cfg, read_only=True)
        return self._catalog

    def _redis(self) -> Any:
        if self._client is None:
            self._client = connect(self.cfg)
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()

    def _locked(self, fn: Callable[[], Any]) -> Any:
        with self._lock:
            return fn()

    def overview(self) -> dict[str, Any]:
        """``icefloe status --json`` without its table rows (the list pages them: see
        :meth:`tables`): queue, leases, deciders, actors, recent actions."""

        def run() -> dict[str, Any]:
            client = self._redis()
            queue, now = open_state(self.cfg, client).queue, self.now()
            return gather(self.cfg, client, queue, now, tables_too=False)

        return dict(self._locked(run))

    def tables(self, query: str = "", offset: int = 0, limit: int = PAGE_ROWS) -> dict[str, Any]:
        """A page of the managed tables, worst health score first (an unreadable table
        first of all, one the decider has not seen yet last), whose names contain
        ``query``: ``{"total", "offset", "limit", "rows"}``. From what the decider keeps
        (:mod:`icefloe.service.observe.kept`): no catalog call once a decider has listed them.
        Every table is ranked by its record's rank (a few dozen bytes: its score while
        that holds, or its error); only a table whose rank does not hold is ranked by its
        record, and only the page's records are read and built into rows."""

        def run() -> dict[str, Any]:
            health = open_state(self.cfg, self._redis()).health
            names = health.managed()
            if names is None:  # no decider has listed them yet: the catalog, once a poll
                names = managed_tables(self.cfg, self._cat())
            wanted = [n for n in names if query.lower() in n.lower()]
            now = self.now()
            keys = self._ranked(health, wanted, now)
            ranked = sorted(wanted, key=keys.__getitem__)
            shown = ranked[offset : offset + limit]
            records = health.records(shown, verdicts=False)  # the list shows none
            page = [self._row(n, records.get(n), now) for n in shown]
            return {"total": len(ranked), "offset": offset, "limit": limit, "rows": page}

        return dict(self._locked(run))

    def _ranked(
        self, health: HealthStore, names: list[str], now: float
    ) -> dict[str, tuple[int, float, str]]:
        """Each table's sort key: unreadable tables first, then by health score, tables
        not seen yet last; from its kept rank while that holds, else from its record."""
        ranks = health.ranks(names)
        keys: dict[str, tuple[int, float, str]] = {}
        for name, rank in ranks.items():
            if rank.get("error"):
                keys[name] = (0, 0.0, name)
            elif (score := held_rank(self._policies, name, rank, now)) is not None:
                keys[name] = (1, score, name)
        unranked = [n for n in names if n not in keys]  # not seen, off its span, older
        records = health.records(unranked, verdicts=False) if unranked else {}
        for name in unranked:
            keys[name] = self._rank(name, records.get(name), now)
        return keys

    def _rank(self, name: str, record: dict[str, Any] | None, now: float) -> tuple[int, float, str]:
        """A table's sort key from its record (None: not seen yet)."""
        if record is None:
            return (2, 0.0, name)
        if record.get("error"):
            return (0, 0.0, name)
        return (1, float(self._score(name, record, now)["score"]), name)

    def _score(self, name: str, record: dict[str, Any], now: float) -> dict[str, Any]:
        """The table's score: the record's own while it holds
        (:func:`~icefloe.service.observe.kept.held_score`), else worked out from the record
        (:func:`~icefloe.service.observe.kept.row_score`) and reused while the record is the same
        and the score at most ``ROW_MAX_AGE_S`` old."""
        held = held_score(self._policies, name, record, now)
        if held is not None:
            return held
        kept = self._scores.get(name)
        # each row's own age limit, between 0.5 and 1.5 of ROW_MAX_AGE_S: a poll scores a
        # few rows again, not every row at once
        limit = ROW_MAX_AGE_S * (0.5 + zlib.crc32(name.encode()) / 0xFFFFFFFF)
        if kept is not None and kept[0] == record["at"] and now - kept[1] < limit:
            return kept[2]
        score = row_score(self._policies, name, record, now)
        self._scores[name] = (record["at"], now, score)
        return score

    def _row(self, name: str, record: dict[str, Any] | None, now: float) -> dict[str, Any]:
        """The table's row from its kept record (:func:`~icefloe.service.observe.kept.kept_row`)
        with the score it was ranked by."""
        if record is None:
            return {"table": name, "seen": False}
        if record.get("error"):
            return kept_row(self._policies, name, record, now)
        score = copy.deepcopy(self._score(name, record, now))
        return kept_row(self._policies, name, record, now, score)

    def table(self, name: str) -> dict[str, Any]:
        """One table: its partitions by entropy (worst first), its files' size histogram
        and its entropy over time (each action's worst partition MSE before and after)."""

        def run() -> dict[str, Any]:
            catalog = self._cat()
            kept = self._summary(name, with_sizes=True)
            s = copy.deepcopy(kept.summary)
            s["partitions"].sort(key=lambda p: -p["mse"])
            s["histogram"] = histogram(kept.sizes or [], s["target_file_size_bytes"])
            rows = read_all(self.cfg, catalog, self._ledger(), name, None, self._history)
            rows = rows[-HISTORY_SHOWN:]
            s["entropy"] = [
                {
                    "at": r["ended_at"].isoformat(),
                    "before": r["mse_before"],
                    "after": r["mse_after"],
                }
                for r in rows
                if r.get("mse_before") is not None
            ]
            return s

        return dict(self._locked(run))

    def _summary(self, name: str, with_sizes: bool = False) -> _Summary:
        """``table_summary`` of ``name`` (``with_sizes``: and its data files' sizes), read
        again only when its metadata changed or the kept one is ``SUMMARY_MAX_AGE_S`` old:
        one catalog load a poll, not a manifest scan."""
        table = load_table(self._cat(), name)
        version, now = str(table.metadata_location), self.now()
        kept = self._summaries.get(name)
        if kept is None or kept.version != version or now - kept.at >= SUMMARY_MAX_AGE_S:
            kept = _Summary(version, now, table_summary(self.cfg, self._cat(), name, table))
            self._summaries[name] = kept
        if with_sizes and kept.sizes is None:  # of the version just loaded: the kept one's
            kept.sizes = [z for p in current_partitions(table) for z in p.sizes]
        return kept

    def history(self) -> list[dict[str, Any]]:
        """The newest actions, newest first, with what each saved."""

        def run() -> list[dict[str, Any]]:
            rows = read_all(self.cfg, self._cat(), self._ledger(), None, None, self._history)
            out = [_jsonable(r) for r in reversed(rows[-HISTORY_SHOWN:])]
            for row, raw in zip(out[:PLANNED], reversed(rows[-PLANNED:]), strict=False):
                row["plan_ms"] = self._planning(raw)
            return out

        return list(self._locked(run))

    def _planning(self, row: dict[str, Any]) -> tuple[float, float] | None:
        """A fresh reader's planning time (ms, median of 3) at the snapshot before the
        action's first commit and at its last commit; measured once per action (snapshots
        do not change), None when the action committed nothing or a snapshot was expired."""
        ids = json.loads(row.get("detail") or "{}").get("snapshot_ids") or []
        if not row.get("ok") or not ids:
            return None
        key = (str(row["table_name"]), int(ids[0]), int(ids[-1]))
        if key not in self._plans:
            self._plans[key] = None
            try:
                table = load_table(self._cat(), key[0])
                first = table.snapshot_by_id(key[1])
                if first is not None and first.parent_snapshot_id is not None:
                    before = plan_ms(self._cat(), key[0], snapshot_id=first.parent_snapshot_id)
                    self._plans[key] = (before, plan_ms(self._cat(), key[0], snapshot_id=key[2]))
            except Exception as e:  # a table dropped since, unreadable files: no measure
                log.warning("planning time of %s not measured: %s", key[0], describe(e))
        return self._plans[key]

    def skew(self) -> list[dict[str, Any]]:
        """The newest stored skew report of each table."""
        reports = self._locked(self._stored_reports)
        # a snapshot id is past a JavaScript number's 53 bits: the page gets it as text
        return [r | {"snapshot_id": str(r.get("snapshot_id"))} for r in reports]

    def _stored_reports(self) -> list[dict[str, Any]]:
        """The stored skew reports, read again only when one was stored since."""
        version = reports_version(self._cat())
        if self._reports is None or self._reports[0] != version:
            self._reports = (version, stored_reports(self._cat()))
        return [dict(r) for r in self._reports[1]]

    def _ledger(self) -> Ledger | None:
        """The ledger for the records not yet appended; None while Redis is away."""
        try:
            ledger = open_state(self.cfg, self._redis()).ledger
            ledger.counters()
        except ServiceUnavailable:
            return None
        return ledger
