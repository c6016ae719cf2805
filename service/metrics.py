"""Prometheus metrics of the decider, served by ``prometheus_client``.

The numbers live in Redis (counters written by every decider instance and every actor), so
a scrape reports the whole system, whichever decider answers. The collector reads the
latest values the decider loop handed it; a scrape never talks to Redis itself.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector, CollectorRegistry

from service.errors import UsageError

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
    "orphans_deleted": "Files of abandoned attempts deleted (never committed)",
}


class DeciderMetrics(Collector):
    """A collector over the last values seen; ``update`` is called once per decider step."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counters: dict[str, int] = {}
        self._gauges: dict[str, float] = {}
        self._depth: dict[str, int] = {}

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

    def collect(self) -> Iterator[Any]:
        with self._lock:
            counters, depth, gauges = dict(self._counters), dict(self._depth), dict(self._gauges)
        for name, help_text in COUNTERS.items():
            yield CounterMetricFamily(f"icefloe_{name}", help_text, value=counters.get(name, 0))
        q = GaugeMetricFamily("icefloe_queue_depth", "Queue items by state", labels=["state"])
        for state in ("pending", "ready", "inflight", "dead"):
            q.add_metric([state], depth.get(state, 0))
        yield q
        yield GaugeMetricFamily(
            "icefloe_events_lag", "Commit events not yet acked", value=gauges.get("events_lag", 0)
        )
        yield GaugeMetricFamily(
            "icefloe_actors", "Actors with a recent heartbeat", value=gauges.get("actors", 0)
        )
        yield GaugeMetricFamily(
            "icefloe_leader", "1 when this decider holds the lease", value=gauges.get("leader", 0)
        )
        yield GaugeMetricFamily(
            "icefloe_shards",
            "Shards whose tables this decider observes",
            value=gauges.get("shards", 0),
        )


def serve(metrics: DeciderMetrics, port: int, addr: str = "127.0.0.1") -> CollectorRegistry:
    """Register ``metrics`` in a fresh registry and serve it on ``addr:port``."""
    from prometheus_client import start_http_server

    registry = CollectorRegistry()
    registry.register(metrics)
    try:
        start_http_server(port, addr=addr, registry=registry)
    except OSError as e:  # e.g. the port is taken
        raise UsageError(f"cannot serve metrics on {addr}:{port}: {e.strerror or e}") from None
    return registry
