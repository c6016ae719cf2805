"""``kill -9`` of an actor mid-action: the item comes back after its lease, the action
completes once, and the table holds every row exactly once.

The actor (:mod:`tests.faults.kill_actor`, production's wiring) is held at a point the test
chooses, its files written and verified and the commit not made, and killed there: no
guessed sleep decides whether the action is still under way, on a quiet machine or a busy one.
"""

from __future__ import annotations

import json
import os
import queue as stdlib_queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pytest
import yaml

from icefloe.app.demo.ingest import TableSpec, ingest
from icefloe.base.config import build_config
from icefloe.base.keys import Keys
from icefloe.state.queue.redis import RedisQueue
from tests.faults.checks import unreferenced_data_files
from tests.support.config import REPO, config_raw

pytestmark = [pytest.mark.integration, pytest.mark.redis]

LEASE = 6
HOLD_AT = "before-commit"  # every file written and verified, the commit not made


def icefloe(env: dict[str, str], *args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "icefloe", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        **kw,
    )


def wait_for_line(proc: subprocess.Popen[str], wanted: str, timeout: float) -> bool:
    """Whether ``proc`` prints a line holding ``wanted`` within ``timeout`` seconds (its
    output is read on a thread, so a silent process cannot block the test)."""
    lines: stdlib_queue.Queue[str | None] = stdlib_queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        try:
            line = lines.get(timeout=left)
        except stdlib_queue.Empty:
            return False
        if line is None:
            return False
        if wanted in line:
            return True
    return False


def test_kill_9_mid_action_loses_nothing_and_runs_once(
    lake_home: Path, catalog: Any, namespace: str, redis_client: Any, tmp_path: Path
) -> None:
    raw = config_raw(lake_home)
    raw["managed"] = {"namespaces": [namespace]}
    raw["redis"]["key_prefix"] = "icefloe-kill"
    raw["decider"] = {"lease_seconds": LEASE, "poll_seconds": 1, "leader_ttl_seconds": 5}
    config = tmp_path / "icefloe.yaml"
    config.write_text(yaml.safe_dump(raw))
    cfg = build_config(raw, home=lake_home)
    env = {**os.environ, "ICEFLOE_CONFIG": str(config)}

    spec = TableSpec(
        f"{namespace}.stream",
        days=1,
        regions=("eu",),
        commits=10,
        healthy_days=0,
        late_share=0.0,
        small_file_bytes=(4 << 10, 24 << 10),
        target_file_size_bytes=512 << 10,
    )
    ingest(catalog, spec, seed=11)
    ids_before = catalog.load_table((namespace, "stream")).scan().to_arrow()["event_id"]

    assert icefloe(env, "decide", "--once").returncode == 0
    queue = RedisQueue(redis_client, Keys.for_config(cfg))
    assert sum(queue.depth().values()) >= 1

    actor = subprocess.Popen(
        [sys.executable, "-m", "tests.faults.kill_actor", str(config)],
        cwd=REPO,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        assert actor.stdin is not None
        actor.stdin.write(f"{config} {HOLD_AT} hold\n")
        actor.stdin.close()
        said = wait_for_line(actor, f"holding at {HOLD_AT}", timeout=300)
        assert said, "the actor never reached the point it was to be killed at"
        (leased,) = queue.inflight()  # the action under way holds the item's lease
        assert actor.poll() is None
    finally:
        os.killpg(actor.pid, signal.SIGKILL)  # the Python driver and its JVM
        actor.wait()
    written = unreferenced_data_files(catalog.load_table((namespace, "stream")))
    assert written, "the held action had written no file: the kill proves nothing"

    while time.time() <= max(h.deadline for h in queue.inflight()):  # no one renews it now
        time.sleep(0.2)
    assert icefloe(env, "decide", "--once").returncode == 0  # reaps, re-dispatches
    assert not queue.inflight()
    done = icefloe(env, "actor", "--idle-exit", "3")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "failed=0" in done.stdout

    table = catalog.load_table((namespace, "stream"))
    ids_after = table.scan().to_arrow()["event_id"]
    assert len(ids_after) == len(ids_before)
    assert pc.count_distinct(ids_after).as_py() == len(ids_after)  # nothing duplicated
    assert sorted(ids_after.to_pylist()) == sorted(ids_before.to_pylist())  # nothing lost
    assert table.current_snapshot().summary.operation.value == "replace"
    assert not unreferenced_data_files(table)  # the killed attempt's files were deleted
    assert not queue.dead() and not queue.inflight() and sum(queue.depth().values()) == 0
    item_id = leased.item.id
    recent = [r for r in redis_client.lrange(Keys.for_config(cfg).recent, 0, -1)]
    entries = [json.loads(r) for r in recent]
    runs = [e for e in entries if e["id"] == item_id and e["ok"]]
    assert len(runs) == 1  # the killed attempt never acked; the retry completed once
