"""What readers do with a table, from Iceberg's scan reports: each scan as a
:class:`ScanRecord`, and per table a :class:`ReadStats` that decays with time.

A scan report is what Iceberg hands a catalog's metrics reporter after planning a scan
(``ScanReport``: the table, the snapshot, the filter with its literals sanitized by Iceberg
itself, the projected columns, and counts: data files planned and skipped, manifests, bytes,
planning time). icefloe's reporter in its jar (``dev.icefloe.iceberg.ReadReporter``) and its
REST catalog server append each as one Redis stream entry of string fields;
:meth:`ScanRecord.of` reads one back, and rejects a malformed one with ``ValueError``.

The statistics are exponentially decayed sums: a scan at time ``t`` weighs
``2 ** -((now - t) / half_life)`` at ``now``, so a table read steadily at ``r`` scans an hour
holds a weight of ``r / ln 2 * half_life_hours``, and :meth:`ReadStats.scans_per_hour` gives
``r`` back; per-scan means (files, bytes, planning time, share skipped) are decayed sums over
the decayed count, so they follow the recent mix of scans. ``scans`` counts every scan ever
seen, undecayed. Pure: times and the half-life are passed in.
"""

from __future__ import annotations

import json
import math
from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass, field, replace

MAX_COLUMNS = 64  # columns kept per table (filtered on, projected): the heaviest


@dataclass(frozen=True)
class ScanRecord:
    """One scan, as a reader's reporter recorded it (``at``: epoch seconds)."""

    table: str
    snapshot: int
    at: float
    files: int = 0
    skipped_files: int = 0
    delete_files: int = 0
    manifests: int = 0
    skipped_manifests: int = 0
    bytes: int = 0
    planning_ms: float = 0.0
    filter_columns: tuple[str, ...] = ()  # "column:op", in the filter's order
    projected: tuple[str, ...] = ()
    pins: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (column, sanitized values) ANDed
    own: bool = False  # one of icefloe's own rewrites: not a reader
    engine: str = ""

    @classmethod
    def of(cls, fields: Mapping[str, str]) -> ScanRecord:
        """A stream entry's fields as a record; ``ValueError`` names what is wrong."""
        table = fields.get("table", "")
        if not table:
            raise ValueError("no table")
        try:
            pins = tuple(
                (str(column), tuple(str(v) for v in values))
                for column, values in json.loads(fields.get("pins") or "[]")
            )
            return cls(
                table=table,
                snapshot=int(fields.get("snapshot", "0")),
                at=int(fields["at"]) / 1000,
                files=_count(fields, "files"),
                skipped_files=_count(fields, "skipped_files"),
                delete_files=_count(fields, "delete_files"),
                manifests=_count(fields, "manifests"),
                skipped_manifests=_count(fields, "skipped_manifests"),
                bytes=_count(fields, "bytes"),
                planning_ms=float(_count(fields, "planning_ms")),
                filter_columns=_names(fields.get("filter_columns", "")),
                projected=_names(fields.get("projected", "")),
                pins=pins,
                own=fields.get("own") == "1",
                engine=fields.get("engine", ""),
            )
        except KeyError as e:
            raise ValueError(f"no {e.args[0]}") from None
        except (TypeError, json.JSONDecodeError) as e:
            raise ValueError(f"bad pins ({e})") from None

    @property
    def filtered_on(self) -> tuple[str, ...]:
        """The columns the filter names, each once."""
        return tuple(dict.fromkeys(c.rpartition(":")[0] or c for c in self.filter_columns))


def _count(fields: Mapping[str, str], name: str) -> int:
    raw = fields.get(name, "0")
    n = int(raw)
    if n < 0:
        raise ValueError(f"negative {name}: {raw}")
    return n


def _names(raw: str) -> tuple[str, ...]:
    return tuple(n for n in raw.split(",") if n)


@dataclass(frozen=True)
class ReadStats:
    """One table's reads, decayed to ``at`` (epoch seconds). ``weight`` is the decayed scan
    count; ``files``, ``bytes``, ``planning_ms`` and ``skipped`` (data files skipped) are
    decayed sums, ``filter_columns`` and ``projected`` decayed counts per column."""

    scans: int = 0
    weight: float = 0.0
    files: float = 0.0
    skipped: float = 0.0
    bytes: float = 0.0
    planning_ms: float = 0.0
    at: float = 0.0
    last_read: float = 0.0
    filter_columns: Mapping[str, float] = field(default_factory=dict)
    projected: Mapping[str, float] = field(default_factory=dict)

    def decayed(self, now: float, half_life_s: float) -> ReadStats:
        """These statistics as they stand at ``now`` (never earlier than ``at``)."""
        if now <= self.at:
            return self
        f = 2.0 ** (-(now - self.at) / half_life_s)
        return replace(
            self,
            weight=self.weight * f,
            files=self.files * f,
            skipped=self.skipped * f,
            bytes=self.bytes * f,
            planning_ms=self.planning_ms * f,
            at=now,
            filter_columns={c: w * f for c, w in self.filter_columns.items()},
            projected={c: w * f for c, w in self.projected.items()},
        )

    def add(self, scans: Iterable[ScanRecord], half_life_s: float) -> ReadStats:
        """These statistics with ``scans`` (readers' only: icefloe's own are skipped)
        folded in; a scan older than ``at`` weighs what it would have by ``at``."""
        out = self
        for s in scans:
            if s.own:
                continue
            if s.at > out.at:
                out = out.decayed(s.at, half_life_s)
            w = 2.0 ** (-(out.at - s.at) / half_life_s)
            out = replace(
                out,
                scans=out.scans + 1,
                weight=out.weight + w,
                files=out.files + w * s.files,
                skipped=out.skipped + w * s.skipped_files,
                bytes=out.bytes + w * s.bytes,
                planning_ms=out.planning_ms + w * s.planning_ms,
                last_read=max(out.last_read, s.at),
                filter_columns=_bump(out.filter_columns, s.filtered_on, w),
                projected=_bump(out.projected, s.projected, w),
            )
        return out

    def scans_per_hour(self, now: float, half_life_s: float) -> float:
        """The recent rate of scans: the decayed count over the decay's mean life."""
        return self.decayed(now, half_life_s).weight * math.log(2) / (half_life_s / 3600)

    def per_scan(self, total: float) -> float:
        """A decayed sum's mean per scan (0 with no scan)."""
        return total / self.weight if self.weight > 0 else 0.0

    @property
    def skipped_share(self) -> float:
        """The share of the data files planning considered that it skipped."""
        seen = self.files + self.skipped
        return self.skipped / seen if seen > 0 else 0.0

    def top_filter_columns(self, n: int = MAX_COLUMNS) -> list[str]:
        return _top(self.filter_columns, n)

    def top_projected(self, n: int = MAX_COLUMNS) -> list[str]:
        return _top(self.projected, n)


def _bump(counts: Mapping[str, float], names: Iterable[str], w: float) -> dict[str, float]:
    out = dict(counts)
    for n in dict.fromkeys(names):
        out[n] = out.get(n, 0.0) + w
    if len(out) > MAX_COLUMNS:  # a wide table: keep the heaviest
        out = {c: out[c] for c in _top(out, MAX_COLUMNS)}
    return out


def _top(counts: Mapping[str, float], n: int) -> list[str]:
    return sorted(counts, key=lambda c: (-counts[c], c))[:n]


def table_of(name: str, managed: Container[str]) -> str | None:
    """The managed table a report's ``name`` means: Iceberg names it with the reader's
    catalog's name first (``lake.db.t``), whatever the reader called that catalog; None
    when it is no managed table."""
    if name in managed:
        return name
    rest = name.partition(".")[2]
    return rest if rest in managed else None
