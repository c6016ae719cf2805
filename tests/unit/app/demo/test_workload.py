"""The demo's workload: its tables, the policy it runs them with, its readers' filters."""

from __future__ import annotations

import datetime as dt

import pytest

from icefloe.app.demo.workload import Facts, demo_config, demo_workload
from icefloe.base.config import Config, build_config

pytestmark = pytest.mark.unit


def test_the_sorted_table_is_kept_sorted_and_the_other_merged_at_its_own_target() -> None:
    tables = demo_workload(6)
    cfg = demo_config(Config(), "demo", tables)
    assert "demo" in cfg.managed.namespaces
    events = cfg.policy_for("demo.events", {"write.target-file-size-bytes": str(512 << 10)})
    assert events.actions == ("merge", "sort") and events.target == 512 << 10
    assert events.tolerance_bytes == (512 << 10) // 3  # the default tolerance, scaled
    orders = cfg.policy_for("demo.orders", {"write.target-file-size-bytes": str(512 << 10)})
    assert orders.actions == ("merge",)
    assert {t.name: t.iceberg_strategy for t in tables} == {"events": "sort", "orders": "binpack"}


def test_a_users_own_policy_for_a_demo_table_is_kept() -> None:
    own = build_config({"tables": {"demo.events": {"actions": ["merge"]}}}, source="<test>")
    cfg = demo_config(own, "demo", demo_workload(4))
    assert cfg.policy_for("demo.events").actions == ("merge",)


def test_the_readers_filters_name_the_last_day_and_the_keys() -> None:
    facts = Facts(last_day=dt.date(2026, 11, 4), order_key=123)
    filters = [q.where(facts) for t in demo_workload(6) for q in t.queries]
    assert filters == [
        "event_ts >= '2026-11-04T00:00:00+00:00'",
        "user_id = 42",
        "l_shipdate >= '2026-11-04'",
        "l_orderkey = 123",
    ]
