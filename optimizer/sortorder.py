"""A write order, field by field, as both rewrite engines write it (pure data).

Iceberg's sort order names, for each field, a source column, a transform, a direction and
a null order (``WRITE ORDERED BY s DESC NULLS FIRST, bucket(8, id)``). :class:`SortField`
keeps all four (``icefloe.base.sortorder.declared_fields`` reads them from a table).
Floating point NaN sorts above every other value, as Iceberg's comparators (and Spark's
``ORDER BY``) define it: last ascending, first descending.

Rows are ordered by each field's *key*: the source column itself for the transforms that
keep order (identity, truncate, year, month, day, hour: sorting by the column is a valid
order of the transformed values, ties broken by the column), the transformed value for
the rest (bucket); a void field orders nothing and is left out. So the files a rewrite
writes are in the declared order to the letter, and carry the order's id. Pure: the
Arrow engine's tasks on a cluster's executors import it (``service`` stays on the driver).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

KEEPS_ORDER = ("identity", "year", "month", "day", "hour")  # and truncate[W]


@dataclass(frozen=True)
class SortField:
    """One field of a write order: ``column`` (top level), ordered by its ``transform``
    (Iceberg's text: ``identity``, ``bucket[16]``, ``truncate[4]``, ``day``…)."""

    column: str
    descending: bool = False
    nulls_first: bool = True
    transform: str = "identity"

    @property
    def by_column(self) -> bool:
        """Whether sorting by the column itself orders the transformed values."""
        return self.transform in KEEPS_ORDER or self.transform.startswith("truncate[")

    @property
    def bucket(self) -> int | None:
        """The bucket count of a ``bucket[N]`` field, else None."""
        if self.transform.startswith("bucket[") and self.transform.endswith("]"):
            return int(self.transform[len("bucket[") : -1])
        return None

    @property
    def nulls_low(self) -> bool:
        """Whether nulls sit below every value of the column's own ascending order (so a
        column with nulls has no lower bound there), else above it."""
        return self.nulls_first != self.descending

    def __str__(self) -> str:
        col = self.column if self.transform == "identity" else f"{self.transform}({self.column})"
        way = "DESC" if self.descending else "ASC"
        return f"{col} {way} NULLS {'FIRST' if self.nulls_first else 'LAST'}"


def ascending(columns: Sequence[str]) -> tuple[SortField, ...]:
    """A policy's ``sort_order`` (column names): each ascending, nulls first (Iceberg's and
    Spark's default)."""
    return tuple(SortField(c) for c in columns)


ArrowKey = tuple[str, str, str]


def arrow_sort_keys(fields: Sequence[SortField], names: Sequence[str]) -> list[ArrowKey]:
    """``pyarrow.compute.sort_indices``' keys for ``fields`` whose keys are the columns
    ``names`` (the column itself, or its transformed copy): direction and null placement
    per field."""
    return [
        (name, "descending" if f.descending else "ascending", _nulls(f))
        for f, name in zip(fields, names, strict=True)
    ]


def _nulls(f: SortField) -> str:
    return "at_start" if f.nulls_first else "at_end"
