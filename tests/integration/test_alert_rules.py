"""The monitoring files under ``conf/``: the Prometheus alert rules pass ``promtool check
rules`` and their unit tests (``tests/promtool``), the Grafana dashboard's queries parse,
and both name only metrics that ``service/observe/metrics.py`` exports.

A missing ``promtool`` fails, never skips: ``scripts/test.sh`` installs it (Debian's
``prometheus`` package) before pytest runs, as the bootstrap does Redis.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import generate_latest
from prometheus_client.registry import CollectorRegistry

from icefloe.optimizer.maintenance_rules import MetadataHealth
from icefloe.service.observe.metrics import DeciderMetrics

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "conf" / "prometheus" / "icefloe-alerts.yml"
RULE_TESTS = ROOT / "tests" / "promtool" / "icefloe-alerts.test.yml"
DASHBOARD = ROOT / "conf" / "grafana" / "icefloe-dashboard.json"
NAME = re.compile(r"\bicefloe_[a-z_]+\b")
# the dashboard's Grafana variables, as promtool sees them
GRAFANA_VARS = {"$__rate_interval": "5m", "$worst": "10", "$table": ".*"}


@pytest.fixture(scope="module")
def promtool() -> str:
    found = shutil.which("promtool") or shutil.which("promtool", path=Path(sys.executable).parent)
    if found is None:
        pytest.fail("promtool is missing: scripts/test.sh installs it (Debian package prometheus)")
    return found


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=ROOT)


def _rules() -> list[dict[str, Any]]:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return [rule for group in groups for rule in group["rules"]]


def _dashboard() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return data


def _panels() -> Iterator[dict[str, Any]]:
    for panel in _dashboard()["panels"]:
        yield panel
        yield from panel.get("panels", [])  # a collapsed row holds its panels


def _dashboard_queries() -> list[str]:
    queries = [t["expr"] for p in _panels() for t in p.get("targets", [])]
    for var in _dashboard()["templating"]["list"]:
        if var["type"] == "query":
            queries.append(var["definition"])
    return queries


def exported_names() -> set[str]:
    """The metric names a scrape of the decider shows, one table's gauges included."""
    metrics = DeciderMetrics()
    metrics.update({}, {}, events_lag=0, actors=1, leader=True, shards=1)
    health = MetadataHealth.of(1, [100, 200], 8 << 20, [1_000, 2_000], 4096, retain_last=1)
    metrics.update_tables({"db.t": health}, now=10.0, scores={"db.t": 87.5})
    registry = CollectorRegistry()
    registry.register(metrics)
    text = generate_latest(registry).decode()
    assert 'icefloe_table_health_score{table="db.t"} 87.5' in text
    return {line.split("{")[0].split()[0] for line in text.splitlines() if line[:1].isalpha()}


def test_rules_pass_promtool_check(promtool: str) -> None:
    out = _run(promtool, "check", "rules", str(RULES))
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"SUCCESS: {len(_rules())} rules found" in out.stdout


def test_rules_unit_tests(promtool: str) -> None:
    """Each alert fires on a sick system's series and stays silent on a healthy one."""
    out = _run(promtool, "test", "rules", str(RULE_TESTS))
    assert out.returncode == 0, out.stdout + out.stderr


def test_every_alert_is_tested_firing_and_silent() -> None:
    cases = [
        c for t in yaml.safe_load(RULE_TESTS.read_text())["tests"] for c in t["alert_rule_test"]
    ]
    fired = {c["alertname"] for c in cases if c["exp_alerts"]}
    silent = {c["alertname"] for c in cases if not c["exp_alerts"]}
    alerts = {r["alert"] for r in _rules()}
    assert alerts - fired == set(), "alerts no promtool case fires"
    assert alerts - silent == set(), "alerts no promtool case checks silent"


def test_every_alert_says_what_and_how_bad() -> None:
    for rule in _rules():
        assert rule["labels"]["severity"] in ("warning", "critical"), rule["alert"]
        assert {"summary", "description"} <= set(rule["annotations"]), rule["alert"]


def test_dashboard_queries_parse(promtool: str, tmp_path: Path) -> None:
    """Every query of the dashboard, its variables filled in, as a recording rule that
    ``promtool check rules`` parses."""
    rules = []
    for i, query in enumerate(_dashboard_queries()):
        for var, value in GRAFANA_VARS.items():
            query = query.replace(var, value)
        if query.startswith("label_values("):  # Grafana's function: check its metric
            query = query.removeprefix("label_values(").split(",")[0]
        assert "$" not in query, f"a Grafana variable the test does not fill in: {query}"
        rules.append({"record": f"dashboard:query_{i}", "expr": query})
    path = tmp_path / "dashboard-queries.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    out = _run(promtool, "check", "rules", str(path))
    assert out.returncode == 0, out.stdout + out.stderr


def test_dashboard_shape() -> None:
    dash = _dashboard()
    assert dash["schemaVersion"] >= 36 and dash["uid"] and dash["title"]
    variables = {v["name"]: v for v in dash["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    panels = list(_panels())
    ids = [p["id"] for p in panels]
    assert len(ids) == len(set(ids)), "panel ids repeat"
    for p in panels:
        assert {"h", "w", "x", "y"} <= set(p["gridPos"]), p["title"]
        assert p["gridPos"]["x"] + p["gridPos"]["w"] <= 24, p["title"]
        if p["type"] == "row":
            continue
        assert p["targets"], p["title"]
        for source in [p["datasource"], *(t["datasource"] for t in p["targets"])]:
            assert source == {"type": "prometheus", "uid": "${datasource}"}, p["title"]


def test_rules_and_dashboard_name_only_exported_metrics() -> None:
    exported = exported_names()
    assert {"icefloe_queue_depth", "icefloe_actions_failed_total"} <= exported  # sanity
    assert "icefloe_table_manifest_mse" in exported
    for source, queries in [
        (RULES.name, [r["expr"] for r in _rules()]),
        (DASHBOARD.name, _dashboard_queries()),
    ]:
        named = {n for q in queries for n in NAME.findall(q)}
        assert named, source
        assert named - exported == set(), f"{source} names metrics nobody exports"
