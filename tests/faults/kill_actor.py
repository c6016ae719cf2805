"""One actor that takes one batch and SIGKILLs itself (driver and JVM) at a chosen point.

``python -m tests.faults.kill_actor WARM_CONFIG`` (in its own session: the kill takes the
whole process group) starts Spark on ``WARM_CONFIG``'s catalog, then reads one line from
stdin, ``CONFIG POINT [hold]``, and runs the actor on ``CONFIG`` (same catalog; its own
Redis keys and tables). Starting Spark ahead lets the tests warm every point's actor at
once. With ``hold`` the actor does not kill itself at the point: it prints
``holding at POINT`` and waits there (its lease still renewed) for the test's own
``kill -9``, so a test kills an action under way at a point it chose, however fast the
machine runs the action.

The wiring is production's (:func:`icefloe.service.actor.loop.run_actor`: the Redis queue, batches
of a table's items, intents under the batch's first lease, the orphan cleaner); only the
rewrite's collaborators carry the kill switch. Points (:data:`POINTS`):

* ``before-write``: the new files were recorded under the lease, none written yet;
* ``mid-write``: the Arrow engine's files were recorded; the first one is half written;
* ``spark-written``: Spark's writer wrote every group (under the attempt's prefix: the
  Arrow engine is made to fail first, so its groups fall back to Spark), not verified;
* ``before-commit``: every file written and verified, the commit not made;
* ``after-commit``: the commit made, the queue not acked.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Sequence
from typing import Any

POINTS = ("before-write", "mid-write", "spark-written", "before-commit", "after-commit")


HOLD = {"on": False}  # set from the stdin line: wait at the point instead of dying


def die(point: str) -> None:
    if HOLD["on"]:
        print(f"holding at {point}", flush=True)
        while True:  # until the test's kill -9
            time.sleep(60)
    print(f"kill -9 at {point}", flush=True)
    os.killpg(os.getpgid(0), signal.SIGKILL)


class KillingGuard:
    """The lease's guard, then a kill after the record that ``point`` names."""

    def __init__(self, inner: Any, point: str) -> None:
        self.inner, self.point = inner, point

    def before_write(self, paths: Sequence[str], prefixes: Sequence[str]) -> None:
        self.inner.before_write(paths, prefixes)
        if self.point == "before-write":
            die(self.point)
        if self.point == "mid-write" and paths:
            with open(paths[0].removeprefix("file:"), "wb") as half:
                half.write(b"PAR1" + os.urandom(2048))  # a Parquet file cut short
            die(self.point)

    def before_commit(self) -> None:
        self.inner.before_commit()


def main(warm_config: str) -> None:
    from icefloe.base.config import load_config
    from icefloe.base.spark import build_spark
    from icefloe.jobs.data.optimize import optimize_table
    from icefloe.jobs.rewrite.exact import Collaborators
    from icefloe.service.actor.loop import run_actor
    from icefloe.service.actor.runners import BatchResult

    spark = build_spark(load_config(warm_config), app_name="icefloe-kill-actor")
    print("ready", flush=True)
    config, point, *hold = sys.stdin.readline().split()
    HOLD["on"] = hold == ["hold"]
    if point not in POINTS:
        raise SystemExit(f"unknown point {point!r}; one of {', '.join(POINTS)}")
    cfg = load_config(config)

    def fail_arrow(*args: Any) -> None:
        raise RuntimeError("the Arrow engine is off for this attempt")

    def after_spark_wrote(*args: Any) -> Any:
        die(point)

    def runner(item: Any, guard: Any) -> dict[str, Any]:
        return run([item], guard)

    def batch_runner(items: Any, guard: Any) -> BatchResult:
        return BatchResult(run(items, guard), {})

    def run(items: Any, guard: Any) -> dict[str, Any]:
        collaborators = Collaborators(guard=KillingGuard(guard, point))
        if point == "spark-written":
            collaborators = Collaborators(
                guard=guard, write_arrow=fail_arrow, checksums=after_spark_wrote
            )
        elif point == "before-commit":
            collaborators = Collaborators(guard=guard, before_commit=lambda *a: die(point))
        keys = [it.partition for it in items]
        table, action = items[0].table, items[0].action
        report = optimize_table(
            spark, cfg, table, None, action, collaborators=collaborators, keys=keys
        )
        if point == "after-commit":
            die(point)
        return report.to_dict()

    run_actor(
        cfg, max_actions=1, idle_exit=30, spark=spark, runner=runner, batch_runner=batch_runner
    )
    print("the actor finished without being killed", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
