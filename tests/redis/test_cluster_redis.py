"""What only a Redis Cluster shows: ``redis.cluster`` picks the client, a setting that does
not match the server is named at once, and the keys spread over the masters as
:mod:`icefloe.base.keys` says (the queue on one, each table's stats wherever its tag hashes)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from icefloe.base.config import Config
from icefloe.base.errors import ConfigError
from icefloe.base.keys import Keys
from icefloe.base.redis_client import connect
from icefloe.optimizer import stats_from_sizes
from icefloe.state.open import open_state
from icefloe.state.queue import ActionItem
from icefloe.state.rolling.redis import RollingStats
from tests.support.cluster import LocalCluster, primaries
from tests.support.config import make_config, redis_url

pytestmark = [pytest.mark.redis]

T0 = 1_790_000_000.0


@pytest.fixture
def cluster_cfg(redis_cluster: LocalCluster, tmp_path: Path) -> Config:
    return make_config(
        tmp_path, redis={"url": redis_cluster.url, "key_prefix": "icefloe-test", "cluster": True}
    )


@pytest.fixture
def cluster_client(cluster_cfg: Config) -> Iterator[Any]:
    client = connect(cluster_cfg)
    for node in primaries(client):
        node.flushall()
    yield client
    for node in primaries(client):
        node.flushall()
    client.close()


def test_the_flag_picks_the_cluster_client(cluster_client: Any) -> None:
    from redis.cluster import RedisCluster

    assert isinstance(cluster_client, RedisCluster)
    assert len(cluster_client.get_primaries()) == 3


def test_a_flag_that_does_not_match_the_server_is_a_config_error(
    redis_cluster: LocalCluster, tmp_path: Path
) -> None:
    url = redis_cluster.url.replace("redis://", "redis://:pw-never-shown@")
    with pytest.raises(ConfigError, match="set redis.cluster: true") as plain:
        connect(make_config(tmp_path, redis={"url": url}))
    single = redis_url().rsplit("/", 1)[0] + "/0"  # only probed: nothing is written
    with pytest.raises(ConfigError, match="not a Redis Cluster node"):
        connect(make_config(tmp_path, redis={"url": single, "cluster": True}))
    assert "pw-never-shown" not in str(plain.value)


def test_the_queue_is_one_slot_and_tables_spread(cluster_cfg: Config, cluster_client: Any) -> None:
    keys = Keys.for_config(cluster_cfg)
    q = open_state(cluster_cfg, cluster_client).queue
    store = RollingStats(cluster_client, keys)
    tables = [f"db.t{i}" for i in range(12)]
    for t in tables:
        q.enqueue(ActionItem.new(t, "p=1", "merge", 1, 10, 1.0, T0), T0)
        store.replace(t, 1, 1000, {"p=1": stats_from_sizes([1], 1000)}, T0)
    q.dispatch("db.t0")
    assert q.dequeue(T0, 30) is not None
    holders: dict[str, set[int]] = {}
    for n, node in enumerate(primaries(cluster_client)):
        for key in node.keys("*"):
            holders.setdefault(key.decode().split("}")[0] + "}", set()).add(n)
    assert len(holders[f"{keys.prefix}:{{q}}"]) == 1
    table_nodes = {n for t in tables for n in holders[f"{keys.prefix}:{{t:{t}}}"]}
    assert len(table_nodes) > 1  # twelve tables' stats are not all on one master
