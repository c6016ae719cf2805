"""The actors on a real Spark cluster: a standalone master and worker, ``icefloe submit``.

The fixture starts a Spark standalone master and one worker (1 core, 1 GiB) from the
PySpark distribution on 127.0.0.1. The executors' Python is a bare interpreter (no
PyIceberg, no pyarrow, no icefloe: :mod:`tests.integration.executor_python`), so the Arrow engine
can run there only from the ``icefloe pack`` archive that ``spark.executor_deps`` names.
The decider (``icefloe decide --once``) puts one action per partition on the Redis queue;
``icefloe submit --master spark://… actor --idle-exit 0`` runs them until the queue is
empty. The catalog is an embedded one in a temporary folder: on one machine the worker
sees the driver's paths, as every node of a cluster sees shared storage.

Where the Arrow tasks ran comes from three independent records: the actors' entries
(the engine the report names), Spark's event log (the tasks of each Arrow job and the
executor that ran them) and the bare Python itself (each start notes its working
directory: the executor's), with the Arrow engine's byte code written in the executor's
copy of the archive.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import yaml
from pyiceberg.transforms import IdentityTransform

from icefloe.base.catalog import load_catalog
from icefloe.base.config import Config, load_config
from icefloe.base.tablestats import current_partitions
from icefloe.jobs.rewrite.commit import REWRITE_ID_PROPERTY
from icefloe.service.observe.status import gather
from icefloe.state.open import open_state
from tests.integration.executor_python import ROOT, BarePython, PackedArchive
from tests.support.config import config_raw

pytestmark = [pytest.mark.integration, pytest.mark.redis]

TABLE = "db.events"
PARTS = ("eu", "us")
APPENDS = 8  # each append adds one small file to every partition
ARROW_JOB = (
    "icefloe rewrite (arrow) "  # how icefloe.jobs.rewrite.arrow_driver describes its Spark job
)

FAST_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
"""Short-lived JVMs on two cores: the quick compiler only, one GC thread."""


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def spark_env(base: Path, **extra: str) -> dict[str, str]:
    """This environment without anything that would choose a Python or a Spark for the
    processes started with it, plus Spark's folders under ``base``."""
    drop = ("PYSPARK_", "SPARK_", "PYTHON", "VIRTUAL_ENV")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    (base / "conf").mkdir(parents=True, exist_ok=True)  # no spark-defaults.conf, no log4j file
    (base / "local").mkdir(exist_ok=True)
    env.update(
        SPARK_HOME=str(spark_home()),
        SPARK_CONF_DIR=str(base / "conf"),
        SPARK_LOCAL_DIRS=str(base / "local"),
        SPARK_LOCAL_IP="127.0.0.1",
        **extra,
    )
    return env


@dataclass(frozen=True)
class Standalone:
    master_url: str
    work_dir: Path  # the worker's: one folder per application, one per executor in it


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """The whole process group (spark-class, its JVM, the executors and their Python)."""
    for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _wait_for_worker(ui: int, procs: dict[str, subprocess.Popen[bytes]], logs: Path) -> None:
    deadline = time.monotonic() + 60
    state: dict[str, Any] = {}
    while time.monotonic() < deadline:
        for name, proc in procs.items():
            if proc.poll() is not None:
                tail = (logs / f"{name}.log").read_text()[-3000:]
                pytest.fail(f"the Spark {name} exited with {proc.returncode}:\n{tail}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{ui}/json/", timeout=2) as r:
                state = json.load(r)
        except OSError:
            state = {}
        alive = [w for w in state.get("workers", []) if w.get("state") == "ALIVE"]
        if state.get("aliveworkers", 0) >= 1 and alive:
            assert alive[0]["cores"] == 1 and alive[0]["memory"] == 1024
            return
        time.sleep(0.25)
    pytest.fail(f"no worker registered with the master within 60 s: {state}")


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Standalone]:
    """A standalone master and one worker (1 core, 1 GiB) on 127.0.0.1, stopped at the end."""
    base = tmp_path_factory.mktemp("standalone")
    work, logs = base / "work", base / "logs"
    work.mkdir()
    logs.mkdir()
    port, ui = free_port(), free_port()
    env = spark_env(base, SPARK_MASTER_HOST="127.0.0.1", SPARK_WORKER_DIR=str(work))
    env.update(SPARK_LOG_DIR=str(logs), SPARK_DAEMON_JAVA_OPTS=FAST_JVM)
    spark_class = str(spark_home() / "bin" / "spark-class")
    roles = {
        "master": [
            "org.apache.spark.deploy.master.Master",
            *("--host", "127.0.0.1", "--port", str(port), "--webui-port", str(ui)),
        ],
        "worker": [
            "org.apache.spark.deploy.worker.Worker",
            *("--host", "127.0.0.1", "--port", str(free_port())),
            *("--webui-port", str(free_port()), "--cores", "1", "--memory", "1g"),
            *("--work-dir", str(work), f"spark://127.0.0.1:{port}"),
        ],
    }
    procs: dict[str, subprocess.Popen[bytes]] = {}
    try:
        for name, args in roles.items():
            with open(logs / f"{name}.log", "wb") as log:
                procs[name] = subprocess.Popen(
                    [spark_class, *args],
                    env=env,
                    cwd=base,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # its own process group: stopped as one
                )
        _wait_for_worker(ui, procs, logs)
        yield Standalone(f"spark://127.0.0.1:{port}", work)
    finally:
        for proc in reversed(procs.values()):
            _stop(proc)


def _make_table(cfg: Config) -> Any:
    """``TABLE``, partitioned by ``part``, ``APPENDS`` small files in each partition."""
    catalog = load_catalog(cfg)
    catalog.create_namespace("db")
    schema = pa.schema([("id", pa.int64()), ("part", pa.string()), ("payload", pa.string())])
    table = catalog.create_table(TABLE, schema=schema)
    with table.update_spec() as spec:
        spec.add_field("part", IdentityTransform(), "part")
    table = catalog.load_table(TABLE)
    for b in range(APPENDS):
        ids = list(range(b * 200, (b + 1) * 200))
        rows = {
            "id": ids,
            "part": [PARTS[i % len(PARTS)] for i in ids],
            "payload": [f"row-{i}-" + "x" * (i % 50) for i in ids],
        }
        table.append(pa.table(rows, schema=schema))
    return catalog.load_table(TABLE)


def _icefloe(config: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """``icefloe --config CONFIG ARGS...``'s output; in its own process group, so that a
    timeout stops all of it (``submit``: spark-submit's JVM and the driver's Python)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "icefloe", "--config", str(config), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=env,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
    tail = f"{out[-4000:]}\n{err[-8000:]}"
    assert proc.returncode == 0, f"icefloe {' '.join(args)} exited with {proc.returncode}:\n{tail}"
    return out


def _config(home: Path, bare_python: str, archive: Path, events: Path) -> Path:
    """The config file: a temporary embedded lakehouse, the executors' Python and archive,
    Spark's event log. ``spark.master`` stays ``local[2]``: ``submit --master`` picks the
    cluster, and the driver, which reads this file again, must follow it."""
    raw = config_raw(home)
    raw["spark"]["executor_deps"] = str(archive)
    raw["spark"]["conf"] = {
        "spark.pyspark.python": bare_python,  # the executors' Python, as on a cluster
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "2",
        "spark.driver.memory": "1g",
        "spark.driver.extraJavaOptions": FAST_JVM,
        "spark.executor.extraJavaOptions": FAST_JVM,
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": f"file://{events}",
        "spark.eventLog.compress": "false",
        "spark.eventLog.rolling.enabled": "false",
    }
    path = home / "icefloe.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def _added_by(table: Any, snapshot_id: int) -> set[str]:
    """The data files ``snapshot_id`` added (its manifest entries with status ADDED)."""
    entries = table.inspect.entries(snapshot_id=snapshot_id).to_pylist()
    return {
        e["data_file"]["file_path"]
        for e in entries
        if e["status"] == 1 and e["snapshot_id"] == snapshot_id
    }


def _check_commit(table: Any, entry: dict[str, Any], old: set[int], rows: Counter) -> None:
    """One ``replace`` snapshot for the batch (its own rewrite id): every partition's small
    files out, one file per partition with the same rows in, nothing else committed."""
    new = [s for s in table.snapshots() if s.snapshot_id not in old]
    assert [s.snapshot_id for s in new] == entry["snapshot_ids"]
    (snap,) = new
    summary = snap.summary
    assert summary.operation.value == "replace" and summary[REWRITE_ID_PROPERTY]
    assert summary["changed-partition-count"] == str(len(PARTS))
    assert int(summary["deleted-data-files"]) == APPENDS * len(PARTS)
    after = current_partitions(table)
    assert all(len(p.paths) == 1 for p in after)
    assert int(summary["added-data-files"]) == len(after) == len(PARTS)
    assert summary["deleted-records"] == summary["added-records"] == str(sum(rows.values()))
    assert _added_by(table, snap.snapshot_id) == {path for p in after for path in p.paths}


def _event_log(events: Path) -> list[dict[str, Any]]:
    (log,) = [p for p in events.iterdir() if p.is_file()]  # one application: the actor
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def _arrow_tasks(log: list[dict[str, Any]]) -> tuple[int, list[dict[str, Any]]]:
    """How many Arrow jobs ran, and the end of each of their tasks."""
    stages: set[int] = set()
    jobs = 0
    for e in log:
        if e["Event"] == "SparkListenerJobStart":
            if (e.get("Properties") or {}).get("spark.job.description", "").startswith(ARROW_JOB):
                jobs += 1
                stages.update(e["Stage IDs"])
    ends = [e for e in log if e["Event"] == "SparkListenerTaskEnd" and e["Stage ID"] in stages]
    return jobs, ends


def _check_arrow_ran_on_the_executor(
    events: Path, cluster: Standalone, bare_python: BarePython, archive: Path
) -> None:
    """Spark's record: the app ran on the cluster with the bare Python and the archive, and
    each action's Arrow job ran its tasks on the executor, all successful. The bare Python's
    record: it started in the executor's folder, and the Arrow engine's module was
    imported there from the executor's copy of the archive (its byte code was written)."""
    log = _event_log(events)
    (app,) = [e for e in log if e["Event"] == "SparkListenerApplicationStart"]
    (conf,) = [e["Spark Properties"] for e in log if e["Event"] == "SparkListenerEnvironmentUpdate"]
    assert conf["spark.master"] == cluster.master_url
    assert conf["spark.pyspark.python"] == bare_python.python
    assert conf["spark.archives"] == f"{archive}#icefloe_deps"
    executors = {e["Executor ID"] for e in log if e["Event"] == "SparkListenerExecutorAdded"}
    assert executors and "driver" not in executors
    jobs, tasks = _arrow_tasks(log)
    assert jobs == 1 and tasks  # one batch: one Arrow job for every partition's groups
    for t in tasks:
        assert t["Task End Reason"]["Reason"] == "Success"
        assert t["Task Info"]["Executor ID"] in executors and t["Task Info"]["Host"] == "127.0.0.1"
    folders = {cluster.work_dir / app["App ID"] / x for x in executors}
    started = [s for s in bare_python.starts() if Path(s["cwd"]) in folders]
    assert started and all(s["executable"] == bare_python.python for s in started)
    code = Path("icefloe_deps", "icefloe", "jobs", "rewrite", "__pycache__")
    assert any(list((f / code).glob("arrow_engine.cpython-*.pyc")) for f in folders)


def test_actors_run_the_arrow_engine_on_a_standalone_cluster(
    executor_archive: PackedArchive,  # first: it packs while the rest is set up
    bare_python: BarePython,
    standalone: Standalone,
    redis_client: Any,
    tmp_path: Path,
) -> None:
    home, events = tmp_path / "lake", tmp_path / "events"
    home.mkdir()
    events.mkdir()
    config = _config(home, bare_python.python, executor_archive.target, events)
    cfg = load_config(config)
    table = _make_table(cfg)
    before = table.scan().to_arrow().sort_by("id")
    partitions = {p.key: p for p in current_partitions(table)}
    shown = sorted(p.partition.display() for p in partitions.values())
    assert shown == [f"part={p}" for p in PARTS]
    assert all(len(p.paths) == APPENDS for p in partitions.values())
    old_snapshots = {s.snapshot_id for s in table.snapshots()}

    decided = json.loads(_icefloe(config, "decide", "--once", "--json"))
    assert decided["enqueued"] == decided["dispatched"] == len(PARTS)
    assert decided["queue"]["ready"] == len(PARTS)

    archive = executor_archive.path()  # packed by now (it ran in the background)
    out = _icefloe(
        config,
        *("submit", "--master", standalone.master_url, "actor", "--idle-exit", "0"),
        env=spark_env(tmp_path / "driver"),
    )
    assert f"actor done={len(PARTS)} failed=0 lost=0" in out.splitlines()

    # every item acked once, in one batch whose report names the Arrow engine: one commit
    queue = open_state(cfg, redis_client).queue
    assert queue.depth() == {"pending": 0, "ready": 0, "inflight": 0, "dead": 0}
    (e,) = gather(cfg, redis_client, queue, time.time())["recent"]
    assert e["ok"] and e["outcome"] == f"done×{len(PARTS)}" and e["attempt"] == 1, e
    assert e["batch"]["items"] == len(PARTS) and e["batch"]["commits"] == 1, e
    assert e["engine"] == "arrow", e
    assert e["files_rewritten"] == APPENDS * len(PARTS) and len(e["snapshot_ids"]) == 1, e
    table = load_catalog(cfg).load_table(TABLE)
    _check_commit(table, e, old_snapshots, Counter(before.column("part").to_pylist()))

    # every row kept; no data file that no snapshot references
    assert table.scan().to_arrow().sort_by("id").equals(before)
    referenced = table.inspect.all_data_files()["file_path"].to_pylist()
    warehouse = Path(cfg.catalog.warehouse.removeprefix("file://"))
    on_disk = {str(p) for p in warehouse.rglob("*.parquet")}
    assert on_disk == {p.removeprefix("file://") for p in referenced}

    _check_arrow_ran_on_the_executor(events, standalone, bare_python, archive)
