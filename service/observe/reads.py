"""Readers' scan reports as read statistics: folded in by the decider's leader each step
(and by ``icefloe reads`` before it shows them), shown per table, and the Spark settings
that make a reader report (``dev.icefloe.iceberg.ReadReporter``)."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from icefloe.base.config import Config
from icefloe.optimizer.reads import ReadStats, table_of
from icefloe.state.reads import Folded, ReadStore

REPORTER = "dev.icefloe.iceberg.ReadReporter"


def fold_reads(cfg: Config, store: ReadStore, managed: Collection[str], limit: int) -> Folded:
    """Fold up to ``limit`` pending scan reports of ``managed`` tables."""
    known = set(managed)
    half_life = cfg.reads.half_life_hours * 3600
    return store.fold(lambda name: table_of(name, known), half_life, limit)


def read_row(table: str, stats: ReadStats, now: float, half_life_s: float) -> dict[str, Any]:
    """One table's read statistics as ``icefloe reads --json`` prints them."""
    s = stats.decayed(now, half_life_s)
    return {
        "table": table,
        "scans": s.scans,
        "scans_per_hour": round(s.scans_per_hour(now, half_life_s), 3),
        "files_per_scan": round(s.per_scan(s.files), 2),
        "bytes_per_scan": round(s.per_scan(s.bytes)),
        "planning_ms": round(s.per_scan(s.planning_ms), 1),
        "skipped_share": round(s.skipped_share, 3),
        "last_read": datetime.fromtimestamp(s.last_read, UTC).isoformat(timespec="seconds"),
        "filter_columns": s.top_filter_columns(),
        "projected_columns": s.top_projected(),
    }


def read_rows(cfg: Config, stats: Mapping[str, ReadStats], now: float) -> list[dict[str, Any]]:
    """Every table's row, the most read first."""
    half_life = cfg.reads.half_life_hours * 3600
    rows = [read_row(t, s, now, half_life) for t, s in stats.items()]
    return sorted(rows, key=lambda r: (-r["scans_per_hour"], r["table"]))


def reporter_conf(cfg: Config, catalog: str | None = None) -> dict[str, str]:
    """The Spark settings that make catalog ``catalog`` (by default icefloe's own) report its
    readers' scans to this config's Redis (its URL as it is: :func:`shown` before printing)."""
    prefix = f"spark.sql.catalog.{catalog or cfg.catalog.name}"
    return {
        f"{prefix}.metrics-reporter-impl": REPORTER,
        f"{prefix}.icefloe.reads.redis-url": cfg.redis.url,
        f"{prefix}.icefloe.reads.key-prefix": cfg.redis.key_prefix,
        f"{prefix}.icefloe.reads.cluster": str(cfg.redis.cluster).lower(),
        f"{prefix}.icefloe.reads.queue-size": str(cfg.reads.queue_size),
        f"{prefix}.icefloe.reads.max-len": str(cfg.reads.stream_max_len),
    }


def shown(url: str) -> str:
    """``url`` with its password, if any, as ``<password>``."""
    parts = urlsplit(url)
    if not parts.password:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return urlunsplit(parts._replace(netloc=f"{user}:<password>@{host}{port}"))
