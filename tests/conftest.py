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

from service.config import Config, build_config

# CI runs hypothesis derandomized: a red CI run is then reproducible, never a coin toss.
settings.register_profile("ci", derandomize=True, deadline=None)
if os.environ.get("CI"):
    settings.load_profile("ci")

TEST_REDIS_URL = os.environ.get("ICEFLOE_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
REPO = Path(__file__).resolve().parents[1]


def part(spec_id: int = 0, kind: str = "string", **values: Any) -> str:
    """The encoded :class:`~service.partition_key.PartitionKey` of a partition whose fields
    are all of type ``kind`` (``part(region="eu")``: a string identity partition)."""
    from service.partition_key import PartitionKey

    fields = [(name, kind) for name in values]
    return PartitionKey.of(spec_id, fields, list(values.values())).encode()


def make_config(home: Path, **overrides: Any) -> Config:
    """A config whose catalog and warehouse live under ``home`` (tests never touch the demo)."""
    return build_config(config_raw(home, **overrides), source="<tests>", home=home)


def config_raw(home: Path, **overrides: Any) -> dict[str, Any]:
    """The YAML-shaped mapping behind :func:`make_config` (for tests that need a file)."""
    raw: dict[str, Any] = {
        "catalog": {"uri": f"sqlite:///{home}/catalog.db", "warehouse": f"file://{home}/warehouse"},
        "redis": {"url": TEST_REDIS_URL, "key_prefix": "icefloe-test"},
        "spark": {
            "master": "local[2]",
            "conf": {
                "spark.sql.shuffle.partitions": "4",
                "spark.default.parallelism": "4",
                "spark.ui.enabled": "false",
                "spark.driver.memory": "2g",
                "spark.sql.adaptive.enabled": "true",
            },
        },
        # the complete plan: no tolerance, and a partition's two small files are work
        "defaults": {"target_file_size_bytes": 1 << 20, "tolerance_bytes": 0, "min_input_files": 2},
        "managed": {"namespaces": ["db"]},
    }
    for key, value in overrides.items():
        raw[key] = value
    return raw


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
    from service.spark import build_spark

    session = build_spark(cfg, app_name="icefloe-tests")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def catalog(cfg: Config) -> Any:
    """The PyIceberg catalog over the same store as the ``spark`` fixture's ``lake``."""
    from service.catalog import load_catalog

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
