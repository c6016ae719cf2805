"""The one place that starts a local ``redis-server`` for the tests (Debian's, on PATH or
``/usr/bin/redis-server``): the run's own Redis, the fault suite's private one that tests
kill and restart, and the nodes of a Redis Cluster (:mod:`tests.support.cluster`).

* :func:`start_run_redis` — the Redis of one test run: no password, no persistence, on a
  free port (``icefloe dev``'s pick, below the ephemeral range), its folder under the run's
  temporary directory. ``tests/conftest.py`` starts it before collection unless
  ``ICEFLOE_TEST_REDIS_URL`` names one, puts its URL in that variable (every test and child
  process reads it there: :func:`tests.support.config.redis_url`) and stops it at the end
  of the run.
* :class:`RedisServer` — one ``redis-server`` in its own folder: :meth:`~RedisServer.start`
  on a free port (then on the same port), :meth:`~RedisServer.kill` (SIGKILL),
  :meth:`~RedisServer.restart`, :meth:`~RedisServer.stop`, :meth:`~RedisServer.url`,
  :meth:`~RedisServer.client`; ``persistent`` gives it an append-only file fsynced on every
  write, so a restart comes back with every acknowledged write.
* :func:`server_argv` / :func:`spawn` — the command line and the process, for the cluster.
  A server started from the main thread dies with the test process too
  (``PR_SET_PDEATHSIG``): a run killed by ``timeout`` or CI leaves no server behind.

Every failure to start is a :class:`RedisServerError` of one line that names its cause (no
binary, the port taken by another process, the log's last line).
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from icefloe.app.ops.servers import free_port, port_free

DEBIAN_BINARY = Path("/usr/bin/redis-server")
PR_SET_PDEATHSIG = 1


class RedisServerError(RuntimeError):
    """A ``redis-server`` that did not start; the message is one line."""


def redis_server_bin() -> str:
    """``redis-server`` on PATH, else Debian's."""
    found = shutil.which("redis-server")
    if found:
        return found
    if DEBIAN_BINARY.exists():
        return str(DEBIAN_BINARY)
    raise RedisServerError(
        f"redis-server is not on PATH nor at {DEBIAN_BINARY}: run scripts/bootstrap.sh "
        "(Debian package redis-server)"
    )


def server_argv(
    port: int,
    workdir: Path,
    *,
    password: str | None = None,
    persistent: bool = False,
    extra: Sequence[str] = (),
) -> list[str]:
    """A loopback ``redis-server`` on ``port``, its files and log in ``workdir``; with
    ``persistent`` an append-only file fsynced on every write (no snapshots either way)."""
    persistence = ["--appendonly", "yes", "--appendfsync", "always"] if persistent else []
    return [
        redis_server_bin(),
        *("--port", str(port), "--bind", "127.0.0.1", "--daemonize", "no", "--save", ""),
        *(persistence or ["--appendonly", "no"]),
        *(["--requirepass", password] if password else []),
        *("--dir", str(workdir), "--logfile", str(workdir / "redis.log")),
        *extra,
    ]


def _die_with_parent() -> None:
    """In the child, before exec: SIGTERM when the thread that started it ends."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def spawn(argv: Sequence[str]) -> subprocess.Popen[bytes]:
    """Start ``argv`` in a session of its own (a Ctrl-C of the run does not reach it). One
    started by the main thread dies with the test process, however that ends (a killed run
    leaves no server); one restarted by another thread (an outage of some seconds) cannot:
    the kernel ties it to that thread, which ends first."""
    Path(argv[argv.index("--dir") + 1]).mkdir(parents=True, exist_ok=True)
    main = threading.current_thread() is threading.main_thread()
    return subprocess.Popen(
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        preexec_fn=_die_with_parent if main else None,
    )


def why_not_started(log: Path, port: int) -> str:
    """What the server's log says went wrong, as one clause."""
    try:
        lines = [line.strip() for line in log.read_text(errors="replace").splitlines()]
    except OSError:
        lines = []
    if any("Address already in use" in line for line in lines):
        return f"port {port} on 127.0.0.1 is taken by another process"
    last = next((line for line in reversed(lines) if line), "")
    return f"its log ends: {last[-200:]}" if last else "it wrote no log"


class RedisServer:
    """One ``redis-server`` in ``workdir`` (see the module doc): started on a free port the
    first time, on the same port every later time."""

    def __init__(
        self,
        workdir: Path,
        password: str | None = None,
        *,
        persistent: bool = False,
    ) -> None:
        self.workdir = workdir
        self.password = password
        self.persistent = persistent
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.kills = 0
        self.restarts = 0

    @property
    def log(self) -> Path:
        return self.workdir / "redis.log"

    # ---- life cycle -----------------------------------------------------------------------
    def start(self, timeout: float = 10.0) -> None:
        """Start on a free port (up to five tries) the first time; on the same port every
        later time, waiting up to ``timeout`` seconds for another process to let it go."""
        assert not self.up, "already running"
        first = self.port == 0
        reason = ""
        for _ in range(5 if first else 1):
            if first:
                self.port = free_port()
            else:
                self._wait_port_free(timeout)
            argv = server_argv(
                self.port, self.workdir, password=self.password, persistent=self.persistent
            )
            self.proc = spawn(argv)
            if self._wait_ready(timeout):
                return
            self._reap()
            reason = why_not_started(self.log, self.port)
        again = "" if first else " again"
        raise RedisServerError(
            f"redis-server did not start{again} on 127.0.0.1:{self.port}: {reason} "
            f"(log: {self.log})"
        )

    def _wait_port_free(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while not port_free(self.port) and time.monotonic() < deadline:
            time.sleep(0.1)

    def _wait_ready(self, seconds: float) -> bool:
        """Whether our process answers within ``seconds``, its data loaded (its PID in
        ``INFO``: whatever else may listen on the port, it is not taken for ours)."""
        import redis

        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.proc is None or self.proc.poll() is not None:
                return False
            try:
                with self._probe() as c:  # ours, and done loading its data (INFO answers
                    # while it loads; every other command fails with LOADING until then)
                    ours = c.info("server").get("process_id") == self.proc.pid
                    if ours and not c.info("persistence").get("loading"):
                        return True
            except redis.exceptions.RedisError:  # not listening yet, loading, someone else
                pass
            time.sleep(0.02)
        return False

    def _reap(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)
        self.proc = None

    def kill(self) -> None:
        """SIGKILL the server (a crashed process: no shutdown, no final save)."""
        assert self.proc is not None and self.proc.poll() is None, "not running"
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)
        self.proc = None
        self.kills += 1

    def restart(self) -> None:
        """Start again on the same port (a persistent one with all its data)."""
        self.start()
        self.restarts += 1

    def ensure_up(self) -> None:
        if not self.up:
            self.restart()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._reap()
        self.proc = None

    # ---- access ---------------------------------------------------------------------------
    @property
    def up(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def url(self, db: int = 0) -> str:
        auth = f":{self.password}@" if self.password else ""
        return f"redis://{auth}127.0.0.1:{self.port}/{db}"

    def client(self) -> Any:
        """A client as the tests use it (redis-py's defaults, a 10 s socket timeout)."""
        import redis

        return redis.Redis(
            host="127.0.0.1", port=self.port, password=self.password, socket_timeout=10
        )

    def _probe(self) -> Any:
        """A client that asks once and waits a second at most (readiness)."""
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        return redis.Redis(
            host="127.0.0.1",
            port=self.port,
            password=self.password,
            socket_timeout=1.0,
            socket_connect_timeout=1.0,
            retry=Retry(NoBackoff(), 0),
        )


def start_run_redis(workdir: Path) -> RedisServer:
    """The test run's Redis (see the module doc), running; :meth:`RedisServer.stop` ends it."""
    server = RedisServer(workdir)
    server.start()
    return server
