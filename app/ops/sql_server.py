"""``icefloe sql-server``: a Spark Connect server with icefloe's whole Spark conf, run in the
foreground until SIGTERM or Ctrl-C.

The server is ``spark-submit --class org.apache.spark.sql.connect.service.SparkConnectServer
spark-internal`` (the pip ``pyspark`` has no ``sbin/start-connect-server.sh`` but ships the
``spark-connect`` jar) with :func:`icefloe.base.spark.spark_conf`: the catalog, the jars of
``.jars/`` and both SQL extensions (Iceberg's, and icefloe's skew rule when its jar is
there). The argv is a pure function (:func:`build_server_command`), like ``icefloe submit``'s.

Secrets: the command line holds what ``ps`` may show (:func:`icefloe.base.spark.public_conf`);
a secret of the config (a JDBC password, S3 keys) goes in a properties file of mode 0600 in
this user's own temporary folder (``--properties-file``, with ``--load-spark-defaults`` so a
``SPARK_HOME``'s own defaults still apply), removed when the server stops.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from icefloe.base.config import Config
from icefloe.base.errors import OperationFailed, UsageError
from icefloe.base.spark import (
    public_conf,
    quiet_driver_conf,
    secret_conf,
    spark_conf,
    spark_log_file,
)

CONNECT_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
DEFAULT_PORT = 15002
DEFAULT_HOST = "127.0.0.1"  # Spark Connect has no authentication of its own
START_TIMEOUT = 180.0  # seconds until the port answers (about 15 s here)
STOP_GRACE = 30.0  # seconds a stopping server gets before SIGKILL
_SUBMIT_OWN = ("spark.master", "spark.jars", "spark.jars.packages")  # argv options instead


def spark_home(env: Mapping[str, str] = os.environ) -> Path:
    """``$SPARK_HOME``, else the pip ``pyspark`` package's folder (found without importing it)."""
    if env.get("SPARK_HOME"):
        return Path(env["SPARK_HOME"])
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        raise UsageError("no Spark: set SPARK_HOME or install pyspark (scripts/bootstrap.sh)")
    return Path(spec.origin).parent


def server_conf(
    cfg: Config,
    port: int,
    host: str = DEFAULT_HOST,
    env: Mapping[str, str] = os.environ,
    log_file: Path | None = None,
) -> dict[str, str]:
    """The server's Spark conf: :func:`spark_conf`, its gRPC address, and (unless
    ``ICEFLOE_DEBUG`` is set) the quiet driver logging of icefloe's other JVMs."""
    conf = spark_conf(cfg)
    conf["spark.connect.grpc.binding.address"] = host
    conf["spark.connect.grpc.binding.port"] = str(port)
    if not env.get("ICEFLOE_DEBUG"):
        conf.update(quiet_driver_conf(conf, log_file or spark_log_file()))
    return conf


def build_server_command(
    conf: Mapping[str, str],
    *,
    spark_submit: str = "spark-submit",
    properties_file: str | None = None,
) -> list[str]:
    """The argv that runs the Connect server with ``conf`` (no secret in it: those are in
    ``properties_file``). Order: ``spark-submit --master M --class C [--jars a,b]
    [--packages p] [--properties-file F --load-spark-defaults] [--conf k=v ...sorted]
    spark-internal``."""
    cmd = [spark_submit, "--master", conf.get("spark.master", "local[*]"), "--class", CONNECT_CLASS]
    if conf.get("spark.jars"):
        cmd += ["--jars", conf["spark.jars"]]
    if conf.get("spark.jars.packages"):
        cmd += ["--packages", conf["spark.jars.packages"]]
    if properties_file is not None:
        cmd += ["--properties-file", properties_file, "--load-spark-defaults"]
    for key in sorted(k for k in conf if k not in _SUBMIT_OWN):
        cmd += ["--conf", f"{key}={conf[key]}"]
    return [*cmd, "spark-internal"]


def _escape(text: str) -> str:
    """``text`` as a key or value of a Java properties file (read as UTF-8 by Spark)."""
    specials = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\f": "\\f"}
    return "".join(specials.get(c, "\\" + c if c in " =:#!" else c) for c in text)


def properties_text(conf: Mapping[str, str]) -> str:
    """``conf`` as a Java properties file, one ``key=value`` a line, sorted."""
    return "".join(f"{_escape(k)}={_escape(conf[k])}\n" for k in sorted(conf))


def write_properties(conf: Mapping[str, str], folder: Path) -> Path:
    """A new file of mode 0600 in ``folder`` holding ``conf`` (:func:`properties_text`)."""
    fd, name = tempfile.mkstemp(prefix="sql-server-", suffix=".properties", dir=folder)
    with os.fdopen(fd, "w", encoding="utf-8") as f:  # mkstemp: mode 0600 from the start
        f.write(properties_text(conf))
    return Path(name)


@dataclass(frozen=True)
class ServerPlan:
    """What :func:`serve` starts: the command line's conf and the secrets' (the properties
    file's), the environment's additions and the driver's log file."""

    conf: dict[str, str]
    secrets: dict[str, str]
    env: dict[str, str]
    log_file: Path
    spark_submit: str

    def argv(self, properties_file: str | None = None) -> list[str]:
        return build_server_command(
            self.conf, spark_submit=self.spark_submit, properties_file=properties_file
        )


def plan_server(
    cfg: Config, port: int, host: str = DEFAULT_HOST, env: Mapping[str, str] = os.environ
) -> ServerPlan:
    """:func:`server_conf` split into what may go on the command line and the secrets, run
    by ``$SPARK_HOME/bin/spark-submit`` with ``SPARK_HOME`` set (and ``SPARK_LOCAL_IP`` for a
    local master, as :func:`icefloe.base.spark.build_spark` does)."""
    home = spark_home(env)
    log_file = spark_log_file()
    conf = server_conf(cfg, port, host, env, log_file)
    extra = {"SPARK_HOME": str(home)}
    if cfg.spark.master.startswith("local"):
        extra["SPARK_LOCAL_IP"] = env.get("SPARK_LOCAL_IP", "127.0.0.1")
    return ServerPlan(
        public_conf(cfg, conf),
        secret_conf(cfg, conf),
        extra,
        log_file,
        str(home / "bin/spark-submit"),
    )


def check_port_free(host: str, port: int) -> None:
    """A UsageError when something listens on ``host:port`` already (the readiness check
    would take it for the new server)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError as e:
            raise UsageError(f"cannot listen on {host}:{port}: {e.strerror or e}") from None


def _answers(host: str, port: int) -> bool:
    probe = "127.0.0.1" if host in ("0.0.0.0", "") else host
    try:
        with socket.create_connection((probe, port), timeout=1.0):
            return True
    except OSError:
        return False


def _stop(proc: subprocess.Popen[bytes], grace: float = STOP_GRACE) -> int:
    """SIGTERM (Spark's shutdown hooks run), SIGKILL after ``grace`` seconds."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
    return proc.wait()


def serve(
    cfg: Config,
    port: int = DEFAULT_PORT,
    host: str = DEFAULT_HOST,
    on_ready: Callable[[ServerPlan, int], None] = lambda plan, pid: None,
    signals: Sequence[signal.Signals] = (signal.SIGINT, signal.SIGTERM),
) -> None:
    """Run the server until one of ``signals`` arrives (then stop it and return) or it exits
    by itself (:class:`OperationFailed`). ``on_ready(plan, pid)`` once the port answers."""
    check_port_free(host, port)
    plan = plan_server(cfg, port, host)
    props = write_properties(plan.secrets, plan.log_file.parent) if plan.secrets else None
    argv = plan.argv(str(props) if props is not None else None)
    stopping: list[int] = []

    def request_stop(signum: int, frame: FrameType | None) -> None:
        stopping.append(signum)

    previous = {s: signal.signal(s, request_stop) for s in signals}
    proc = subprocess.Popen(argv, env={**os.environ, **plan.env}, start_new_session=True)
    try:
        ready = False
        deadline = time.monotonic() + START_TIMEOUT
        while not stopping and proc.poll() is None:
            if not ready and _answers(host, port):
                ready = True
                on_ready(plan, proc.pid)
            elif not ready and time.monotonic() > deadline:
                raise OperationFailed(
                    f"the Spark Connect server did not listen on {host}:{port} within "
                    f"{START_TIMEOUT:.0f} s (its log: {plan.log_file})"
                )
            time.sleep(0.2)
        if not stopping:
            raise OperationFailed(
                f"the Spark Connect server exited with code {proc.returncode} "
                f"(its log: {plan.log_file}; ICEFLOE_DEBUG=1 logs to stderr)"
            )
    finally:
        _stop(proc)
        for s, handler in previous.items():
            signal.signal(s, handler)
        if props is not None:
            props.unlink(missing_ok=True)
