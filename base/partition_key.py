"""A partition's identity: the typed, injective key of one (spec, partition tuple).

Every place that names a partition — a table's rolling stats in Redis, queue items, plans,
reports — uses :class:`PartitionKey`, whose text form (:meth:`PartitionKey.encode`) is
canonical JSON of the spec id and, per field, its name, its Iceberg result type and its
value in Iceberg's own representation (a date as days since 1970, a timestamp as
microseconds, a decimal as its unscaled integer, binary as hex, a float by its exact hex
form). Two different tuples never share a key: NULL is JSON ``null``, never the string
``"null"``; no value is escaped, so ``'/'`` and ``'%2F'`` stay apart; the type tag keeps an
int ``1`` apart from a string ``'1'``; and the spec id keeps two specs' tuples apart.

:meth:`PartitionKey.display` is for people (``day=2026-11-01/k=null``) and is never parsed
back; a ``--partition COL=VALUE`` selector matches a field whose displayed value is VALUE
(:meth:`PartitionKey.matches`).

Values arrive in two shapes: Python objects (``inspect.files()``: ``date``, ``datetime``,
``Decimal``, ``UUID``) and Iceberg's internal ones (manifest entries: ints for dates and
timestamps, bytes); both normalize to the same key. Pure Python: no PyIceberg import.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

KEY_FORMAT = 2
"""The version of the encoding (1: the ``col=value`` strings before it; stored stats
written with another version are rebuilt by a full scan)."""

EPOCH_DATE = date(1970, 1, 1)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_DECIMAL = re.compile(r"decimal\((\d+),(\d+)\)")

FieldSpec = tuple[str, str]
"""One partition field: its name and its Iceberg result type (``str(type)``)."""


class BadPartitionKey(ValueError):
    """A text that is not an encoded :class:`PartitionKey` (say, one queued by an older
    icefloe, in the ``col=value`` form)."""


@dataclass(frozen=True, order=True)
class PartitionKey:
    """One partition of one spec: ``fields`` are (name, type tag, canonical value)."""

    spec_id: int
    fields: tuple[tuple[str, str, Any], ...] = ()

    @classmethod
    def of(cls, spec_id: int, specs: Sequence[FieldSpec], values: Sequence[Any]) -> PartitionKey:
        """The key of ``values`` (one per field of ``specs``, in spec order)."""
        if len(specs) != len(values):
            raise ValueError(f"{len(values)} value(s) for {len(specs)} partition field(s)")
        return cls(
            int(spec_id),
            tuple(
                (name, tag(kind), canonical(kind, value))
                for (name, kind), value in zip(specs, values, strict=True)
            ),
        )

    @classmethod
    def from_mapping(
        cls, spec_id: int, specs: Sequence[FieldSpec], values: Mapping[str, Any] | None
    ) -> PartitionKey:
        """The key of a ``{field: value}`` row (``inspect.files()``' partition column)."""
        row = values or {}
        return cls.of(spec_id, specs, [row.get(name) for name, _ in specs])

    def encode(self) -> str:
        """Canonical JSON: ``[spec_id, [[name, type, value], ...]]``."""
        return json.dumps(
            [self.spec_id, [list(f) for f in self.fields]],
            separators=(",", ":"),
            ensure_ascii=False,
            allow_nan=False,
        )

    @classmethod
    def decode(cls, text: str) -> PartitionKey:
        """:meth:`encode` backwards; :class:`BadPartitionKey` for anything else."""
        try:
            raw = json.loads(text)
            spec_id, fields = raw
            if not isinstance(spec_id, int) or isinstance(spec_id, bool):
                raise TypeError("spec id")
            out = []
            for name, kind, value in fields:
                if not isinstance(name, str) or not isinstance(kind, str):
                    raise TypeError("field")
                out.append((name, kind, value))
            key = cls(spec_id, tuple(out))
        except (ValueError, TypeError) as e:
            raise BadPartitionKey(f"not a partition key: {text!r}") from e
        if key.encode() != text:
            raise BadPartitionKey(f"not a canonical partition key: {text!r}")
        return key

    def display(self) -> str:
        """``day=2026-11-01/k=null`` (for people; '' unpartitioned; never parsed back)."""
        return "/".join(f"{name}={show(kind, value)}" for name, kind, value in self.fields)

    def matches(self, wanted: Sequence[tuple[str, str]]) -> bool:
        """Does every ``(field, displayed value)`` of a selector hold for this key?"""
        shown = {name: show(kind, value) for name, kind, value in self.fields}
        return all(name in shown and shown[name] == text for name, text in wanted)


def is_key(text: str) -> bool:
    """Is ``text`` an encoded :class:`PartitionKey`?"""
    try:
        PartitionKey.decode(text)
    except BadPartitionKey:
        return False
    return True


def display_key(text: str | None) -> str:
    """An encoded key for people (any other text as it is: an older item's selector)."""
    if not text:
        return text or ""
    try:
        return PartitionKey.decode(text).display()
    except BadPartitionKey:
        return text


def tag(kind: str) -> str:
    """The type tag of an Iceberg type's ``str()``: its text without spaces."""
    return kind.replace(" ", "").lower()


def canonical(kind: str, value: Any) -> Any:
    """``value`` of Iceberg type ``kind`` in its canonical JSON form (see the module)."""
    if value is None:
        return None
    t = tag(kind)
    if t == "boolean":
        return bool(value)
    if t in ("int", "long"):
        return int(value)
    if t in ("float", "double"):
        return float(value).hex()
    if t == "date":
        return (value - EPOCH_DATE).days if isinstance(value, date) else int(value)
    if t == "time":
        if isinstance(value, time):
            return (
                (value.hour * 60 + value.minute) * 60 + value.second
            ) * 10**6 + value.microsecond
        return int(value)
    if t.startswith("timestamp"):
        scale = 1000 if t.endswith("_ns") else 1
        if isinstance(value, datetime):
            aware = value if value.tzinfo else value.replace(tzinfo=UTC)
            return (aware - EPOCH) // timedelta(microseconds=1) * scale
        return int(value)
    if t == "uuid":
        if isinstance(value, bytes | bytearray):
            return str(uuid.UUID(bytes=bytes(value)))
        return str(uuid.UUID(str(value)))
    if t == "binary" or t.startswith("fixed"):
        return bytes(value).hex()
    m = _DECIMAL.fullmatch(t)
    if m:
        return int(Decimal(value).scaleb(int(m.group(2))).to_integral_exact())
    if t == "string":
        return str(value)
    return str(value)  # a type this module does not know: its text, tagged with the type


def show(kind: str, value: Any) -> str:
    """A canonical value as people read it (dates and timestamps in ISO form)."""
    if value is None:
        return "null"
    t = tag(kind)
    if t == "boolean":
        return "true" if value else "false"
    if t in ("float", "double"):
        return repr(float.fromhex(value))
    if t == "date":
        return (EPOCH_DATE + timedelta(days=value)).isoformat()
    if t == "time":
        return (datetime.min + timedelta(microseconds=value)).time().isoformat()
    if t.startswith("timestamp"):
        micros = value // 1000 if t.endswith("_ns") else value
        moment = EPOCH + timedelta(microseconds=micros)
        return (
            moment.isoformat(sep=" ")
            if t.startswith("timestamptz")
            else (moment.replace(tzinfo=None).isoformat(sep=" "))
        )
    m = _DECIMAL.fullmatch(t)
    if m:
        return str(Decimal(value).scaleb(-int(m.group(2))))
    return str(value)
