"""Where a demo run writes its charts: beside its own lakehouse, never the checkout."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from icefloe.app.demo.run import default_out
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
