"""``icefloe sql-server``: a Spark Connect server (its own JVM, started once for the module on
a free port over a temporary catalog) that a PySpark Connect client uses for Iceberg SQL,
with icefloe's SQL extension loaded; SIGTERM stops it cleanly."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from icefloe.base.versions import EXTENSIONS_CLASS, ICEBERG_EXTENSIONS_CLASS, local_jars
from icefloe.optimizer.skew_report import build, encode, property_name
from tests.support.config import config_raw

pytestmark = pytest.mark.integration

CLI = "from icefloe.app.cli import main; main()"  # the `icefloe` entry point, this interpreter


SECRET = "not-on-the-command-line-0600"


@dataclass
class Server:
    proc: subprocess.Popen[bytes]
    port: int
    log: Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0):
            return True
    except OSError:
        return False


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    jars = [Path(j).name for j in local_jars()]
    assert any(j.startswith("icefloe-spark-extensions-") for j in jars), (
        "no icefloe-spark-extensions jar in .jars/: run scripts/bootstrap.sh"
    )
    home = tmp_path_factory.mktemp("sql-server")
    config = home / "icefloe.yaml"
    raw = config_raw(home)
    raw["catalog"]["properties"] = {"s3.secret-access-key": SECRET}  # unused by a file warehouse
    config.write_text(yaml.safe_dump(raw))
    port, log = _free_port(), home / "sql-server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-c", CLI, "--config", str(config), "sql-server", "--port", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    server = Server(proc, port, log)
    try:
        deadline = time.monotonic() + 120
        while "Spark Connect at" not in log.read_text():
            assert proc.poll() is None, f"the server exited: {log.read_text()}"
            assert time.monotonic() < deadline, f"not ready in 120 s: {log.read_text()}"
            time.sleep(0.5)
        yield server
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


@pytest.fixture(scope="module")
def remote(server: Server) -> Iterator[Any]:
    """A Spark Connect client session. The Connect class itself, not
    ``pyspark.sql.SparkSession.builder.remote``: that one turns this whole test process into
    Connect mode (``SPARK_CONNECT_MODE_ENABLED``) and refuses to start next to the run's
    classic session."""
    from pyspark.sql.connect.session import SparkSession as RemoteSparkSession

    session = RemoteSparkSession.builder.remote(f"sc://localhost:{server.port}").create()
    yield session
    session.stop()  # a no-op once stopped


def test_the_server_runs_both_extensions(remote: Any) -> None:
    row = remote.sql("SET spark.sql.extensions").collect()[0]
    assert row["value"].split(",") == [ICEBERG_EXTENSIONS_CLASS, EXTENSIONS_CLASS]


def test_iceberg_sql_over_connect(remote: Any) -> None:
    remote.sql("CREATE NAMESPACE IF NOT EXISTS lake.db")
    remote.sql("CREATE TABLE lake.db.orders (cust_id BIGINT, amount INT) USING iceberg")
    remote.sql("INSERT INTO lake.db.orders VALUES (1, 10), (1, 5), (2, 7)")
    rows = remote.sql(
        "SELECT cust_id, sum(amount) AS total FROM lake.db.orders GROUP BY cust_id ORDER BY 1"
    ).collect()
    assert [(r["cust_id"], r["total"]) for r in rows] == [(1, 15), (2, 7)]
    snapshots = remote.sql("SELECT count(*) AS n FROM lake.db.orders.snapshots").collect()
    assert snapshots[0]["n"] == 1  # an Iceberg table, not a Spark one


def test_the_skew_rule_salts_sql_over_connect(remote: Any) -> None:
    """The server applies the rule: a Connect client sends plain SQL and gets the salted
    plan (and the plain answer), from a report in the fact table's properties."""
    remote.sql("CREATE NAMESPACE IF NOT EXISTS lake.db")
    remote.sql(
        "CREATE TABLE lake.db.visits USING iceberg AS SELECT CASE WHEN id % 10 < 5 THEN 7L "
        "ELSE id % 50 END AS k, id FROM range(2000)"
    )
    remote.sql(
        "CREATE TABLE lake.db.pages USING iceberg AS SELECT id AS k, concat('p', id) AS page "
        "FROM range(60)"
    )
    snap = remote.sql("SELECT snapshot_id FROM lake.db.visits.snapshots").collect()[0][0]
    report = build("k", "bigint", snap, int(time.time() * 1000), 3_600_000, 2000, 0, [(7, 1000)])
    remote.sql(
        f"ALTER TABLE lake.db.visits SET TBLPROPERTIES "
        f"('{property_name('k')}' = '{encode(report)}')"
    )
    remote.sql("SET spark.sql.autoBroadcastJoinThreshold=-1")
    query = "SELECT p.page, v.id FROM lake.db.pages p LEFT JOIN lake.db.visits v ON p.k = v.k"
    plan = remote.sql(f"EXPLAIN EXTENDED {query}").collect()[0][0]
    # the hot key holds half the visits: salted (isolating pays back from 60%)
    assert "icefloe_salt(lake.db.visits.k: 1 hot keys" in plan
    salted = sorted(map(tuple, remote.sql(query).collect()))
    remote.sql("SET spark.icefloe.skew.enabled=false")
    assert "icefloe_" not in remote.sql(f"EXPLAIN EXTENDED {query}").collect()[0][0]
    assert salted == sorted(map(tuple, remote.sql(query).collect()))
    remote.sql("SET spark.icefloe.skew.enabled=true")


def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _server_argv(server: Server) -> list[bytes]:
    (jvm,) = _children(server.proc.pid)  # spark-submit execs the JVM
    return Path(f"/proc/{jvm}/cmdline").read_bytes().split(b"\0")


def _properties_file(argv: list[bytes]) -> Path:
    return Path(argv[argv.index(b"--properties-file") + 1].decode())


def test_secrets_reach_the_server_but_not_its_command_line(server: Server, remote: Any) -> None:
    argv = _server_argv(server)
    assert b"org.apache.spark.sql.connect.service.SparkConnectServer" in argv
    assert not any(SECRET.encode() in a for a in argv)
    props = _properties_file(argv)
    assert props.stat().st_mode & 0o777 == 0o600
    key = "spark.sql.catalog.lake.s3.secret-access-key"
    assert props.read_text() == f"{key}={SECRET}\n"
    assert remote.conf.get(key) in (SECRET, "*********(redacted)")


def test_sigterm_stops_the_server(server: Server, remote: Any) -> None:
    props = _properties_file(_server_argv(server))
    remote.stop()  # first: a client releasing its session retries for minutes on a dead server
    server.proc.send_signal(signal.SIGTERM)
    assert server.proc.wait(60) == 0, server.log.read_text()
    assert "icefloe sql-server: stopped" in server.log.read_text()
    assert not props.exists()
    deadline = time.monotonic() + 10
    while _answers(server.port):  # the JVM is gone with the port
        assert time.monotonic() < deadline, "the server still answers after SIGTERM"
        time.sleep(0.2)
