"""Shared fixtures: one SparkSession per test run on a temporary catalog, a real Redis.

The run starts a ``redis-server`` of its own before collection, on a free port with its
folder under the run's temporary directory, and stops it at the end
(:mod:`tests.support.redis_server`); ``ICEFLOE_TEST_REDIS_URL`` names another Redis to use
instead (the tests flush it). Two test runs on one machine never share a server, a port
or a folder. A missing Java or ``redis-server`` is a test failure, never a skip: the
README's test command sets both up (scripts/bootstrap.sh), and CI runs exactly that.
"""

from __future__ import annotations

import os
import shutil
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from icefloe.base.config import Config
from tests.support.config import REDIS_URL_ENV, REPO, config_raw, make_config, redis_url
from tests.support.redis_server import RedisServer, RedisServerError, start_run_redis

# CI runs hypothesis derandomized: a red CI run is then reproducible, never a coin toss.
settings.register_profile("ci", derandomize=True, deadline=None)
if os.environ.get("CI"):
    settings.load_profile("ci")

RUN_REDIS = pytest.StashKey[RedisServer]()


def _terminated(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@pytest.hookimpl(trylast=True)  # after pytest's own: the run's temporary directory exists
def pytest_configure(config: pytest.Config) -> None:
    """The run's Redis, before any test module loads (they may read :func:`redis_url`).
    A SIGTERM (``timeout``, CI cancelling a job) ends the run as Ctrl-C does: the fixtures'
    teardown still stops every server the run started."""
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _terminated)
    if os.environ.get(REDIS_URL_ENV):
        return
    workdir = config._tmp_path_factory.mktemp("redis")  # what the tmp_path_factory fixture gives
    try:
        server = start_run_redis(workdir)
    except RedisServerError as e:
        raise pytest.UsageError(
            f"cannot start the test run's Redis: {e}; or set {REDIS_URL_ENV} to a Redis "
            "the tests may flush"
        ) from None
    config.stash[RUN_REDIS] = server
    os.environ[REDIS_URL_ENV] = server.url()


def pytest_unconfigure(config: pytest.Config) -> None:
    server = config.stash.get(RUN_REDIS, None)
    if server is not None:
        server.stop()
        os.environ.pop(REDIS_URL_ENV, None)


@pytest.fixture(scope="session", autouse=True)
def _no_default_config(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Whatever a test runs without naming a config (a CLI subprocess, ``load_config()``)
    gets a temporary catalog and the run's Redis, never the demo's ``.lakehouse/`` or Redis."""
    import yaml

    home = tmp_path_factory.mktemp("default-config")
    path = home / "icefloe.yaml"
    path.write_text(yaml.safe_dump(config_raw(home)))
    had = {name for name in (".lakehouse", ".dev") if (REPO / name).exists()}
    before = {name: os.environ.get(name) for name in ("ICEFLOE_CONFIG", "ICEFLOE_DEV_ROOT")}
    os.environ["ICEFLOE_CONFIG"] = str(path)
    os.environ["ICEFLOE_DEV_ROOT"] = str(home / "dev")  # `icefloe dev` without --root
    os.environ.pop("ICEFLOE_PROFILE", None)  # a profile is chosen per test (tests/contract)
    yield
    for name, value in before.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    for name in (".lakehouse", ".dev"):
        if name not in had and (REPO / name).exists():
            pytest.fail(f"a test wrote {name}/ inside the repository: use a temporary folder")


@pytest.fixture(scope="session", autouse=True)
def _no_server_left(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """At the end of the run, every ``icefloe dev`` service a test started under the run's
    temporary directory is stopped (the fixtures that started them stop them first; this
    catches what a failed one left), and the PostgreSQL clusters ``icefloe dev`` placed
    outside it are removed: as root, PostgreSQL's user cannot enter pytest's 0700 folders,
    so the cluster goes under the system's temporary folder (``servers.pg_cluster``)."""
    yield
    from icefloe.app.ops import dev

    base = tmp_path_factory.getbasetemp().resolve()
    for state in base.rglob("state.json"):
        profile, root = state.parent.name, state.parent.parent
        if profile not in dev.PROFILES:
            continue
        dev.down(profile, root)
        pg_dir = dev.postgres_dir(root) if profile == "postgres" else None
        if pg_dir is not None and not pg_dir.resolve().is_relative_to(base):
            shutil.rmtree(pg_dir, ignore_errors=True)


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
    """The run's Redis (:func:`redis_url`), its db flushed before and after each test."""
    import redis

    url = redis_url()
    client = redis.Redis.from_url(url)
    try:
        client.ping()
    except redis.exceptions.ConnectionError as e:
        pytest.fail(f"Redis is not answering at {url} ({REDIS_URL_ENV}): {e}")
    client.flushdb()
    yield client
    client.flushdb()
    client.close()
