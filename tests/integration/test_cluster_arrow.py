"""The Arrow engine on a multi-process Spark cluster (``local-cluster``) without the archive.

``local-cluster[1,1,1024]`` starts a master, a worker and an executor JVM apart from the
driver, like any cluster. The executors' Python here is a bare interpreter (a fresh venv
of the base Python: no PyIceberg, no pyarrow, no icefloe), as on a cluster node. Without
``spark.executor_deps`` the Arrow tasks fail on import, the groups go through the Spark
engine and the report says why; no row is lost. (With the archive from ``icefloe pack``
the groups run in the executors' Python through the Arrow engine:
``test_spark_standalone.py`` shows it on a standalone master and worker, through
``icefloe submit``.)

The run has its own process (one SparkContext per process; the test run's shared
session stays as it is).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.integration.executor_python import BarePython
from tests.support.config import config_raw

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]

JOB = r"""
import json, sys
import pyarrow as pa
from pyiceberg.transforms import IdentityTransform
from icefloe.jobs.data.optimize import optimize_table
from icefloe.base.spark import build_spark
from icefloe.base.catalog import load_catalog
from icefloe.base.config import build_config

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
    "master": spark.sparkContext.master, "app": spark.sparkContext.applicationId,
    "executor_python": probe[0], "executor_path": probe[1],
    "same_rows": before == after, "rows": len(after), "operation": op,
    "partitions": [{"engine": p.get("engine"), "reason": p.get("reason"),
                    "status": p.get("status")} for p in report["partitions"]],
}))
spark.stop()
"""


def run_on_cluster(home: Path, executor_python: str) -> dict[str, Any]:
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
    result = dict(json.loads(lines[-1][len("RESULT ") :]))
    # local-cluster's worker ignores SPARK_WORKER_DIR: its executors work under SPARK_HOME
    shutil.rmtree(spark_home() / "work" / result["app"], ignore_errors=True)
    with contextlib.suppress(OSError):  # the folder too, unless another run works there
        (spark_home() / "work").rmdir()
    return result


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def test_arrow_engine_needs_the_archive_on_a_cluster(
    tmp_path: Path, bare_python: BarePython
) -> None:
    without = run_on_cluster(tmp_path / "without", bare_python.python)
    assert without["master"].startswith("local-cluster")
    assert without["executor_python"] == bare_python.python  # not this venv's, whatever PATH says
    assert without["same_rows"] and without["rows"] == 3000
    assert without["operation"] == "replace"
    assert {p["engine"] for p in without["partitions"]} == {"spark"}
    for p in without["partitions"]:  # the cause, from the executors' traceback, and the fix
        assert "ModuleNotFoundError" in p["reason"] and "icefloe pack" in p["reason"]
