"""Storage-agnostic checks: every listing goes through the table's FileIO, so the same
check reads a local warehouse and an S3 bucket."""

from __future__ import annotations

from typing import Any

from icefloe.jobs.maintenance.orphans import _key, list_prefix
from tests.faults.checks import Contents, table_contents

__all__ = ["Contents", "assert_intact", "stored_files", "table_contents", "unreferenced"]


def stored_files(table: Any) -> set[tuple[str, str]]:
    """Every file under the table's location except its metadata folder, listed through
    the table's FileIO (the bucket on S3), as comparable keys."""
    root = table.location().rstrip("/")
    return {
        _key(path)
        for path in list_prefix(table.io, root)
        if not path[len(root) :].startswith("/metadata/")
    }


def referenced(table: Any) -> set[tuple[str, str]]:
    """Data and delete files any retained snapshot references."""
    io = table.io
    seen: set[str] = set()
    found: set[tuple[str, str]] = set()
    for snapshot in table.metadata.snapshots:
        for manifest in snapshot.manifests(io):
            if manifest.manifest_path in seen:
                continue
            seen.add(manifest.manifest_path)
            for entry in manifest.fetch_manifest_entry(io, discard_deleted=True):
                found.add(_key(entry.data_file.file_path))
    return found


def unreferenced(table: Any) -> list[str]:
    """Stored files no snapshot references (a Hadoop ``.NAME.crc`` beside a local file
    counts as part of ``NAME``), sorted."""
    refs = referenced(table)

    def owner(key: tuple[str, str]) -> tuple[str, str]:
        scheme, path = key
        folder, _, name = path.rpartition("/")
        if name.startswith(".") and name.endswith(".crc"):
            return scheme, f"{folder}/{name[1 : -len('.crc')]}"
        return key

    return sorted(p for s, p in stored_files(table) if owner((s, p)) not in refs)


def missing(table: Any) -> list[str]:
    """Files the current snapshot references that are not in storage."""
    snap = table.current_snapshot()
    if snap is None:
        return []
    live = {
        _key(e.data_file.file_path)
        for m in snap.manifests(table.io)
        for e in m.fetch_manifest_entry(table.io, discard_deleted=True)
    }
    return sorted(p for _, p in live - stored_files(table))


def assert_intact(table: Any, expected: Contents) -> None:
    """Every row kept exactly once (count and content digest), no file in storage that no
    snapshot references, and no referenced file missing. Pass a freshly loaded table."""
    got = table_contents(table)
    assert got == expected, f"rows changed: {got} != {expected}"
    orphans = unreferenced(table)
    assert not orphans, f"{len(orphans)} unreferenced file(s) in storage: {orphans[:3]}"
    gone = missing(table)
    assert not gone, f"{len(gone)} referenced file(s) missing from storage: {gone[:3]}"
