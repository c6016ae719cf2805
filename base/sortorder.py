"""A table's declared write order as :class:`icefloe.optimizer.sortorder.SortField`s."""

from __future__ import annotations

from typing import TYPE_CHECKING

from icefloe.optimizer.sortorder import SortField, ascending

if TYPE_CHECKING:
    from pyiceberg.table import Table

__all__ = ["SortField", "ascending", "declared_fields"]


def declared_fields(table: Table) -> tuple[SortField, ...]:
    """The table's declared write order, every field but void ones (which order nothing),
    in order; fields whose source is not a top-level column end it (nothing after them
    can be honoured without them)."""
    schema = table.schema()
    top = {f.field_id for f in schema.fields}
    out = []
    for f in table.sort_order().fields:
        transform = str(f.transform)
        if transform == "void":
            continue
        if f.source_id not in top:
            break
        out.append(
            SortField(
                schema.find_column_name(f.source_id) or "",
                descending=f.direction.value == "desc",
                nulls_first=f.null_order.value == "nulls-first",
                transform=transform,
            )
        )
    return tuple(out)
