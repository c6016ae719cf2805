"""Identifiers: tables, namespaces and columns are letters, digits and underscores only.

That is what makes them safe to quote into Spark SQL as ``catalog.`ns`.`tbl```; user text
is never pasted into SQL otherwise.
"""

from __future__ import annotations

import re  # fullmatch: ``$`` would let a trailing newline through

from icefloe.base.errors import UsageError

IDENT_PART = r"[A-Za-z_][A-Za-z0-9_]*"
IDENT_RE = re.compile(IDENT_PART)
TABLE_RE = re.compile(rf"{IDENT_PART}(\.{IDENT_PART})+")
NAMESPACE_RE = re.compile(rf"{IDENT_PART}(\.{IDENT_PART})*")


def is_identifier(text: object) -> bool:
    """One identifier part: a catalog name or a column."""
    return isinstance(text, str) and IDENT_RE.fullmatch(text) is not None


def is_table(text: object) -> bool:
    """``namespace.table`` (namespaces may nest: ``a.b.table``)."""
    return isinstance(text, str) and TABLE_RE.fullmatch(text) is not None


def is_namespace(text: object) -> bool:
    return isinstance(text, str) and NAMESPACE_RE.fullmatch(text) is not None


def parse_table_identifier(text: str, what: str = "table") -> tuple[str, ...]:
    """``"ns.tbl"`` → ``("ns", "tbl")``; anything else is a :class:`UsageError`."""
    if not is_table(text):
        raise UsageError(
            f"bad {what} identifier {text!r}: expected namespace.table "
            "(letters, digits and underscores)"
        )
    return tuple(text.split("."))
