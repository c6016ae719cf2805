"""Z-order keys: one sortable key that keeps rows close in several columns at once.

Sorting by ``(a, b)`` clusters ``a`` perfectly and ``b`` not at all: every file spans
the whole range of ``b``, so a filter on ``b`` opens every file. Interleaving the bits
of ``a`` and ``b`` (``a``'s top bit, ``b``'s top bit, ``a``'s next bit, ...) instead
orders rows along a Z-shaped curve: consecutive rows fill small squares, and each file
spans a fraction of both ranges.

Bits can only be interleaved once every column is an unsigned integer of the same width
whose order is the column's order. The ``ordered_*`` helpers map common types so, as
Iceberg's ``ZOrderByteUtils`` does (the layout must match what Iceberg's own z-order
rewrite writes, so that both agree on what "clustered" means):

* signed integers, dates (days since 1970-01-01) and timestamps (microseconds since the
  epoch): two's complement with the sign bit flipped, 64 bits;
* floats: the IEEE 754 bits with the sign bit flipped for positives and every bit
  flipped for negatives (so -inf < -1.0 < -0.0 < 0.0 < 1.0 < inf; NaNs land beyond the
  infinities on the side of their sign bit);
* strings (UTF-8) and bytes: the first ``length`` bytes, right-padded with zeros, big
  endian. Truncation keeps the order but not its strictness: keys may tie;
* ``None``: 0, i.e. nulls first (Iceberg's Spark z-order writes nulls as zero bytes).

``zorder_key`` then interleaves, column 0's most significant bit first. Every column
contributes exactly ``bits`` bits; Iceberg, with its default 8 bytes per column, produces
the same bytes (``zorder_bytes``).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta
from functools import cache

ZORDER_BITS = 64
"""Bits per column: Iceberg's ``PRIMITIVE_BUFFER_SIZE`` of 8 bytes."""

_EPOCH = datetime(1970, 1, 1)
_EPOCH_UTC = datetime(1970, 1, 1, tzinfo=UTC)
_EPOCH_DAY = date(1970, 1, 1)


def ordered_int(value: int, bits: int = ZORDER_BITS) -> int:
    """A signed ``bits``-bit integer as an unsigned one of the same order (sign bit flipped)."""
    half = 1 << (bits - 1)
    if not -half <= value < half:
        raise ValueError(f"{value} does not fit a signed {bits}-bit integer")
    return value + half


def ordered_float(value: float) -> int:
    """A double's IEEE 754 bits made unsigned-ordered (64 bits; module doc)."""
    raw: int = struct.unpack(">Q", struct.pack(">d", value))[0]
    if raw >> 63:
        return raw ^ 0xFFFF_FFFF_FFFF_FFFF
    return raw | 0x8000_0000_0000_0000


def ordered_bytes(value: bytes, length: int = ZORDER_BITS // 8) -> int:
    """The first ``length`` bytes, zero-padded on the right, as a big-endian integer."""
    return int.from_bytes(value[:length].ljust(length, b"\0"), "big")


def ordered_str(value: str, length: int = ZORDER_BITS // 8) -> int:
    """``ordered_bytes`` of the UTF-8 encoding (UTF-8 byte order is code point order)."""
    return ordered_bytes(value.encode("utf-8"), length)


def ordered_date(value: date) -> int:
    """Days since 1970-01-01, as Iceberg stores a date, then ``ordered_int``."""
    return ordered_int((value - _EPOCH_DAY).days)


def ordered_timestamp(value: datetime) -> int:
    """Microseconds since the epoch, as Iceberg stores a timestamp, then ``ordered_int``.

    A naive datetime counts from the naive epoch (Iceberg's ``timestamp`` without zone);
    an aware one from 1970-01-01 UTC (``timestamptz``).
    """
    epoch = _EPOCH if value.tzinfo is None else _EPOCH_UTC
    return ordered_int((value - epoch) // timedelta(microseconds=1))


def ordered_value(value: object, length: int = ZORDER_BITS // 8) -> int:
    """The ``ordered_*`` mapping for ``value``'s type, 64 bits (strings: ``length`` bytes).

    ``None`` is 0 (nulls first), ``bool`` an int; other types raise ``TypeError``.
    """
    if value is None:
        return 0
    if isinstance(value, bool | int):
        return ordered_int(int(value))
    if isinstance(value, float):
        return ordered_float(value)
    if isinstance(value, str):
        return ordered_str(value, length)
    if isinstance(value, bytes | bytearray):
        return ordered_bytes(bytes(value), length)
    if isinstance(value, datetime):  # before date: a datetime is a date
        return ordered_timestamp(value)
    if isinstance(value, date):
        return ordered_date(value)
    raise TypeError(f"no z-order mapping for {type(value).__name__}: {value!r}")


@cache
def _spread_table(columns: int) -> tuple[int, ...]:
    """For each byte, its bits moved apart: bit ``i`` to bit ``i * columns``."""
    table = []
    for byte in range(256):
        out = 0
        for i in range(8):
            out |= ((byte >> i) & 1) << (i * columns)
        table.append(out)
    return tuple(table)


def zorder_key(values: Sequence[int], bits: int = ZORDER_BITS) -> int:
    """Interleave the bits of unsigned ``values``, column 0's most significant bit first.

    Bit ``b`` of column ``c`` (of ``k``) lands at bit ``b·k + (k-1-c)`` of the key, so
    comparing keys compares the columns' top bits first, round-robin. The key has
    ``k · bits`` bits. A byte lookup table spreads each column, 8 bits at a time.
    """
    k = len(values)
    if k == 0:
        raise ValueError("a z-order key needs at least one column")
    if bits <= 0:
        raise ValueError(f"bits must be > 0, got {bits}")
    table = _spread_table(k)
    key = 0
    for c, value in enumerate(values):
        if not 0 <= value < 1 << bits:
            raise ValueError(f"column {c}: {value} is not an unsigned {bits}-bit integer")
        spread, shift = 0, 0
        while value:
            spread |= table[value & 0xFF] << shift
            value >>= 8
            shift += 8 * k
        key |= spread << (k - 1 - c)
    return key


def zorder_bytes(values: Sequence[int], bits: int = ZORDER_BITS) -> bytes:
    """``zorder_key`` as big-endian bytes (``ceil(k · bits / 8)`` of them), Iceberg's form."""
    return zorder_key(values, bits).to_bytes(-(-len(values) * bits // 8), "big")
