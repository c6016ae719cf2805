"""``icefloe sql-server``: a Spark Connect server with icefloe's whole Spark conf, run in the
foreground until SIGTERM or Ctrl-C.

The server is ``spark-submit --class org.apache.spark.sql.connect.service.SparkConnectServer
spark-internal`` (the pip ``pyspark`` has no ``sbin/start-connect-server.sh`` but ships the
``spark-connect`` jar) with :func:`icefloe.base.spark.spark_conf`: the catalog, the jars of
``.jars/`` and both SQL extensions (Iceberg's, and icefloe's skew rule when its jar is
there). The argv is a pure function (:func:`build_server_command`), like ``icefloe submit``'s.

Secrets: none is in the server's Spark conf, which any Connect client reads back
(``spark.conf.get``: Spark 4.1's Config RPC redacts nothing). Each reaches the catalog
another way (:func:`deliver_secrets`): a REST catalog's properties as ``env:NAME`` (Iceberg's
``RESTSessionCatalog`` resolves them from the server's environment), a PostgreSQL password
in a pgpass file of mode 0600 (``PGPASSFILE``: the JDBC driver reads it), S3 keys as the
AWS SDK's environment variables. Any other secret is refused, naming its key. The
environment and that file are the server user's (``/proc/PID/environ`` is 0400): what a
client reaches by running code there is the server user's anyway (docs: sql-server).

Authentication: Spark Connect's own pre-shared token (``SPARK_CONNECT_AUTHENTICATE_TOKEN``
in the server's environment; ``PreSharedKeyAuthenticationInterceptor`` answers every call
without ``Authorization: Bearer <token>`` with UNAUTHENTICATED). A fresh token each start
unless one is given; no token only on a loopback address.
"""

from __future__ import annotations

import importlib.util
import ipaddress
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
DEFAULT_HOST = "127.0.0.1"
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
    conf: Mapping[str, str], *, spark_submit: str = "spark-submit"
) -> list[str]:
    """The argv that runs the Connect server with ``conf`` (no secret in it: see
    :func:`deliver_secrets`). Order: ``spark-submit --master M --class C [--jars a,b]
    [--packages p] [--conf k=v ...sorted] spark-internal``."""
    cmd = [spark_submit, "--master", conf.get("spark.master", "local[*]"), "--class", CONNECT_CLASS]
    if conf.get("spark.jars"):
        cmd += ["--jars", conf["spark.jars"]]
    if conf.get("spark.jars.packages"):
        cmd += ["--packages", conf["spark.jars.packages"]]
    for key in sorted(k for k in conf if k not in _SUBMIT_OWN):
        cmd += ["--conf", f"{key}={conf[key]}"]
    return [*cmd, "spark-internal"]


TOKEN_ENV = "SPARK_CONNECT_AUTHENTICATE_TOKEN"
"""Where Spark's Connect server (``Connect.getAuthenticateToken``) and PySpark's client
(``ChannelBuilder.token``) read the token when it is not in the Spark conf."""
SECRET_ENV = "ICEFLOE_CATALOG_SECRET_"  # + a number: a REST catalog property's env: name
AWS_ENV = {  # S3FileIO without keys of its own uses the AWS SDK's default chain
    "s3.access-key-id": "AWS_ACCESS_KEY_ID",
    "s3.secret-access-key": "AWS_SECRET_ACCESS_KEY",
    "s3.session-token": "AWS_SESSION_TOKEN",
}


@dataclass(frozen=True)
class Delivery:
    """How the secrets reach the server other than by its Spark conf: ``conf`` entries to
    add (``env:`` references), environment variables, and a pgpass file's text."""

    conf: dict[str, str]
    env: dict[str, str]
    pgpass: str | None = None


def _pgpass_field(text: str) -> str:
    return text.replace("\\", "\\\\").replace(":", "\\:")


def deliver_secrets(cfg: Config, secrets: Mapping[str, str], conf: Mapping[str, str]) -> Delivery:
    """The secret entries of the server's conf (``secrets``), each delivered outside the
    Spark conf (the module doc says how), or a UsageError naming the one that cannot be."""
    prefix = f"spark.sql.catalog.{cfg.catalog.name}."
    out = Delivery({}, {})
    for n, key in enumerate(sorted(secrets)):
        value, prop = secrets[key], key.removeprefix(prefix)
        if not key.startswith(prefix) or prop in ("uri", "warehouse"):
            pass  # refused below
        elif cfg.catalog.type == "rest":
            name = f"{SECRET_ENV}{n}"
            out.conf[key], out.env[name] = f"env:{name}", value
            continue
        elif prop in AWS_ENV:
            out.env[AWS_ENV[prop]] = value
            continue
        elif prop == "jdbc.password" and conf.get(f"{prefix}uri", "").startswith(
            "jdbc:postgresql:"
        ):
            user = conf.get(f"{prefix}jdbc.user", "")
            if any(c in user + value for c in "\r\n"):
                raise UsageError(
                    f"{key}: the catalog's user or password holds a line break, which a "
                    "pgpass file cannot: change the password"
                )
            line = f"*:*:*:{_pgpass_field(user)}:{_pgpass_field(value)}\n"
            out = Delivery(out.conf, out.env, line)
            continue
        raise UsageError(
            f"sql-server cannot keep {key} out of its clients' reach (any Spark Connect client "
            "reads the server's Spark conf): give it to the catalog another way (a REST "
            "catalog's property, a postgresql:// URI's password, S3 keys), or run Spark SQL "
            "another way"
        )
    return out


@dataclass(frozen=True)
class ServerPlan:
    """What :func:`serve` starts: the command line's conf (no secret in it), the
    environment's additions (the secrets and the token among them: never print them), a
    pgpass file's text, and the driver's log file."""

    conf: dict[str, str]
    env: dict[str, str]
    log_file: Path
    spark_submit: str
    pgpass: str | None = None

    def argv(self) -> list[str]:
        return build_server_command(self.conf, spark_submit=self.spark_submit)


def plan_server(
    cfg: Config,
    port: int,
    host: str = DEFAULT_HOST,
    env: Mapping[str, str] = os.environ,
    token: str | None = None,
) -> ServerPlan:
    """:func:`server_conf` without its secrets (:func:`deliver_secrets` gives them to the
    catalog), run by ``$SPARK_HOME/bin/spark-submit`` with ``SPARK_HOME`` set (and
    ``SPARK_LOCAL_IP`` for a local master, as :func:`icefloe.base.spark.build_spark` does),
    the token (if any) in :data:`TOKEN_ENV`."""
    home = spark_home(env)
    log_file = spark_log_file()
    conf = server_conf(cfg, port, host, env, log_file)
    if "spark.ui.enabled" not in cfg.spark.conf:  # its pages show every client's queries
        conf["spark.ui.enabled"] = "false"
    delivery = deliver_secrets(cfg, secret_conf(cfg, conf), conf)
    extra = {"SPARK_HOME": str(home), **delivery.env}
    if cfg.spark.master.startswith("local"):
        extra["SPARK_LOCAL_IP"] = env.get("SPARK_LOCAL_IP", "127.0.0.1")
    if token is not None:
        extra[TOKEN_ENV] = token
    return ServerPlan(
        {**public_conf(cfg, conf), **delivery.conf},
        extra,
        log_file,
        str(home / "bin/spark-submit"),
        delivery.pgpass,
    )


def write_private(text: str, folder: Path, suffix: str) -> Path:
    """A new file of mode 0600 in ``folder`` holding ``text``."""
    fd, name = tempfile.mkstemp(prefix="sql-server-", suffix=suffix, dir=folder)
    with os.fdopen(fd, "w", encoding="utf-8") as f:  # mkstemp: mode 0600 from the start
        f.write(text)
    return Path(name)


@dataclass(frozen=True)
class Address:
    """Where the server listens: the address ``--host`` resolves to, as Spark binds it."""

    ip: str
    family: socket.AddressFamily

    @property
    def loopback(self) -> bool:
        return ipaddress.ip_address(self.ip).is_loopback

    @property
    def every_interface(self) -> bool:
        return ipaddress.ip_address(self.ip).is_unspecified

    @property
    def probe(self) -> str:
        """Where a local client reaches it."""
        if self.every_interface:
            return "::1" if self.family == socket.AF_INET6 else "127.0.0.1"
        return self.ip

    def shown(self, port: int) -> str:
        text = f"[{self.ip}]:{port}" if self.family == socket.AF_INET6 else f"{self.ip}:{port}"
        return text + (" (every interface)" if self.every_interface else "")


def resolve_host(host: str) -> Address:
    """``--host`` as the address the server will listen on (its first IPv4 address, else its
    first IPv6 one, as Java resolves a name), or a UsageError."""
    if not host.strip():
        raise UsageError("--host is empty: give an address (127.0.0.1, 0.0.0.0) or a host name")
    try:
        found = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as e:
        raise UsageError(f"--host {host!r}: not an address this machine resolves ({e})") from None
    by_family = sorted(found, key=lambda a: a[0] != socket.AF_INET)
    family, _, _, _, sockaddr = by_family[0]
    return Address(str(sockaddr[0]), socket.AddressFamily(family))


def client_url(address: Address, port: int, token: str | None) -> str:
    """The ``sc://`` URL a client uses. PySpark sends a token over plain text only to the
    host name ``localhost`` (else it insists on TLS), so a loopback or every-interface
    server is named so."""
    host = "localhost" if address.loopback or address.every_interface else address.ip
    if ":" in host:
        host = f"[{host}]"
    return f"sc://{host}:{port}" + (f"/;token={token}" if token else "")


def check_port_free(address: Address, port: int) -> None:
    """A UsageError when something listens on ``address:port`` already (the readiness check
    would take it for the new server)."""
    with socket.socket(address.family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((address.ip, port))
        except OSError as e:
            raise UsageError(f"cannot listen on {address.shown(port)}: {e.strerror or e}") from None


def _answers(address: Address, port: int) -> bool:
    try:
        with socket.create_connection((address.probe, port), timeout=1.0):
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
    token: str | None = None,
    on_ready: Callable[[ServerPlan, Address, int], None] = lambda plan, address, pid: None,
    signals: Sequence[signal.Signals] = (signal.SIGINT, signal.SIGTERM),
) -> None:
    """Run the server until one of ``signals`` arrives (then stop it and return) or it exits
    by itself (:class:`OperationFailed`). ``on_ready(plan, address, pid)`` once the port
    answers."""
    address = resolve_host(host)
    check_port_free(address, port)
    plan = plan_server(cfg, port, address.ip, token=token)
    env = {**os.environ, **plan.env}
    pgpass = None
    if plan.pgpass is not None:
        pgpass = write_private(plan.pgpass, plan.log_file.parent, ".pgpass")
        env["PGPASSFILE"] = str(pgpass)
    stopping: list[int] = []

    def request_stop(signum: int, frame: FrameType | None) -> None:
        stopping.append(signum)

    previous = {s: signal.signal(s, request_stop) for s in signals}
    proc = subprocess.Popen(plan.argv(), env=env, start_new_session=True)
    try:
        ready = False
        deadline = time.monotonic() + START_TIMEOUT
        while not stopping and proc.poll() is None:
            if not ready and _answers(address, port):
                ready = True
                on_ready(plan, address, proc.pid)
            elif not ready and time.monotonic() > deadline:
                raise OperationFailed(
                    f"the Spark Connect server did not listen on {address.shown(port)} within "
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
        if pgpass is not None:
            pgpass.unlink(missing_ok=True)
