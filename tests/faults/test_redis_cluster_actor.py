"""A Redis Cluster master killed mid-actor (issue #28): the master that holds the queue's
slot (``{q}``: items, leases, write intents) is SIGKILLed while an actor is writing the
first merge of a small partitioned table, and started again on the same port and folder
(append-only file fsynced on every write, :class:`tests.support.cluster.LocalCluster`).

The actor is the production one (``run_actor``, its Spark runner on the session's
SparkSession); the decider dispatches, reaps expired leases and re-dispatches nacked items
until the queue is empty. Expected: every item done (each partition merged into one file),
nothing left in the queue, nothing dead-lettered, no intent left, every row kept exactly
once and no data file unreferenced.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from icefloe.service.actor.loop import run_actor
from icefloe.service.decider.wiring import open_decider
from icefloe.state.intents.redis import RedisIntents
from icefloe.state.queue.redis import RedisQueue
from tests.faults.conftest import write_env
from tests.faults.harness import DAYS, make_table
from tests.support.cluster import LocalCluster

pytestmark = [pytest.mark.faults, pytest.mark.redis, pytest.mark.spark, pytest.mark.integration]

EMPTY = {"pending": 0, "ready": 0, "inflight": 0, "dead": 0}
OUTAGE_SECONDS = 2.0  # within the lease (4 s) and far under cluster-node-timeout (15 s)


class KillOnFirstRecord:
    """Wraps ``RedisIntents.record``: after the first intent is recorded (the attempt's
    files are about to be written), the master on ``port`` is SIGKILLed and started again
    ``OUTAGE_SECONDS`` later, on a thread."""

    def __init__(self, cluster: LocalCluster, port: int, ledger: Any) -> None:
        self.cluster, self.port, self.ledger = cluster, port, ledger
        self.restarted: threading.Thread | None = None

    def wrap(self, record: Any) -> Any:
        def recording(intents: Any, *args: Any, **kwargs: Any) -> bool:
            ok = bool(record(intents, *args, **kwargs))
            if self.restarted is None:
                self.cluster.kill(self.port)
                self.ledger.fault("redis cluster: the queue's master killed -9 mid-write")
                self.restarted = threading.Thread(target=self._restart, daemon=True)
                self.restarted.start()
            return ok

        return recording

    def _restart(self) -> None:
        time.sleep(OUTAGE_SECONDS)
        self.cluster.restart(self.port)

    def join(self) -> None:
        if self.restarted is not None:
            self.restarted.join(timeout=60)


def files_per_partition(table: Any) -> dict[str, int]:
    counts: dict[str, int] = {}
    for task in table.scan().plan_files():
        day = str(task.file.partition[0])
        counts[day] = counts.get(day, 0) + 1
    return counts


def test_the_queue_master_killed_mid_actor_loses_nothing(
    fault_env: Any,
    fault_cluster: LocalCluster,
    ledger: Any,
    spark: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    redis = {"url": fault_cluster.url, "key_prefix": f"faults-{fault_env.namespace}"}
    env = write_env({**fault_env.raw, "redis": {**redis, "cluster": True}}, fault_env)
    name = f"{env.namespace}.events"
    table = make_table(env.catalog, name, days=DAYS, files_per_day=3, rows_per_file=30)
    before = ledger.contents(table)
    client = env.client()
    queue = RedisQueue(client, env.keys)
    decider = open_decider(env.cfg, env.catalog, client)
    assert decider.step(dispatch_all=True).enqueued == len(DAYS)
    port = fault_cluster.owner(env.keys.ready)
    killer = KillOnFirstRecord(fault_cluster, port, ledger)
    monkeypatch.setattr(RedisIntents, "record", killer.wrap(RedisIntents.record))

    for _ in range(6):  # the actor until the queue is empty; the decider between runs
        run_actor(env.cfg, max_actions=None, idle_exit=0, spark=spark)
        killer.join()
        if queue.depth() == EMPTY:
            break
        time.sleep(0.5)
        if queue.inflight():  # an attempt whose ack or nack never landed: its lease runs out
            time.sleep(max(0.0, max(h.deadline for h in queue.inflight()) - time.time()) + 0.2)
        decider.step(dispatch_all=True)

    assert killer.restarted is not None, "the master was never killed"
    assert queue.depth() == EMPTY, (queue.depth(), queue.dead())
    assert RedisIntents(client, env.keys).all() == []
    table = env.catalog.load_table(name)
    assert files_per_partition(table) == {day: 1 for day in DAYS}  # every item done
    ledger.assert_intact(table, before)
