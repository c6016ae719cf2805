"""Shared fixtures: one SparkSession per test run on a temporary catalog, a real Redis.

A missing Java or Redis is a test failure, never a skip: the README's test command sets
both up (scripts/bootstrap.sh), and CI runs exactly that.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from icefloe.base.config import Config
from tests.support.config import REPO, TEST_REDIS_URL, config_raw, make_config

# CI runs hypothesis derandomized: a red CI run is then reproducible, never a coin toss.
settings.register_profile("ci", derandomize=True, deadline=None)
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.fixture(scope="session", autouse=True)
def _no_default_config(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Whatever a test runs without naming a config (a CLI subprocess, ``load_config()``)
    gets a temporary catalog and Redis db 15, never the demo's ``.lakehouse/`` or db 0."""
    import yaml

    home = tmp_path_factory.mktemp("default-config")
    path = home / "icefloe.yaml"
    path.write_text(yaml.safe_dump(config_raw(home)))
    had_lakehouse = (REPO / ".lakehouse").exists()
    before = os.environ.get("ICEFLOE_CONFIG")
    os.environ["ICEFLOE_CONFIG"] = str(path)
    os.environ.pop("ICEFLOE_PROFILE", None)  # a profile is chosen per test (tests/contract)
    yield
    if before is None:
        os.environ.pop("ICEFLOE_CONFIG", None)
    else:
        os.environ["ICEFLOE_CONFIG"] = before
    if not had_lakehouse and (REPO / ".lakehouse").exists():
        pytest.fail("a test wrote .lakehouse/ inside the repository: use a temporary catalog")


@pytest.fixture(scope="session")
def dev_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run's one folder of backend profile services (``icefloe dev up --root``): the
    contract suite (tests/contract) and the fault suite (tests/faults) start each profile's
    servers there, on free ports, and a later ``up`` finds them (or restarts them on the
    same data and ports)."""
    return tmp_path_factory.mktemp("dev")


@pytest.fixture(scope="session")
def lake_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("lakehouse")


@pytest.fixture(scope="session")
def cfg(lake_home: Path) -> Config:
    return make_config(lake_home)


@pytest.fixture(scope="session")
def spark(cfg: Config) -> Iterator[Any]:
    """The one SparkSession of the test run (local[2], UI off, few shuffle partitions)."""
    from icefloe.base.spark import build_spark

    session = build_spark(cfg, app_name="icefloe-tests")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def catalog(cfg: Config) -> Any:
    """The PyIceberg catalog over the same store as the ``spark`` fixture's ``lake``."""
    from icefloe.base.catalog import load_catalog

    cat = load_catalog(cfg)
    return cat


@pytest.fixture
def namespace(catalog: Any) -> str:
    """A fresh namespace per test, so tests never see each other's tables."""
    name = f"t_{uuid.uuid4().hex[:10]}"
    catalog.create_namespace(name)
    return name


@pytest.fixture
def redis_client() -> Iterator[Any]:
    """A real Redis (db 15 by default), flushed before and after each test."""
    import redis

    client = redis.Redis.from_url(TEST_REDIS_URL)
    try:
        client.ping()
    except redis.exceptions.ConnectionError as e:
        pytest.fail(f"Redis is not answering at {TEST_REDIS_URL}: run scripts/bootstrap.sh ({e})")
    client.flushdb()
    yield client
    client.flushdb()
    client.close()
