"""The Arrow engine on a real multi-process Spark cluster (``local-cluster``).

``local-cluster[1,1,1024]`` starts a master, a worker and an executor JVM apart from the
driver, like any cluster. The executors' Python here is a bare interpreter (a fresh venv
of the base Python: no PyIceberg, no pyarrow, no icefloe), as on a cluster node. Then:

* without ``spark.executor_deps`` the Arrow tasks fail on import, the groups go through
  the Spark engine and the report says why; no row is lost;
* with the archive from ``icefloe pack`` the same rewrite runs in the executors' Python
  tasks through the Arrow engine.

Each case runs in its own process (one SparkContext per process; the test run's shared
session stays as it is).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import config_raw

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]

JOB = r"""
import json, sys
import pyarrow as pa
from pyiceberg.transforms import IdentityTransform
from jobs.optimize import optimize_table
from service.spark import build_spark
from service.catalog import load_catalog
from service.config import build_config

raw, home = json.loads(sys.argv[1]), sys.argv[2]
cfg = build_config(raw, source="<cluster test>", home=__import__("pathlib").Path(home))
catalog = load_catalog(cfg)
catalog.create_namespace("db")
schema = pa.schema([("id", pa.int64()), ("part", pa.string()), ("payload", pa.string())])
table = catalog.create_table("db.t", schema=schema)
with table.update_spec() as spec:
    spec.add_field("part", IdentityTransform(), "part")
table = catalog.load_table("db.t")
for b in range(6):
    ids = list(range(b * 500, (b + 1) * 500))
    table.append(pa.table({"id": ids, "part": ["a" if i % 2 else "b" for i in ids],
                           "payload": [f"row-{i}" * 5 for i in ids]}, schema=schema))
spark = build_spark(cfg, app_name="icefloe-cluster-test")
probe = spark.sparkContext.parallelize([0], 1).map(
    lambda _: (__import__("sys").executable, __import__("sys").path)).collect()[0]
before = sorted(tuple(r) for r in spark.table("lake.db.t").collect())
report = optimize_table(spark, cfg, "db.t", tolerance=0).to_dict()
after = sorted(tuple(r) for r in spark.table("lake.db.t").collect())
op = catalog.load_table("db.t").current_snapshot().summary.operation.value
print("RESULT " + json.dumps({
    "master": spark.sparkContext.master, "executor_python": probe[0], "executor_path": probe[1],
    "same_rows": before == after, "rows": len(after), "operation": op,
    "partitions": [{"engine": p.get("engine"), "reason": p.get("reason"),
                    "status": p.get("status")} for p in report["partitions"]],
}))
spark.stop()
"""


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A Python with nothing installed: a fresh venv of this interpreter's base Python."""
    where = tmp_path_factory.mktemp("bare-python")
    venv.EnvBuilder(with_pip=False, symlinks=True).create(where)
    python = where / "bin" / "python"
    probe = subprocess.run([python, "-c", "import pyiceberg"], capture_output=True)
    assert probe.returncode != 0, "the bare executor Python must not have PyIceberg"
    return str(python)


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Built the way users build it: ``icefloe pack --output PATH --json``."""
    path = tmp_path_factory.mktemp("pack") / "deps.tar.gz"
    done = subprocess.run(
        [sys.executable, "-m", "service", "pack", "--output", str(path), "--json"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    packed = json.loads(done.stdout)
    assert packed["archive"] == str(path) and packed["bytes"] == path.stat().st_size
    assert packed["config"] == {"spark": {"executor_deps": str(path)}}
    assert any(d.startswith("pyiceberg==") for d in packed["distributions"])
    return path


def run_on_cluster(home: Path, executor_python: str, deps: Path | None) -> dict[str, Any]:
    home.mkdir(parents=True)
    raw = config_raw(home)
    raw["spark"] = {
        "master": "local-cluster[1,1,1024]",
        "conf": {
            "spark.pyspark.python": executor_python,
            "spark.ui.enabled": "false",
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
        },
    }
    if deps is not None:
        raw["spark"]["executor_deps"] = str(deps)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "SPARK_"))}
    env.update(
        SPARK_WORKER_DIR=str(home / "spark-work"),
        SPARK_LOCAL_IP="127.0.0.1",
        PYTHONPATH=str(ROOT),
        PYSPARK_DRIVER_PYTHON=sys.executable,
    )
    done = subprocess.run(
        [sys.executable, "-c", JOB, json.dumps(raw), str(home)],
        capture_output=True,
        text=True,
        env=env,
        cwd=home,
        timeout=600,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, done.stdout[-3000:] + done.stderr[-6000:]
    return dict(json.loads(lines[-1][len("RESULT ") :]))


def test_arrow_engine_needs_the_archive_on_a_cluster(
    tmp_path: Path, bare_python: str, archive: Path
) -> None:
    without = run_on_cluster(tmp_path / "without", bare_python, None)
    assert without["master"].startswith("local-cluster")
    assert without["executor_python"] == bare_python  # not this venv's, whatever PATH says
    assert without["same_rows"] and without["rows"] == 3000
    assert without["operation"] == "replace"
    assert {p["engine"] for p in without["partitions"]} == {"spark"}
    for p in without["partitions"]:  # the cause, from the executors' traceback, and the fix
        assert "ModuleNotFoundError" in p["reason"] and "icefloe pack" in p["reason"]

    shipped = run_on_cluster(tmp_path / "with", bare_python, archive)
    assert shipped["same_rows"] and shipped["rows"] == 3000
    assert shipped["operation"] == "replace"
    assert {p["engine"] for p in shipped["partitions"]} == {"arrow"}
