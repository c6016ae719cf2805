"""Partition selectors (``day=2026-11-01/region=eu``): the partitions of a table they name.

What ``--partition`` takes on ``plan``, ``optimize`` and ``request``: each selector's
columns are matched against the fields of the table's current partition spec (by source
column or field name), and every selector must name a partition the table has now.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from icefloe.base.errors import UsageError
from icefloe.base.tablestats import PartitionFiles, current_partitions, split_selector

if TYPE_CHECKING:
    from pyiceberg.table import Table


def _name(table: Table) -> str:
    return ".".join(table.name()[-2:])


def partition_fields(table: Table) -> dict[str, str]:
    """Selector column -> partition field of the current spec (field and source names)."""
    schema = table.schema()
    names: dict[str, str] = {}
    for f in table.spec().fields:
        names.setdefault(schema.find_column_name(f.source_id) or f.name, f.name)
    for f in table.spec().fields:
        names[f.name] = f.name
    return names


def parse_selectors(table: Table, selectors: list[str] | None) -> list[list[tuple[str, str]]]:
    """``["day=2026-11-01/region=eu", ...]`` -> per selector, the (partition field,
    displayed value) pairs it requires (:meth:`PartitionKey.matches`)."""
    if not selectors:
        return []
    fields = partition_fields(table)
    if not fields:
        raise UsageError(f"table {_name(table)} is unpartitioned: --partition does not apply")
    out = []
    for selector in selectors:
        parts = []
        for col, value in split_selector(str(selector)):
            if not col:
                raise UsageError(f"bad partition {selector!r}: expected COLUMN=VALUE")
            if col not in fields:
                raise UsageError(
                    f"column {col!r} is not a partition field of {_name(table)}'s current spec "
                    f"(fields: {', '.join(sorted(fields))})"
                )
            parts.append((fields[col], value))
        out.append(parts)
    return out


def require_matches(
    table: Table, wanted: list[list[tuple[str, str]]], files: list[PartitionFiles]
) -> None:
    for parts in wanted:
        if not any(pf.partition.matches(parts) for pf in files):
            shown = "/".join(f"{c}={v}" for c, v in parts)
            raise UsageError(
                f"no partition of {_name(table)} matches {shown!r} "
                f"(try `icefloe plan {_name(table)}`)"
            )


def require_partitions(table: Table, selectors: list[str]) -> list[str]:
    """The keys (encoded :class:`~icefloe.base.partition_key.PartitionKey`) of the partitions of
    the current spec that the selectors name; UsageError unless every selector names one
    the table has now (what ``plan_table`` checks, for callers that queue work to run
    later: each queued item then names exactly one partition)."""
    wanted = parse_selectors(table, selectors)
    snapshot = table.current_snapshot()
    files = current_partitions(table, snapshot.snapshot_id) if snapshot is not None else []
    require_matches(table, wanted, files)
    spec_id = table.spec().spec_id
    return [
        pf.key
        for pf in files
        if pf.spec_id == spec_id and any(pf.partition.matches(w) for w in wanted)
    ]
