"""A streamed table and its copies: the same data files in every copy, each its own history.

The demo and ``bench/ingest_bench.py`` compare compaction services on identical data: a
table is created once (partitioned by day on one column, zstd, Iceberg's default writer
properties otherwise), its copies registered on its first metadata, and every streaming
commit is appended to the table by PyIceberg (one small file per partition it touches, as a
streaming writer adds them) and its data files fast-appended to each copy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

TARGET_PROPERTY = "write.target-file-size-bytes"


def ident(name: str) -> tuple[str, ...]:
    return tuple(name.split("."))


def create_with_copies(
    catalog: Any,
    names: Sequence[str],
    sample: pa.Table,
    day_column: str,
    target: int,
    sort_column: str | None = None,
) -> None:
    """``names[0]`` created afresh (partitioned by ``day(day_column)``, write order
    ``sort_column`` ascending when given) and ``names[1:]`` registered on its metadata."""
    # pyiceberg: only when a catalog, table or file is used
    from pyiceberg.transforms import DayTransform, IdentityTransform

    for name in names:
        catalog.create_namespace_if_not_exists(ident(name)[:-1])
        if catalog.table_exists(ident(name)):
            # the first owns the files; the others are registered on its metadata
            (catalog.purge_table if name == names[0] else catalog.drop_table)(ident(name))
    properties = {
        "format-version": "2",
        "write.parquet.compression-codec": "zstd",
        TARGET_PROPERTY: str(target),
    }
    with catalog.create_table_transaction(
        ident(names[0]), schema=sample.schema, properties=properties
    ) as tx:
        with tx.update_spec() as spec:
            spec.add_field(day_column, DayTransform(), "day")
        if sort_column:
            with tx.update_sort_order() as order:
                order.asc(sort_column, IdentityTransform())
    table = catalog.load_table(ident(names[0]))
    for name in names[1:]:
        catalog.register_table(ident(name), table.metadata_location)


def append_to_copies(catalog: Any, names: Sequence[str], data: pa.Table) -> list[int]:
    """One streaming commit: ``data`` appended to ``names[0]`` (one file per partition),
    the files it added fast-appended to every other copy; the added files' sizes."""
    # pyiceberg: only when a catalog, table or file is used
    from pyiceberg.manifest import DataFileContent, ManifestEntryStatus

    table = catalog.load_table(ident(names[0]))
    target = table.properties.get(TARGET_PROPERTY)
    with table.transaction() as tx:
        # PyIceberg splits a write by its in-memory Arrow size: a large limit for the
        # write (one file per partition), the table's target back before the commit
        tx.set_properties({TARGET_PROPERTY: str(64 << 20)})
        tx.append(data)
        if target is not None:
            tx.set_properties({TARGET_PROPERTY: target})
    snap = table.current_snapshot()
    assert snap is not None
    added = [
        entry.data_file
        for manifest in snap.manifests(table.io)
        if manifest.added_snapshot_id == snap.snapshot_id
        for entry in manifest.fetch_manifest_entry(table.io)
        if entry.status == ManifestEntryStatus.ADDED
        and entry.data_file.content == DataFileContent.DATA
    ]
    for name in names[1:]:
        twin = catalog.load_table(ident(name))
        with twin.transaction() as tx, tx.update_snapshot().fast_append() as append:
            for data_file in added:
                append.append_data_file(data_file)
    return [f.file_size_in_bytes for f in added]
