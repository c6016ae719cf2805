"""The Redis tests' topologies: a single Redis (the run's: ``redis_url()``) and a real
3-master Redis Cluster on loopback (:mod:`tests.support.cluster`).

A module that sets ``TOPOLOGIES = ("single", "cluster")`` runs each of its tests that use
``redis_client`` (or ``redis_topology``) once per topology (ids ``[single]``,
``[cluster]``); every other module runs on the single Redis only, as before. The cluster
starts once per run, the first time a test needs it, and stops at the end; every master is
flushed (``FLUSHALL``) before and after each test, as the single Redis's db is.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.support.cluster import LocalCluster, primaries
from tests.support.config import redis_url


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "redis_topology" in metafunc.fixturenames:
        topologies = getattr(metafunc.module, "TOPOLOGIES", ("single",))
        metafunc.parametrize("redis_topology", topologies, indirect=True)


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    cluster = LocalCluster(tmp_path_factory.mktemp("redis-cluster"))
    try:
        cluster.start()
    except (OSError, RuntimeError) as e:
        cluster.stop()
        pytest.fail(f"could not start a Redis Cluster on loopback: {e}")
    yield cluster
    cluster.stop()


@pytest.fixture
def redis_topology(request: pytest.FixtureRequest) -> str:
    return str(getattr(request, "param", "single"))


@pytest.fixture
def redis_section(redis_topology: str, request: pytest.FixtureRequest) -> dict[str, Any]:
    """The config's ``redis:`` section for this topology (``make_config(redis=...)``)."""
    if redis_topology == "cluster":
        url = request.getfixturevalue("redis_cluster").url
        return {"url": url, "key_prefix": "icefloe-test", "cluster": True}
    return {"url": redis_url(), "key_prefix": "icefloe-test"}


@pytest.fixture
def new_redis_client(redis_section: dict[str, Any]) -> Callable[[], Any]:
    """Makes another client of this test's Redis (another process's connection)."""
    import redis
    from redis.cluster import RedisCluster

    def make() -> Any:
        if redis_section.get("cluster"):
            return RedisCluster.from_url(redis_section["url"])
        return redis.Redis.from_url(redis_section["url"])

    return make


@pytest.fixture
def redis_client(
    new_redis_client: Callable[[], Any], redis_section: dict[str, Any]
) -> Iterator[Any]:
    """A real Redis or Redis Cluster, every master flushed before and after each test."""
    import redis

    try:
        client = new_redis_client()
        client.ping()
    except (redis.exceptions.ConnectionError, redis.exceptions.RedisClusterException) as e:
        url = redis_section["url"]
        pytest.fail(f"Redis is not answering at {url}: run scripts/bootstrap.sh ({e})")
    flush(client)
    yield client
    flush(client)
    client.close()


def flush(client: Any) -> None:
    from redis.cluster import RedisCluster

    if isinstance(client, RedisCluster):
        for node in primaries(client):
            node.flushall()
    else:
        client.flushdb()
