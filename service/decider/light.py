"""Polls that skip the tables nothing changed: at 10,000 tables, a pass must not load every
table's metadata from the catalog.

At the start of each poll the decider asks the catalog, in one round trip, for every
table's metadata location (:func:`sql_locations`: a SQL catalog's ``iceberg_tables`` rows;
other catalogs: none, every table is loaded as before). A polled table whose metadata
location is the one this process last refreshed it at, and that was refreshed in full
within ``FULL_REFRESH_SECONDS``, and whose kept stats are still at its snapshot (Redis
may have restarted empty), is refreshed from what the decider holds (:class:`Seen`:
its plan inputs, layout and health): its partitions that waited ``max_wait_hours`` are
enqueued, its time-based maintenance (snapshot expiry) decided on its kept health, its
score and record kept -- no catalog call. A table with a new metadata location (a commit,
a property change, new statistics), a commit event, or a full refresh due is loaded and
refreshed in full; so is orphan removal decided (its hold lists the catalog).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from optimizer.verdict import Rules
from service.base.config import PlanInputs
from service.base.layoutspec import LayoutSpec

FULL_REFRESH_SECONDS = 600.0


@dataclass(frozen=True)
class Seen:
    """A table as this process last refreshed it in full."""

    version: str  # its metadata location
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

    def __init__(self, catalog: Any) -> None:
        self.catalog = catalog
        self._seen: dict[str, Seen] = {}
        self._versions: dict[str, str] | None = None  # this poll's metadata locations
        self.catalog_requests = 0  # the round trips this made (benchmarks)

    def poll_started(self) -> None:
        """Read every table's metadata location (one round trip on a SQL catalog)."""
        try:
            self._versions = sql_locations(self.catalog)
        except Exception:  # the catalog's own errors vary: every table is loaded instead
            self._versions = None
        self.catalog_requests += self._versions is not None

    def unchanged(self, name: str, now: float) -> Seen | None:
        """What this process holds of ``name`` when its metadata is as it was last
        refreshed in full, and that refresh is recent; None: refresh it in full."""
        seen = self._seen.get(name)
        if seen is None or self._versions is None or now - seen.at >= FULL_REFRESH_SECONDS:
            return None
        return seen if self._versions.get(name) == seen.version else None

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
        self._seen[name] = Seen(str(table.metadata_location), snapshot, now, inputs, layout, rules)

    def forget(self, name: str) -> None:
        self._seen.pop(name, None)
