"""The shared-location guard of orphan removal: every table of the catalog, where it writes.

Iceberg's ``remove_orphan_files`` deletes every file under the table's location that the
table's own metadata does not reference. Another table whose files lie there — a
``register_table`` clone (the same location), a table created inside another's folder, a
``write.data.path`` pointing into it — loses its data files, manifests and current metadata.
So before orphan removal icefloe lists every table of the catalog (namespaces recursively)
and reads each one's location and write paths (:func:`neighbours`);
``icefloe.optimizer.locations.shared_location_hold`` decides. A table that fails to load is
unknown, and unknown holds (the safe side) unless it is explicitly allowed.

:func:`orphan_hold` is the decision (the decider, ``plan``, ``maintain``);
:func:`guard_orphan_removal` raises it (``icefloe.jobs.maintenance.procedures.remove_orphan_files``,
on every path, right before the procedure).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from typing import Any

from icefloe.base.errors import OperationFailed
from icefloe.optimizer.locations import shared_location_hold

# where a table writes besides its location (Iceberg's table properties)
WRITE_PATH_PROPERTIES = (
    "write.data.path",
    "write.metadata.path",
    "write.object-storage.path",
    "write.folder-storage.path",
)


@dataclass
class Neighbours:
    """Every other table of the catalog: name → the roots its files lie under, and the
    tables (or namespaces, ``ns.*``) that could not be read: name → one-line error."""

    roots: dict[str, tuple[str, ...]] = field(default_factory=dict)
    unreadable: dict[str, str] = field(default_factory=dict)


def _line(e: BaseException) -> str:
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0][:200]}" if text else type(e).__name__


def table_roots(table: Any) -> tuple[str, ...]:
    """The table's location and the write paths its properties set."""
    props = table.properties or {}
    extra = (props.get(key) for key in WRITE_PATH_PROPERTIES)
    return (table.location(), *(p for p in extra if p))


def _identifiers(catalog: Any, book: Neighbours) -> Iterator[tuple[str, ...]]:
    """Every table identifier of the catalog, namespaces walked depth first; a namespace
    that cannot be listed is recorded in ``book`` (unknown: it holds, never skipped)."""
    todo: list[tuple[str, ...]] = [()]
    seen = {()}
    while todo:
        ns = todo.pop()
        try:
            children = [tuple(c) for c in catalog.list_namespaces(ns)]
            tables = [tuple(t) for t in catalog.list_tables(ns)] if ns else []
        except Exception as e:
            book.unreadable[".".join(ns) + ".*" if ns else "*"] = _line(e)
            continue
        for child in children:
            if len(child) > len(ns) and child[: len(ns)] == ns and child not in seen:
                seen.add(child)
                todo.append(child)
        yield from tables


def neighbours(catalog: Any, name: str) -> Neighbours:
    """Every table of ``catalog`` but ``name``, with its roots (see :class:`Neighbours`)."""
    book = Neighbours()
    for ident in _identifiers(catalog, book):
        other = ".".join(ident)
        if other == name:
            continue
        try:
            book.roots[other] = table_roots(catalog.load_table(ident))
        except Exception as e:  # a broken table must not crash the guard: it holds
            book.unreadable[other] = _line(e)
    return book


def orphan_hold(catalog: Any, name: str, table: Any, allowed: Collection[str] = ()) -> str | None:
    """Why orphan removal on ``name`` (loaded: ``table``) must not run now, or None."""
    book = neighbours(catalog, name)
    return shared_location_hold(table.location(), book.roots, book.unreadable, allowed)


def guard_orphan_removal(
    catalog: Any, name: str, table: Any, allowed: Collection[str] = ()
) -> None:
    """Raise :class:`OperationFailed` (one line, nothing deleted) when another table's
    files may lie under ``name``'s location and that is not explicitly ``allowed``."""
    hold = orphan_hold(catalog, name, table, allowed)
    if hold is not None:
        raise OperationFailed(f"remove_orphan_files on {name} refused: {hold}")
