"""The decider's metrics: a scrape serves exactly :data:`METRICS`, the one list the docs'
metrics page is generated from."""

from __future__ import annotations

import pytest
from prometheus_client import generate_latest
from prometheus_client.registry import CollectorRegistry

from icefloe.service.observe.metrics import METRICS, DeciderMetrics

pytestmark = pytest.mark.unit


def test_a_scrape_serves_every_listed_metric_and_no_other() -> None:
    metrics = DeciderMetrics()
    metrics.update({"commits": 3, "action_ms": 2500}, {"pending": 2}, 1, 2, True, shards=4)
    families = list(metrics.collect())
    assert [(f.name, f.type, f.documentation) for f in families] == [
        (m.name, m.kind, m.help) for m in METRICS
    ]
    registry = CollectorRegistry()
    registry.register(metrics)
    text = generate_latest(registry).decode()
    assert "icefloe_commits_total 3.0" in text
    assert "icefloe_action_seconds_total 2.5" in text
    assert 'icefloe_queue_depth{state="pending"} 2.0' in text
    for m in METRICS:
        assert f"# TYPE {m.sample} {m.kind}" in text
        if not m.labels or m.labels == ("state",):
            assert f"\n{m.sample}" in text, m.sample
