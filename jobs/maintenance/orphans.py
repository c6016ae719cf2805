"""Deleting the files an abandoned attempt wrote and no snapshot references.

An attempt records its new files before writing them (:mod:`icefloe.state.intents`): exact paths
(the Arrow engine names its files in advance) and one prefix (Spark's writer names files
itself, so its files of one rewrite go under ``<data>/icefloe-<rewrite id>/``). When the
attempt is abandoned (failed, rejected, or its actor killed), :func:`remove_unreferenced`
lists those candidates and deletes, through the table's FileIO, each one that no retained
snapshot references. A file the attempt did commit is referenced, so it stays: a kill
after the commit and before the ack loses nothing.

Only manifests that could hold the attempt's files are read: a file written at time ``t``
can only be in a manifest written after ``t``, so manifests added by snapshots known to be
older than the attempt (less a margin for clock skew) are skipped. Manifests added by a
snapshot that is gone (expired) are read, to be safe.

PyIceberg only: no Spark. The decider's reaper and an actor's retry both call it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from icefloe.base.catalog import load_table
from icefloe.base.errors import TableNotFound
from icefloe.state.intents import Intent

CLOCK_SKEW_SECONDS = 600.0


@dataclass
class Removed:
    """What :func:`remove_unreferenced` did: files deleted, candidates kept as referenced."""

    deleted: list[str] = field(default_factory=list)
    referenced: list[str] = field(default_factory=list)
    missing: int = 0  # exact paths never written (the attempt died before them)


def _key(location: str) -> tuple[str, str]:
    """A location's comparable form: (scheme, path) as PyArrow's FileIO parses it, so
    ``file:/x``, ``file:///x`` and ``/x`` are one file."""
    # pyiceberg: only when a catalog, table or file is used
    from pyiceberg.io.pyarrow import PyArrowFileIO

    scheme, _, path = PyArrowFileIO.parse_location(location)
    return scheme, path


def list_prefix(io: Any, prefix: str) -> list[str]:
    """Every file under ``prefix``, as locations written like ``prefix`` itself; [] when the
    prefix does not exist. Needs PyIceberg's PyArrow FileIO (others cannot list)."""
    # pyarrow: only when files are read or written
    from pyarrow.fs import FileSelector, FileType

    fs_by_scheme = getattr(io, "fs_by_scheme", None)
    if fs_by_scheme is None:
        raise TypeError(f"{type(io).__name__} cannot list files; use the PyArrow FileIO")
    scheme, netloc, path = io.parse_location(prefix, io.properties)
    fs = fs_by_scheme(scheme, netloc)
    root = path.rstrip("/")
    found = fs.get_file_info(FileSelector(root, recursive=True, allow_not_found=True))
    base = prefix.rstrip("/")
    return [base + info.path[len(root) :] for info in found if info.type == FileType.File]


def referenced(table: Any, candidates: Iterable[str], since: float) -> set[str]:
    """The ``candidates`` that a live entry of a retained snapshot's manifest references,
    reading only manifests that may have been written after ``since`` (unix seconds)."""
    wanted = {_key(c): c for c in candidates}
    if not wanted:
        return set()
    metadata = table.metadata
    born = {s.snapshot_id: s.timestamp_ms / 1000.0 for s in metadata.snapshots}
    cutoff = since - CLOCK_SKEW_SECONDS
    seen: set[str] = set()
    found: set[str] = set()
    for snapshot in metadata.snapshots:
        for manifest in snapshot.manifests(table.io):
            if manifest.manifest_path in seen:
                continue
            seen.add(manifest.manifest_path)
            added_at = born.get(manifest.added_snapshot_id)
            if added_at is not None and added_at < cutoff:
                continue
            for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=True):
                hit = wanted.get(_key(entry.data_file.file_path))
                if hit is not None:
                    found.add(hit)
    return found


def remove_unreferenced(
    table: Any, paths: Sequence[str], prefixes: Sequence[str], since: float
) -> Removed:
    """Delete, through ``table``'s FileIO, every file among ``paths`` and under
    ``prefixes`` that no retained snapshot of the PyIceberg ``table`` references.

    ``since``: when the attempt began (its files cannot be older). The table is refreshed
    first, so a commit that landed a moment ago counts."""
    table = table.refresh()
    io = table.io
    out = Removed()
    candidates: list[str] = []
    for path in paths:
        if io.new_input(path).exists():
            candidates.append(path)
        else:
            out.missing += 1
    for prefix in prefixes:
        candidates.extend(list_prefix(io, prefix))
    keep = referenced(table, candidates, since)
    for path in dict.fromkeys(candidates):
        if path in keep:
            out.referenced.append(path)
            continue
        try:
            io.delete(path)
        except FileNotFoundError:
            continue
        out.deleted.append(path)
    return out


def cleaner(catalog: Any) -> Callable[[Intent], int]:
    """What :func:`icefloe.state.intents.sweep` calls for each abandoned intent: its files that
    no snapshot references are deleted (a dropped table has nothing left to clean)."""

    def clean(intent: Intent) -> int:
        try:
            table = load_table(catalog, intent.table)
        except TableNotFound:
            return 0
        removed = remove_unreferenced(table, intent.paths, intent.prefixes, intent.started)
        return len(removed.deleted)

    return clean
