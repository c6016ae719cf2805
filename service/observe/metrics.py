"""Prometheus metrics of the decider, served by ``prometheus_client``.

The numbers live in Redis (counters written by every decider instance and every actor), so
a scrape reports the whole system, whichever decider answers. The collector reads the
latest values the decider loop handed it; a scrape never talks to Redis itself.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from prometheus_client import start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector, CollectorRegistry

from icefloe.base.errors import UsageError

COUNTERS = {
    "snapshots_applied": "Snapshots applied to the rolling stats",
    "full_scans": "Full metadata scans (new table, history gap, Redis rebuilt)",
    "file_events": "Added/deleted file entries read from snapshot manifests",
    "partitions_changed": "Partitions touched by applied snapshots",
    "partition_scans": "Changed partitions that needed a partition scan (over tolerance)",
    "dispatches": "Items moved from pending to ready by the fair scheduler",
    "bytes_rewritten": "Bytes rewritten by actors",
    "actions_ok": "Actions finished",
    "actions_failed": "Actions failed",
    "action_seconds": "Seconds actors spent running actions",
    "batches": "Batches run by actors (several items of one table: one plan, one commit)",
    "batch_items": "Items run in batches",
    "commits": "Snapshots committed by actors' rewrites",
    "partitions_rewritten": "Partitions rewritten by actors (per commit: divide by commits)",
    "orphans_deleted": "Files of abandoned attempts deleted (never committed)",
}

TABLE_GAUGES = {
    "health_score": "The table's health score, 0-100 (docs/health-score.md)",
    "manifests": "Manifests of the table's current snapshot",
    "small_manifests": "Manifests smaller than the manifest target",
    "manifest_mse": "Mean squared error of manifest sizes against the target (bytes squared)",
    "snapshots": "Snapshots in the table's metadata",
    "oldest_snapshot_age_seconds": "Age of the table's oldest snapshot",
    "metadata_bytes": "Size of the table's current metadata JSON",
    "delete_files": "Delete files of the table's current snapshot",
    "delete_ratio": "Rows its delete files delete per data row (the table's whole snapshot)",
}

GAUGES = {  # the decider's own gauges: name -> (help, labels)
    "queue_depth": ("Queue items by state", ("state",)),
    "events_lag": ("Commit events not yet acked", ()),
    "actors": ("Actors with a recent heartbeat", ()),
    "leader": ("1 when this decider holds the lease", ()),
    "shards": ("Shards whose tables this decider observes", ()),
}
QUEUE_STATES = ("pending", "ready", "inflight", "dead")


@dataclass(frozen=True)
class Metric:
    """One metric the decider serves, as a scrape shows it."""

    name: str  # the family's name (a counter's samples add ``_total``)
    kind: str  # counter | gauge
    help: str
    labels: tuple[str, ...] = ()

    @property
    def sample(self) -> str:
        """The name a scrape's sample lines carry."""
        return f"{self.name}_total" if self.kind == "counter" else self.name


METRICS: tuple[Metric, ...] = (
    *(Metric(f"icefloe_table_{n}", "gauge", h, ("table",)) for n, h in TABLE_GAUGES.items()),
    *(Metric(f"icefloe_{n}", "counter", h) for n, h in COUNTERS.items()),
    *(Metric(f"icefloe_{n}", "gauge", h, labels) for n, (h, labels) in GAUGES.items()),
)
"""Every metric :class:`DeciderMetrics` serves, in the order it serves them (the metrics
reference page of the docs is generated from it)."""


class DeciderMetrics(Collector):
    """A collector over the last values seen; ``update`` is called once per decider step."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counters: dict[str, int] = {}
        self._gauges: dict[str, float] = {}
        self._depth: dict[str, int] = {}
        self._tables: dict[str, dict[str, float]] = {}

    def update(
        self,
        counters: Mapping[str, int],
        depth: Mapping[str, int],
        events_lag: int,
        actors: int,
        leader: bool,
        shards: int = 0,
    ) -> None:
        with self._lock:
            self._counters = dict(counters)
            self._depth = dict(depth)
            self._gauges = {
                "events_lag": events_lag,
                "actors": actors,
                "leader": int(leader),
                "shards": shards,
            }

    def update_tables(
        self, healths: Mapping[str, Any], now: float, scores: Mapping[str, float] | None = None
    ) -> None:
        """Per-table metadata health (``icefloe.optimizer.maintenance_rules.MetadataHealth``) of the
        tables this decider observes."""
        rows = {}
        for table, h in healths.items():
            oldest = h.oldest_snapshot_ms
            rows[table] = {
                "health_score": (scores or {}).get(table, float("nan")),
                "manifests": h.manifests.n,
                "small_manifests": h.manifests.undersized,
                "manifest_mse": h.manifests.mse,
                "snapshots": h.snapshots,
                "oldest_snapshot_age_seconds": 0 if oldest is None else now - oldest / 1000,
                "metadata_bytes": h.metadata_bytes,
                "delete_files": h.delete_files,
                "delete_ratio": h.delete_ratio,
            }
        with self._lock:
            self._tables = rows

    def collect(self) -> Iterator[Any]:
        with self._lock:
            counters: dict[str, float] = dict(self._counters)
            depth, gauges = dict(self._depth), dict(self._gauges)
            tables = dict(self._tables)
        for name, help_text in TABLE_GAUGES.items():
            family = GaugeMetricFamily(f"icefloe_table_{name}", help_text, labels=["table"])
            for table, row in sorted(tables.items()):
                family.add_metric([table], row[name])
            yield family
        counters["action_seconds"] = counters.get("action_ms", 0) / 1000  # kept in ms
        for name, help_text in COUNTERS.items():
            yield CounterMetricFamily(f"icefloe_{name}", help_text, value=counters.get(name, 0))
        for name, (help_text, labels) in GAUGES.items():
            if name == "queue_depth":
                q = GaugeMetricFamily(f"icefloe_{name}", help_text, labels=list(labels))
                for state in QUEUE_STATES:
                    q.add_metric([state], depth.get(state, 0))
                yield q
            else:
                yield GaugeMetricFamily(f"icefloe_{name}", help_text, value=gauges.get(name, 0))


def serve(metrics: DeciderMetrics, port: int, addr: str = "127.0.0.1") -> CollectorRegistry:
    """Register ``metrics`` in a fresh registry and serve it on ``addr:port``."""
    registry = CollectorRegistry()
    registry.register(metrics)
    try:
        start_http_server(port, addr=addr, registry=registry)
    except OSError as e:  # e.g. the port is taken
        raise UsageError(f"cannot serve metrics on {addr}:{port}: {e.strerror or e}") from None
    return registry
