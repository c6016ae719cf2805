"""#45.2: the history is durable at the end of every run, not at the next leader pass.

``decide --once`` then ``actor --idle-exit`` (an Airflow run's two tasks), then a Redis
``FLUSHALL``: the action is in ``history``. An actor stopped by SIGTERM (Airflow's task
kill) finishes, flushes what is pending and exits 0 (the run's Spark session, Redis and
catalog; the SIGTERM case starts ``icefloe actor`` as a process of its own).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import yaml
from click.testing import CliRunner
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType

from icefloe.app.cli import cli
from icefloe.base.config import load_config
from icefloe.jobs.history import table as history
from icefloe.service.actor.loop import run_actor
from icefloe.state.open import open_state
from tests.support.config import REPO, config_raw

pytestmark = [pytest.mark.spark, pytest.mark.redis, pytest.mark.integration]

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "region", StringType(), required=False),
)
SPEC = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "region"))


def _config(home: Path, namespace: str) -> Path:
    raw = config_raw(
        home,
        managed={"namespaces": [namespace]},
        defaults={"target_file_size_bytes": 1 << 20, "min_input_files": 2},
        history={"table": f"{namespace}.action_history"},
    )
    path = home / "icefloe.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def _history(conf: Path) -> list[dict[str, Any]]:
    shown = CliRunner().invoke(cli, ["--config", str(conf), "history", "--json"])
    assert shown.exit_code == 0, shown.output
    rows: list[dict[str, Any]] = json.loads(shown.stdout)
    return rows


def test_decide_once_then_an_actor_then_flushall_loses_no_record(
    spark: Any, lake_home: Path, catalog: Any, namespace: str, redis_client: Any
) -> None:
    conf = _config(lake_home, namespace)
    table = catalog.create_table(f"{namespace}.events", schema=SCHEMA, partition_spec=SPEC)
    for i in range(3):
        ids = pa.array(range(i * 10, i * 10 + 10), pa.int64())
        table.append(pa.table({"id": ids, "region": pa.array(["eu"] * 10, pa.string())}))

    decided = CliRunner().invoke(cli, ["--config", str(conf), "decide", "--once"])
    assert decided.exit_code == 0, decided.output
    done = run_actor(load_config(str(conf)), None, idle_exit=0, spark=spark)
    assert done.done == 1 and done.failed == 0 and done.idle_exit

    redis_client.flushdb()  # a Redis without persistence restarted: its records are gone
    (row,) = _history(conf)
    assert row["table_name"] == f"{namespace}.events" and row["ok"] and not row.get("pending")
    assert row["files_rewritten"] == 3 and row["actor_id"] == row["decider_id"]


def test_an_actor_stopped_by_sigterm_flushes_the_history_and_exits_0(
    lake_home: Path, namespace: str, redis_client: Any
) -> None:
    conf = _config(lake_home, namespace)
    cfg = load_config(str(conf))
    book = open_state(cfg).ledger
    for i in range(2):  # records an earlier actor handed over: pending until a flush
        entry = {"id": f"i{i}", "table": "db.t", "action": "merge", "ok": True, "seconds": 1}
        book.record_action(entry | {"finished_at": time.time()}, history=True)
    actor = subprocess.Popen(
        [sys.executable, "-m", "icefloe", "--config", str(conf), "actor", "--idle-exit", "600"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not book.actors() and time.monotonic() < deadline:  # its first heartbeat
            assert actor.poll() is None, actor.communicate()
            time.sleep(0.1)
        assert book.actors(), "the actor never sent a heartbeat"
        actor.send_signal(signal.SIGTERM)
        out, err = actor.communicate(timeout=60)
    finally:
        actor.kill()
    assert actor.returncode == 0, out + err
    assert "stopped: SIGTERM" in out and "Traceback" not in err
    assert book.actors() == {}  # its heartbeat removed on the way out
    table = load_catalog_table(cfg)
    assert [r["item_id"] for r in history.read(table)] == ["i0", "i1"]
    assert book.history_after(history.last_appended(table), 10) == []  # nothing pending


def load_catalog_table(cfg: Any) -> Any:
    from icefloe.base.catalog import load_catalog

    return load_catalog(cfg).load_table(cfg.history.table)
