"""Polls that skip the tables nothing changed: at 10,000 tables, a pass must not load every
table's metadata from the catalog.

At the start of each poll the decider asks the catalog for every table's version as cheaply
as the catalog allows: a SQL catalog's metadata locations in one query
(:func:`sql_locations`: its ``iceberg_tables`` rows); a REST catalog, for each table this
process has refreshed, one conditional ``loadTable`` with the ETag it last got
(:func:`icefloe.base.rest_versions.conditional_load`, ``PROBE_THREADS`` at once): a 304 is
"unchanged", a 200's table is kept for the refresh that follows (no second load); other
catalogs: none, every table is loaded as before. A polled table whose version is the one
this process last refreshed it at, and that was refreshed in full
within ``FULL_REFRESH_SECONDS``, and whose kept stats are still at its snapshot (Redis
may have restarted empty), is refreshed from what the decider holds (:class:`Seen`:
its plan inputs, layout and health): its partitions that waited ``max_wait_hours`` are
enqueued, its time-based maintenance (snapshot expiry) decided on its kept health, its
score and record kept -- no catalog call, and no Redis round trip of its own: its last
applied snapshot and waiting partitions are read a few hundred tables at a time, ahead of
the poll (:meth:`Light.kept`). A table with a new metadata location (a commit,
a property change, new statistics), a commit event, or a full refresh due is loaded and
refreshed in full; so is orphan removal decided (its hold lists the catalog).
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from icefloe.base.catalog import catalog_error, load_table
from icefloe.base.config import PlanInputs, parse_table_identifier
from icefloe.base.errors import TableNotFound
from icefloe.base.layoutspec import LayoutSpec
from icefloe.base.rest_versions import Probe, Settings, conditional_load, is_rest
from icefloe.optimizer.verdict import Rules
from icefloe.state.rolling import StatsStore

FULL_REFRESH_SECONDS = 600.0
PROBE_THREADS = 8  # a REST catalog's conditional loads in flight at once
READ_AHEAD = 500  # unchanged tables whose kept state one round trip reads (Light.kept)


@dataclass(frozen=True)
class Seen:
    """A table as this process last refreshed it in full."""

    version: str  # its metadata location (SQL catalogs) or ETag (REST)
    snapshot: int | None  # its current snapshot then (the kept stats must still be at it)
    at: float  # when
    inputs: PlanInputs
    layout: LayoutSpec | None
    rules: Rules


def sql_locations(catalog: Any) -> dict[str, str] | None:
    """Every table's metadata location in one query, for a PyIceberg ``SqlCatalog``
    (``namespace.table`` → location); None for any other catalog."""
    # pyiceberg: only when a SQL catalog is used
    from pyiceberg.catalog.sql import IcebergTables, SqlCatalog
    from sqlalchemy import select
    from sqlalchemy.orm import Session

    if not isinstance(catalog, SqlCatalog):
        return None
    query = select(
        IcebergTables.table_namespace, IcebergTables.table_name, IcebergTables.metadata_location
    ).where(IcebergTables.catalog_name == catalog.name)
    with Session(catalog.engine) as session:
        rows = session.execute(query).all()
    return {f"{ns}.{name}": loc for ns, name, loc in rows if loc}


class Light:
    """Which polled tables can be refreshed without the catalog (see the module)."""

    def __init__(self, catalog: Any, stats: StatsStore) -> None:
        self.catalog = catalog
        self.stats = stats
        self._kept: tuple[float, dict[str, tuple[int | None, dict[str, float]]]] = (0.0, {})
        self.rest = is_rest(catalog)
        self.probe = Probe()  # a REST catalog's conditional loads (benchmarks)
        self._seen: dict[str, Seen] = {}
        self._versions: dict[str, str] | None = None  # this poll's versions
        self._loaded: dict[str, tuple[Any, str | None]] = {}  # changed: (table, ETag)
        self._etags: dict[str, str | None] = {}  # the ETag of each table's last load
        self.catalog_requests = 0  # the round trips this made (benchmarks)

    def poll_started(self, tables: Collection[str]) -> None:
        """Read every table's version: one round trip on a SQL catalog, one conditional
        request a known table of ``tables`` (this decider's) on a REST catalog."""
        self._loaded.clear()
        for name in [n for n in self._seen if n not in tables]:  # moved away, or dropped
            del self._seen[name]
        try:
            self._versions = sql_locations(self.catalog)
            if self._versions is not None:
                self.catalog_requests += 1
            elif self.rest:
                self._versions = self._rest_versions()
        except Exception:  # the catalog's own errors vary: every table is loaded instead
            self._versions = None

    def _rest_versions(self) -> dict[str, str]:
        """Each known table's ETag now (a changed one's table kept for its refresh)."""
        known = [(n, s.version) for n, s in self._seen.items()]
        settings = Settings()  # the environment's, read once a poll

        def ask(item: tuple[str, str]) -> tuple[str, str | None, Any]:
            name, etag = item
            try:
                new, table = conditional_load(self.catalog, name, etag, self.probe, settings)
            except Exception:  # that table is loaded again, and fails there if it must
                return name, None, None
            return name, new, table

        with ThreadPoolExecutor(PROBE_THREADS) as pool:
            answers = list(pool.map(ask, known))
        self.catalog_requests += len(known)
        versions = {}
        for name, etag, table in answers:
            if table is not None:
                self._loaded[name] = (table, etag)
            elif etag is not None:
                versions[name] = etag
        return versions

    def load(self, name: str, polled: bool = False) -> Any:
        """``name`` loaded for a full refresh: ``polled``, the table this poll already
        loaded; else one load (on a REST catalog, a conditional one without an ETag: it
        brings the ETag). A refresh for an event always loads the table as it is now."""
        kept = self._loaded.pop(name, None)
        if kept is not None and polled:
            self._etags[name] = kept[1]
            return kept[0]
        if not self.rest:
            return load_table(self.catalog, name)
        # pyiceberg: only when a REST catalog is used
        from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError

        parse_table_identifier(name)
        try:
            etag, table = conditional_load(self.catalog, name, None, self.probe)
        except (NoSuchTableError, NoSuchNamespaceError):
            raise TableNotFound(
                f"table {name!r} not found in catalog {self.catalog.name!r}"
            ) from None
        except Exception as e:
            raise catalog_error(self.catalog.name, f"load table {name!r}", e) from e
        self._etags[name] = etag
        return table

    def unchanged(self, name: str, now: float) -> Seen | None:
        """What this process holds of ``name`` when its metadata is as it was last
        refreshed in full, and that refresh is recent; None: refresh it in full."""
        seen = self._seen.get(name)
        if seen is None or self._versions is None or now - seen.at >= FULL_REFRESH_SECONDS:
            return None
        return seen if self._versions.get(name) == seen.version else None

    def kept(
        self, name: str, now: float, ahead: Iterable[str]
    ) -> tuple[int | None, dict[str, float]]:
        """``name``'s last applied snapshot and waiting partitions (``StatsStore``), read
        with those of the next ``READ_AHEAD`` tables of ``ahead`` (the poll's next tables)
        that :meth:`unchanged` holds, unless a read of this pass (``now``) has them."""
        at, got = self._kept
        if at != now:  # another pass: what was read ahead may have changed since
            got = {}
            self._kept = (now, got)
        if name not in got:
            more = (n for n in ahead if n != name and n not in got and self.unchanged(n, now))
            got |= self.stats.last_and_waiting([name, *itertools.islice(more, READ_AHEAD - 1)])
        return got.pop(name)

    def remember(
        self,
        name: str,
        table: Any,
        inputs: PlanInputs,
        layout: LayoutSpec | None,
        rules: Rules,
        now: float,
    ) -> None:
        """``name`` was just refreshed in full from ``table``."""
        snap = table.current_snapshot()
        snapshot = None if snap is None else snap.snapshot_id
        version = self._etags.get(name) if self.rest else str(table.metadata_location)
        if version is None:  # a REST server that sends no ETag: always loaded
            self._seen.pop(name, None)
            return
        self._seen[name] = Seen(version, snapshot, now, inputs, layout, rules)

    def forget(self, name: str) -> None:
        self._seen.pop(name, None)
