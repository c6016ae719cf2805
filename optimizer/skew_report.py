"""A column's hot-key report as the table property the JVM's ``SkewRule`` reads.

``icefloe skew detect`` (and the ``skew_report`` action) write, per analysed column, the
table property ``icefloe.skew.hot-keys.<column>``: compact JSON (``jvm/README.md``)::

    {"v":1,"column":"cust_id","type":"bigint","snapshot_id":123,
     "computed_at_ms":1764390000000,"max_age_ms":86400000,"rows":1000000,
     "null_rows":500,"keys":[["42",300000],["7",100000]]}

``type`` is Spark's ``catalogString`` of the column; each key is ``[value, rows]``, ``value``
the string that Spark's ``CAST(value AS type)`` reads back (:func:`value_string`). Keys of
other types (binary, struct, array, map) are not written: the report then holds no keys.
A report is trusted while the table is at its snapshot, or for ``max_age_ms`` after it was
computed (:func:`is_current`).

Pure: the caller passes ``now``; nothing here reads a clock, a table or Spark.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

PREFIX = "icefloe.skew.hot-keys."
VERSION = 1
MAX_KEYS = 64  # the most rows first
# the JVM rule's limits (jvm/.../SkewConf.java): it ignores a report whose keys are bigger,
# so none is written: a key over MAX_KEY_BYTES (UTF-8) is left out, and keys stop before
# their sum passes MAX_KEYS_BYTES
MAX_KEY_BYTES = 1024
MAX_KEYS_BYTES = 16 * 1024

_INTEGRAL = frozenset({"tinyint", "smallint", "int", "bigint"})
_FLOATING = frozenset({"float", "double"})
_TIMESTAMPS = frozenset({"timestamp", "timestamp_ntz"})
_STRING = re.compile(r"string|(var)?char\(\d+\)")
_DECIMAL = re.compile(r"decimal\(\d+,\d+\)")


def property_name(column: str) -> str:
    """The table property of ``column``'s report."""
    return PREFIX + column


def supported(spark_type: str) -> bool:
    """Whether keys of this Spark type are written (and read back by a CAST)."""
    t = spark_type.strip().lower()
    return (
        t in _INTEGRAL
        or t in _FLOATING
        or t in _TIMESTAMPS
        or t in ("boolean", "date")
        or bool(_STRING.fullmatch(t) or _DECIMAL.fullmatch(t))
    )


def value_string(value: Any, spark_type: str) -> str | None:
    """``value`` (as Spark returns a key of ``spark_type`` to Python) as the string
    ``CAST(<it> AS <spark_type>)`` reads back; None for NULL, a type whose keys are not
    written, or a value that is not of the type. Timestamps: their naive wall clock in the
    session's time zone (``YYYY-MM-DD HH:MM:SS[.ffffff]``)."""
    t = spark_type.strip().lower()
    if value is None or not supported(t):
        return None
    if t == "boolean":
        return ("true" if value else "false") if isinstance(value, bool) else None
    if isinstance(value, bool):
        return None  # a bool is an int in Python, never a key of another type
    if t in _INTEGRAL:
        return str(value) if isinstance(value, int) else None
    if t in _FLOATING:
        return repr(float(value)) if isinstance(value, (int, float)) else None
    if t.startswith("decimal"):
        if isinstance(value, int) or (isinstance(value, Decimal) and value.is_finite()):
            return str(value)
        return None
    if t == "date":
        is_date = isinstance(value, dt.date) and not isinstance(value, dt.datetime)
        return value.isoformat() if is_date else None
    if t in _TIMESTAMPS:
        if not isinstance(value, dt.datetime) or value.tzinfo is not None:
            return None
        return value.isoformat(sep=" ")
    return value if isinstance(value, str) else None


def parse_value(text: str, spark_type: str) -> Any:
    """A key's string back as a Python value of ``spark_type`` (what the CAST reads);
    ``ValueError`` for a type whose keys are not written or a string it does not read."""
    t = spark_type.strip().lower()
    if not supported(t):
        raise ValueError(f"keys of type {spark_type!r} are not written")
    if t == "boolean":
        if text not in ("true", "false"):
            raise ValueError(f"not a boolean: {text!r}")
        return text == "true"
    if t in _INTEGRAL:
        return int(text)
    if t in _FLOATING:
        return float(text)
    if t.startswith("decimal"):
        return Decimal(text)
    if t == "date":
        return dt.date.fromisoformat(text)
    if t in _TIMESTAMPS:
        return dt.datetime.fromisoformat(text)
    return text


@dataclass(frozen=True)
class HotKeyReport:
    """One column's hot keys at one snapshot: the property's content."""

    column: str
    type: str
    snapshot_id: int
    computed_at_ms: int
    max_age_ms: int
    rows: int
    null_rows: int
    keys: tuple[tuple[str, int], ...]  # (value string, rows), the most rows first

    @property
    def name(self) -> str:
        return property_name(self.column)


def _most_rows(key: tuple[str, int]) -> tuple[int, str]:
    return -key[1], key[0]


def build(
    column: str,
    spark_type: str,
    snapshot_id: int,
    computed_at_ms: int,
    max_age_ms: int,
    rows: int,
    null_rows: int,
    keys: Iterable[tuple[Any, int]],
) -> HotKeyReport:
    """The report of ``keys`` ((value, rows) as Spark returns them): values written as
    :func:`value_string` says (NULL and unwritable ones left out), the most rows first
    (ties by value), each value once, at most :data:`MAX_KEYS`, none over
    :data:`MAX_KEY_BYTES` and :data:`MAX_KEYS_BYTES` together (the rule ignores a report past
    them; a key left out is only left unsalted)."""
    ranked = [(value_string(v, spark_type), int(n)) for v, n in keys]
    written: dict[str, int] = {}
    total = 0
    for s, n in sorted(((s, n) for s, n in ranked if s is not None and n > 0), key=_most_rows):
        size = len(s.encode())
        if s in written or size > MAX_KEY_BYTES:
            continue
        if len(written) == MAX_KEYS or total + size > MAX_KEYS_BYTES:
            break
        written[s] = n
        total += size
    return HotKeyReport(
        column,
        spark_type,
        int(snapshot_id),
        int(computed_at_ms),
        int(max_age_ms),
        int(rows),
        int(null_rows),
        tuple(written.items()),
    )


def encode(report: HotKeyReport) -> str:
    """The property's value: compact JSON, fields in the documented order."""
    body = {
        "v": VERSION,
        "column": report.column,
        "type": report.type,
        "snapshot_id": report.snapshot_id,
        "computed_at_ms": report.computed_at_ms,
        "max_age_ms": report.max_age_ms,
        "rows": report.rows,
        "null_rows": report.null_rows,
        "keys": [[value, rows] for value, rows in report.keys],
    }
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


_INTS = ("snapshot_id", "computed_at_ms", "max_age_ms", "rows", "null_rows")


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def decode(text: str) -> HotKeyReport:
    """A property's value as a report; ``ValueError`` when it is not one of version 1."""
    try:
        body = json.loads(text)
    except (TypeError, ValueError) as e:
        raise ValueError(f"not JSON: {e}") from None
    if not isinstance(body, dict) or body.get("v") != VERSION:
        raise ValueError(f"not a version {VERSION} hot-key report")
    if not isinstance(body.get("column"), str) or not isinstance(body.get("type"), str):
        raise ValueError("column and type must be strings")
    if not all(_is_int(body.get(k)) for k in _INTS):
        raise ValueError(f"{', '.join(_INTS)} must be integers")
    raw = body.get("keys")
    if not isinstance(raw, list) or not all(
        isinstance(k, list) and len(k) == 2 and isinstance(k[0], str) and _is_int(k[1]) for k in raw
    ):
        raise ValueError("keys must be [[value string, rows], ...]")
    return HotKeyReport(
        column=body["column"],
        type=body["type"],
        snapshot_id=body["snapshot_id"],
        computed_at_ms=body["computed_at_ms"],
        max_age_ms=body["max_age_ms"],
        rows=body["rows"],
        null_rows=body["null_rows"],
        keys=tuple((str(v), int(n)) for v, n in raw),
    )


def reports_in(properties: Mapping[str, str]) -> dict[str, HotKeyReport]:
    """column → its report, of a table's properties; a property that does not decode, or
    names another column than its key, is left out (as if missing: it is written again)."""
    out = {}
    for key, value in properties.items():
        if not key.startswith(PREFIX):
            continue
        try:
            report = decode(value)
        except ValueError:
            continue
        if report.column == key[len(PREFIX) :]:
            out[report.column] = report
    return out


def is_current(report: HotKeyReport, snapshot_id: int | None, now_ms: int) -> bool:
    """Whether the JVM uses ``report`` now: the table is at its snapshot, or it is at most
    ``max_age_ms`` old."""
    return report.snapshot_id == snapshot_id or now_ms - report.computed_at_ms <= report.max_age_ms


@dataclass(frozen=True)
class ReportAge:
    """What the ``skew_report`` rule reads of one column's report: its snapshot, when it
    was computed and for how long it is trusted, and the rows added or removed in the
    snapshots since (all of the current ancestry's when its snapshot is not in it)."""

    column: str
    snapshot_id: int
    computed_at_ms: int
    max_age_ms: int
    changed_rows: int

    def older_than(self, share: float, now_ms: int) -> bool:
        """Whether more than ``share`` of its trusted age has passed."""
        return now_ms - self.computed_at_ms > share * self.max_age_ms
