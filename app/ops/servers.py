"""The local backend servers of ``icefloe dev``: start one detached, know it again, stop it.

Each server runs in a session of its own (``start_new_session``), appends to one log file
and is recognised later by its PID *and* a marker in its command line, so a recycled PID
is never taken for it. PostgreSQL refuses to run as root: as root, ``initdb`` and
``postgres`` run as the ``postgres`` user, in a cluster folder that user owns.
Secrets reach the servers through files of mode 0600 or the environment, never argv.
"""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from icefloe.base.errors import ServiceUnavailable
from icefloe.base.redact import scrub
from icefloe.base.versions import REST_CATALOG_DIR, S3PROXY, SERVERS_DIR

LOOPBACK = "127.0.0.1"
EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
FREE_PORTS_FROM = 20_000  # above the servers' usual ports (5432, 6379, 8080, 8181, 9000...)
PG_BIN = Path(os.environ.get("ICEFLOE_PG_BIN", "/usr/lib/postgresql/15/bin"))
PG_USER = "postgres"
PG_ROLE = "icefloe"  # the cluster's superuser, and its database
BUCKET = "warehouse"
REGION = "us-east-1"
BOOTSTRAP = "run scripts/bootstrap.sh (or `make bootstrap`)"
# servers this process started: polling them reaps them (a dead child is no zombie "alive")
_children: dict[int, subprocess.Popen[bytes]] = {}


@dataclass(frozen=True)
class Service:
    """One server of a profile: where it listens, logs, and what its command line holds."""

    name: str
    pid: int | None
    host: str
    port: int
    log: Path
    marker: str

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


# --- ports and processes ---------------------------------------------------------------


def port_answers(port: int, host: str = LOOPBACK, timeout: float = 0.3) -> bool:
    """Whether something accepts TCP connections on ``host:port``."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def port_free(port: int, host: str = LOOPBACK, grace: float = 0.0) -> bool:
    """Whether a server could listen on ``host:port``, waiting up to ``grace`` seconds for
    it to be released (a killed server's memory goes before its sockets do)."""
    deadline = time.monotonic() + grace
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind((host, port))
                bound = True
            except OSError:
                bound = False
        if bound and not port_answers(port, host):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)


def ephemeral_start() -> int:
    """The first port of the kernel's ephemeral range (Linux's default: 32768)."""
    try:
        return int(EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port(host: str = LOOPBACK) -> int:
    """A free port at random below the kernel's ephemeral range (where ``bind(0)`` picks and
    every outgoing connection takes its local port: one could hold it while the service is
    down, which could then not start again); the kernel's pick if none is free there."""
    top = ephemeral_start()
    pick = random.SystemRandom()  # not the seedable module state: two runs pick apart
    for _ in range(100 if top > FREE_PORTS_FROM else 0):
        port = pick.randrange(FREE_PORTS_FROM, top)
        if port_free(port, host):
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def http_status(url: str, timeout: float = 1.0) -> int | None:
    """The HTTP status ``url`` answers with (an error status too), or None."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: no proxy
    try:
        with opener.open(url, timeout=timeout) as response:
            return int(response.status)
    except urllib.error.HTTPError as e:
        return int(e.code)
    except (OSError, ValueError):
        return None


def alive(pid: int | None, marker: str) -> bool:
    """Whether ``pid`` runs and is the server whose command line holds ``marker``."""
    if not pid:
        return False
    child = _children.get(pid)
    if child is not None and child.poll() is not None:
        del _children[pid]
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process (postgres): it exists
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return False
    state = stat.rsplit(")", 1)[-1].split()[0]
    return state not in ("Z", "X") and marker in cmdline


def spawn(
    argv: Sequence[str], log: Path, *, env: Mapping[str, str] | None = None, user: str | None = None
) -> int:
    """Start ``argv`` detached (own session, no stdin), appending its output to ``log``."""
    log.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=fd,
            stderr=subprocess.STDOUT,
            env=dict(env) if env is not None else None,
            cwd=log.parent if user is None else "/",
            start_new_session=True,
            user=user,
            group=user,
            extra_groups=[] if user else None,
        )
    except OSError as e:
        raise ServiceUnavailable(f"cannot start {argv[0]}: {e.strerror}") from None
    finally:
        os.close(fd)
    _children[proc.pid] = proc
    return proc.pid


def wait_ready(
    services: Sequence[Service], ready: Callable[[Service], bool], timeout: float
) -> None:
    """Wait until each service answers; one line naming the log when one dies or is late."""
    pending = list(services)
    deadline = time.monotonic() + timeout
    while pending:
        for svc in list(pending):
            if not alive(svc.pid, svc.marker):
                raise ServiceUnavailable(f"{svc.name} exited while starting; see {svc.log}")
            if ready(svc):
                pending.remove(svc)
        if pending and time.monotonic() > deadline:
            svc = pending[0]
            raise ServiceUnavailable(
                f"{svc.name} did not answer on {svc.address} within {timeout:.0f}s; see {svc.log}"
            )
        if pending:
            time.sleep(0.1)


def stop(pid: int, marker: str, timeout: float = 15.0) -> None:
    """SIGTERM the server's process group, then SIGKILL it after ``timeout`` seconds."""
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        except PermissionError:
            os.kill(pid, sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if not alive(pid, marker):
                return
            time.sleep(0.05)


def _require(path: Path, what: str) -> Path:
    if not path.exists():
        raise ServiceUnavailable(f"{what} not found at {path}: {BOOTSTRAP}")
    return path


def _java() -> str:
    java = shutil.which("java")
    if java is None:
        raise ServiceUnavailable("java not found on PATH: install Java 17+")
    return java


# --- PostgreSQL 15 ---------------------------------------------------------------------


@dataclass(frozen=True)
class PgCluster:
    """A private PostgreSQL cluster: its folder (``data`` inside) and who runs it."""

    base: Path
    user: str | None  # None: the current user (not root)

    @property
    def data(self) -> Path:
        return self.base / "data"

    def run(self, argv: Sequence[str], log: Path) -> int:
        """Run a PostgreSQL tool as the cluster's user; its output goes to ``log``."""
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            return subprocess.run(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=fd,
                stderr=subprocess.STDOUT,
                cwd="/",  # any user can stand there; every path is absolute
                user=self.user,
                group=self.user,
                extra_groups=[] if self.user else None,
                check=False,
            ).returncode
        finally:
            os.close(fd)


def pg_cluster(profile_dir: Path) -> PgCluster:
    """Where a new cluster goes: inside ``profile_dir`` when its server's user can reach it;
    as root, when ``postgres`` cannot traverse its parents (a 0700 temporary folder), a
    folder of its own under the system's temporary folder, named after ``profile_dir``."""
    _require(PG_BIN / "initdb", "PostgreSQL 15 (initdb)")
    if os.geteuid() != 0:
        return PgCluster(profile_dir / "pg", None)
    reachable = subprocess.run(
        ["test", "-x", str(profile_dir)], user=PG_USER, group=PG_USER, extra_groups=[], check=False
    )
    if reachable.returncode == 0:
        return PgCluster(profile_dir / "pg", PG_USER)
    digest = hashlib.sha256(str(profile_dir).encode()).hexdigest()[:12]
    return PgCluster(Path(tempfile.gettempdir()) / f"icefloe-pg-{digest}", PG_USER)


def _own(path: Path, user: str | None) -> None:
    if user is not None:
        shutil.chown(path, user, user)


def init_postgres(cluster: PgCluster, password: str, log: Path) -> None:
    """``initdb`` once: superuser ``icefloe`` with ``password``, scram-sha-256 logins only."""
    if (cluster.data / "PG_VERSION").exists():
        return
    initdb = _require(PG_BIN / "initdb", "PostgreSQL 15 (initdb)")
    cluster.base.mkdir(parents=True, exist_ok=True)
    cluster.base.chmod(0o700)
    _own(cluster.base, cluster.user)
    pwfile = cluster.base / "pwfile"
    pwfile.touch(mode=0o600)
    pwfile.chmod(0o600)
    pwfile.write_text(password + "\n")
    _own(pwfile, cluster.user)
    try:
        argv = [str(initdb), "-D", str(cluster.data), "--auth=scram-sha-256"]
        argv += [f"--pwfile={pwfile}", f"--username={PG_ROLE}", "--no-sync", "-E", "UTF8"]
        if cluster.run([*argv, "--locale=C"], log) != 0:
            raise ServiceUnavailable(f"initdb failed; see {log}")
    finally:
        pwfile.unlink(missing_ok=True)


def start_postgres(cluster: PgCluster, port: int, log: Path) -> int:
    """Start ``postgres`` on 127.0.0.1:``port`` only (no Unix socket); the postmaster's PID."""
    argv = [str(_require(PG_BIN / "postgres", "PostgreSQL 15")), "-D", str(cluster.data)]
    argv += ["-p", str(port), "-c", f"listen_addresses={LOOPBACK}"]
    argv += ["-c", "unix_socket_directories=", "-c", "fsync=off"]
    return spawn(argv, log, user=cluster.user)


def postgres_ready(port: int) -> bool:
    """Whether the server on ``port`` accepts connections (``pg_isready``, no login)."""
    argv = [str(PG_BIN / "pg_isready"), "-q", "-h", LOOPBACK, "-p", str(port), "-t", "1"]
    return subprocess.run(argv, stdin=subprocess.DEVNULL, check=False).returncode == 0


def create_database(port: int, password: str) -> None:
    """The ``icefloe`` database, unless it exists."""
    # psycopg: only when the database is created
    import psycopg

    try:
        with psycopg.connect(
            host=LOOPBACK,
            port=port,
            user=PG_ROLE,
            password=password,
            dbname="postgres",
            autocommit=True,
            connect_timeout=10,
        ) as conn:
            if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (PG_ROLE,)).fetchone():
                return
            conn.execute(f"CREATE DATABASE {PG_ROLE}")
    except psycopg.Error as e:
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise ServiceUnavailable(f"postgres on {LOOPBACK}:{port}: {scrub(first)}") from None


def stop_postgres(cluster: PgCluster, svc: Service) -> None:
    """``pg_ctl stop -m fast``, then signals if the server still runs."""
    argv = [str(PG_BIN / "pg_ctl"), "stop", "-D", str(cluster.data), "-m", "fast", "-w", "-t", "20"]
    cluster.run(argv, svc.log)
    if svc.pid is not None and alive(svc.pid, svc.marker):
        stop(svc.pid, svc.marker)


# --- s3proxy and the Iceberg REST catalog server ------------------------------------------


def s3proxy_properties(base: Path) -> Path:
    return base / "s3proxy.properties"


def start_s3proxy(base: Path, port: int, log: Path, key: str, secret: str) -> int:
    """s3proxy on 127.0.0.1:``port``, objects as files under ``base/s3`` (bucket ``warehouse``)."""
    jar = _require(SERVERS_DIR / S3PROXY.jar, "s3proxy")
    (base / "s3" / BUCKET).mkdir(parents=True, exist_ok=True)
    props = s3proxy_properties(base)
    props.touch(mode=0o600)
    props.chmod(0o600)
    props.write_text(
        f"s3proxy.endpoint=http://{LOOPBACK}:{port}\n"
        "s3proxy.authorization=aws-v2-or-v4\n"
        f"s3proxy.identity={key}\n"
        f"s3proxy.credential={secret}\n"
        "jclouds.provider=filesystem\n"
        f"jclouds.filesystem.basedir={base / 's3'}\n"
    )
    argv = [_java(), "-Xmx256m", "-XX:+UseSerialGC", "-jar", str(jar), "--properties", str(props)]
    return spawn(argv, log)


REST_MAIN = "org.apache.iceberg.rest.IcefloeRestServer"


def rest_marker(base: Path) -> str:
    return f"-Dicefloe.dev={base}"


def start_rest(base: Path, port: int, s3_port: int, log: Path, key: str, secret: str) -> int:
    """Iceberg's REST catalog server on 127.0.0.1:``port``: its catalog a SQLite file in
    ``base``, its tables under ``s3://warehouse/`` on the s3proxy at ``s3_port``."""
    classes = _require(REST_CATALOG_DIR / "classes", "the REST catalog server")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CATALOG_")}
    env.update(
        {
            "CATALOG_URI": f"jdbc:sqlite:{base / 'rest-catalog.db'}",
            "CATALOG_WAREHOUSE": f"s3://{BUCKET}/",
            "CATALOG_IO__IMPL": "org.apache.iceberg.aws.s3.S3FileIO",
            "CATALOG_S3_ENDPOINT": f"http://{LOOPBACK}:{s3_port}",
            "CATALOG_S3_PATH__STYLE__ACCESS": "true",
            "CATALOG_S3_ACCESS__KEY__ID": key,
            "CATALOG_S3_SECRET__ACCESS__KEY": secret,
            "CATALOG_CLIENT_REGION": REGION,
            "AWS_REGION": REGION,
        }
    )
    classpath = f"{REST_CATALOG_DIR}/*:{classes}"
    argv = [_java(), "-Xmx512m", "-XX:+UseSerialGC", rest_marker(base), "-cp", classpath]
    return spawn([*argv, REST_MAIN, LOOPBACK, str(port)], log, env=env)
