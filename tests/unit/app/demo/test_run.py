"""Where a demo run writes its charts: beside its own lakehouse, never the checkout."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from icefloe.app.demo.run import default_out, verdicts
from icefloe.base.config import Config
from tests.support.config import make_config

pytestmark = pytest.mark.unit


def test_charts_go_beside_a_local_warehouse(tmp_path: Path) -> None:
    assert default_out(make_config(tmp_path)) == tmp_path / "demo"


def test_charts_of_a_remote_warehouse_go_under_the_config_home(tmp_path: Path) -> None:
    cfg = make_config(tmp_path)
    remote = dataclasses.replace(
        cfg, catalog=dataclasses.replace(cfg.catalog, warehouse="s3://bucket/lake")
    )
    assert default_out(remote) == tmp_path / ".lakehouse" / "demo"
    assert default_out(Config()).name == "demo"


def test_verdicts_name_every_figure_and_who_wins_it() -> None:
    side = {"bytes_rewritten": 10, "files": 5, "manifests": 2, "snapshots": 7}
    query = {"files": 1, "bytes": 100, "plan_ms": 5.0}
    result = {
        "totals": {"icefloe": side, "iceberg": side | {"bytes_rewritten": 20, "snapshots": 6}},
        "readers": [
            {"table": "t", "query": "q", "icefloe": query, "iceberg": query | {"bytes": 50}}
        ],
        "skew": {
            "plain": {"max_over_median": 5.0, "wall": 1.0},
            "salted": {"max_over_median": 2.0, "wall": 1.5},
        },
    }
    got = {v["figure"]: (v["winner"], v["against"]) for v in verdicts(result)}
    assert got == {
        "bytes rewritten": ("icefloe", "Iceberg"),
        "data files a reader plans against": ("tie", "Iceberg"),
        "manifests": ("tie", "Iceberg"),
        "snapshots": ("baseline", "Iceberg"),
        "files opened: t, q": ("tie", "Iceberg"),
        "bytes in them: t, q": ("baseline", "Iceberg"),
        "planning ms: t, q": ("tie", "Iceberg"),
        "skewed join join-stage max/median task": ("icefloe", "plain Spark"),
        "skewed join wall s": ("baseline", "plain Spark"),
    }
