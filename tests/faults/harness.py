"""The fault harness: a private Redis that tests kill and restart, a kill switch around any
method, the ``icefloe`` command line in a child process, and small tables to break.

Stable names (``tests/faults/test_kill_points.py`` and every other fault test use them):

* :class:`RedisServer` — a ``redis-server`` of this test run only (started as every test
  Redis is, by :mod:`tests.support.redis_server`), on a free port, with a
  password (:data:`REDIS_PASSWORD`) and an append-only file fsynced on every write
  (``appendfsync always``): a SIGKILL models the crash of the *process*, not of the disk,
  so a restart on the same port (:meth:`RedisServer.restart`) comes back with every write
  that was acknowledged, as a persisted deployment does. :meth:`~RedisServer.kill`,
  :meth:`~RedisServer.restart`, :meth:`~RedisServer.ensure_up`, :meth:`~RedisServer.client`,
  :meth:`~RedisServer.url`, :attr:`~RedisServer.up`.
* :func:`kill_around` — wrap one method of one object so the server is killed right
  before or right after the call (optionally restarted once the call returned or raised);
  :func:`restart_later` — restart it from a thread after a delay (an outage of that length).
* :func:`run_cli` — ``.venv/bin/icefloe --config FILE ARGS…`` as a child process, output
  captured (:class:`CliRun`).
* :func:`make_table` / :func:`append_rows` — a PyIceberg table partitioned by ``day``
  with a few small Parquet files per partition (every one far under the tests' 1 MiB
  target, so each partition with two files or more needs a merge).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.redis_server import RedisServer as SharedRedisServer

REDIS_PASSWORD = "s3cr3t-fault-pw"
S3_SECRET = "fault-s3-secret-9f2e7c"  # a secret-named catalog property: must never print
SECRETS = (REDIS_PASSWORD, S3_SECRET)


class RedisServer(SharedRedisServer):
    """The fault suite's private ``redis-server`` (password, AOF with ``appendfsync
    always``) that tests may SIGKILL and restart on the same port; its data survives a
    restart (:class:`tests.support.redis_server.RedisServer`)."""

    def __init__(self, workdir: Path, password: str = REDIS_PASSWORD) -> None:
        super().__init__(workdir, password, persistent=True)


def kill_around(
    obj: Any,
    name: str,
    server: RedisServer,
    when: str = "before",
    *,
    times: int = 1,
    restart_after: bool = False,
    on_kill: Callable[[str], None] | None = None,
    only_if: Callable[[], bool] | None = None,
) -> list[str]:
    """Make ``obj.name`` kill ``server`` right ``"before"`` or ``"after"`` the real call,
    for its first ``times`` calls (an instance attribute shadows the method).

    ``restart_after``: restart the server once the call returned or raised (a short outage
    spanning exactly that call). ``on_kill(label)`` is told of every kill (the ledger).
    ``only_if()``: a call counts only when this says so (e.g. only on the renewal thread).
    Returns the list of labels of the kills done so far (it grows as calls happen)."""
    if when not in ("before", "after"):
        raise ValueError(f"when must be 'before' or 'after', not {when!r}")
    original = getattr(obj, name)
    label = f"redis killed {when} {type(obj).__name__}.{name}"
    done: list[str] = []

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        inject = len(done) < times and (only_if is None or only_if())
        if inject and when == "before":
            _kill(server, label, done, on_kill)
        try:
            result = original(*args, **kwargs)
            if inject and when == "after":
                _kill(server, label, done, on_kill)
            return result
        finally:
            if inject and restart_after:
                server.ensure_up()

    setattr(obj, name, wrapper)
    return done


def restart_later(server: RedisServer, seconds: float) -> threading.Thread:
    """Restart ``server`` ``seconds`` from now, on a thread (join it before asserting): an
    outage of that length for whoever is waiting on Redis meanwhile."""

    def restart() -> None:
        time.sleep(seconds)
        server.ensure_up()

    thread = threading.Thread(target=restart, name="redis-restart", daemon=True)
    thread.start()
    return thread


def _kill(
    server: RedisServer, label: str, done: list[str], on_kill: Callable[[str], None] | None
) -> None:
    server.kill()
    done.append(label)
    if on_kill is not None:
        on_kill(label)


# ---- the command line -----------------------------------------------------------------------


@dataclass(frozen=True)
class CliRun:
    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    def error_lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.strip()]


def icefloe_argv(config: Path, *args: str) -> list[str]:
    exe = Path(sys.executable).with_name("icefloe")
    head = [str(exe)] if exe.exists() else [sys.executable, "-m", "icefloe"]
    return [*head, "--config", str(config), *args]


def cli_env(config: Path) -> dict[str, str]:
    """The environment of a child ``icefloe``: this one, minus any ``ICEFLOE_*`` override
    that could point it elsewhere, plus ``ICEFLOE_CONFIG``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ICEFLOE_")}
    env["ICEFLOE_CONFIG"] = str(config)
    return env


def run_cli(config: Path, *args: str, timeout: float = 300.0) -> CliRun:
    """Run ``icefloe --config CONFIG ARGS`` to completion; output captured."""
    started = time.monotonic()
    done = subprocess.run(
        icefloe_argv(config, *args),
        env=cli_env(config),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return CliRun(args, done.returncode, done.stdout, done.stderr, time.monotonic() - started)


def run_cli_parallel(
    config: Path, commands: Sequence[Sequence[str]], timeout: float = 300.0
) -> list[CliRun]:
    """Several ``icefloe`` commands at once (each its own process); results in order."""
    started = time.monotonic()
    procs = [
        subprocess.Popen(
            icefloe_argv(config, *args),
            env=cli_env(config),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for args in commands
    ]
    runs = []
    for args, proc in zip(commands, procs, strict=True):
        out, err = proc.communicate(timeout=timeout)
        runs.append(CliRun(tuple(args), proc.returncode, out, err, time.monotonic() - started))
    return runs


# ---- small tables ---------------------------------------------------------------------------

DAYS = ("2026-11-01", "2026-11-02", "2026-11-03")


def make_table(
    catalog: Any,
    ident: str,
    days: Sequence[str] = DAYS[:2],
    files_per_day: int = 4,
    rows_per_file: int = 40,
) -> Any:
    """A table ``(id long, day string, payload string)`` partitioned by ``day``: one
    PyIceberg append per file, each adding one small file (a few KB) to every day."""
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import LongType, NestedField, StringType

    schema = Schema(
        NestedField(1, "id", LongType(), required=False),
        NestedField(2, "day", StringType(), required=False),
        NestedField(3, "payload", StringType(), required=False),
    )
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "day"))
    table = catalog.create_table(ident, schema=schema, partition_spec=spec)
    for i in range(files_per_day):
        append_rows(table, days, start=i * rows_per_file * len(days), rows_per_day=rows_per_file)
    return catalog.load_table(ident)


def append_rows(table: Any, days: Sequence[str], start: int, rows_per_day: int) -> Any:
    """Append ``rows_per_day`` rows to each of ``days`` (ids from ``start``, distinct);
    the appended rows as a pyarrow table."""
    import hashlib

    import pyarrow as pa

    ids = list(range(start, start + rows_per_day * len(days)))
    rows = pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "day": pa.array([days[(i - start) // rows_per_day] for i in ids], pa.string()),
            # hex digests barely compress: file sizes add up as the planner expects
            "payload": pa.array(
                [None if i % 11 == 0 else hashlib.sha256(str(i).encode()).hexdigest() for i in ids],
                pa.string(),
            ),
        }
    )
    table.append(rows)
    return rows
