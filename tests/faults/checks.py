"""The assertions every fault test makes, in one place.

Stable names (other fault tests, ``test_kill_points.py`` among them, import these):

* :func:`output_problems` / :func:`assert_clean_output` — no Python traceback and no
  secret value in captured text (stdout, stderr, log records).
* :func:`assert_cli_error` — a failed ``icefloe`` run: the documented exit code and one
  ``icefloe: error: …`` line on stderr, nothing else, clean.
* :func:`jvm_chatter` — the lines of Spark's JVM logging (log4j start-up lines, a failed
  task's ``ERROR Executor`` and its Java stack trace) in an ``icefloe`` process's stderr.
* :func:`table_data_files` / :func:`referenced_files` / :func:`unreferenced_data_files` —
  every file under the table location's ``data/`` that no retained snapshot references
  (all snapshots' manifests, live entries; paths compared without ``file:``/``file://``;
  a Hadoop ``.NAME.crc`` checksum goes with its file ``NAME``).
* :class:`Contents` / :func:`table_contents` — the row count and an order-independent
  digest of every row (a sum of per-row hashes: a lost or duplicated row changes it, and
  two tables' contents add up, so "before plus a concurrent writer's rows" is
  ``before + Contents.of_arrow(appended)``).
* :func:`queue_places` — where each queue item is (pending, ready, in flight, dead): an
  item delivered "exactly once" is in exactly one place.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

TRACEBACK = "Traceback (most recent call last)"
ERROR_PREFIX = "icefloe: error: "
JVM_CHATTER = re.compile(r"NativeCodeLoader|log4j|Executor|TaskSetManager|at org\.apache")
INCUBATOR_WARNING = "WARNING: Using incubator modules: "
"""The one line the driver JVM still prints: the JDK's own, for the module Spark's launcher
adds; no JVM or log4j option turns it off (base/spark.py)."""
DIGEST_MOD = 1 << 128


# ---- captured output ------------------------------------------------------------------------


def output_problems(text: str, secrets: Iterable[str]) -> list[str]:
    """What is wrong with ``text``: ``"traceback"`` once per Python traceback, and
    ``"secret <n>"`` for every secret (by position, never its value) found in it."""
    problems = ["traceback"] * text.count(TRACEBACK)
    problems += [f"secret {i}" for i, s in enumerate(secrets) if s and s in text]
    return problems


def assert_clean_output(text: str, secrets: Iterable[str]) -> None:
    """No "Traceback (most recent call last)" and no secret value anywhere in ``text``."""
    secrets = list(secrets)
    problems = output_problems(text, secrets)
    if problems:
        shown = text
        for s in secrets:
            if s:
                shown = shown.replace(s, "<SECRET>")
        raise AssertionError(f"unclean output ({', '.join(problems)}):\n{shown[-4000:]}")


def assert_cli_error(run: Any, exit_code: int, secrets: Iterable[str], match: str = "") -> str:
    """``run`` (a :class:`tests.faults.harness.CliRun`) failed with ``exit_code`` and said so
    in exactly one stderr line, ``icefloe: error: …`` (containing ``match``), with nothing on
    stdout; returns that line."""
    assert_clean_output(run.output, secrets)
    lines = run.error_lines()
    assert run.returncode == exit_code, (
        f"icefloe {' '.join(run.args)}: exit {run.returncode}, expected {exit_code}\n"
        f"{run.output[-3000:]}"
    )
    assert len(lines) == 1 and lines[0].startswith(ERROR_PREFIX), (
        f"icefloe {' '.join(run.args)}: expected one error line, got:\n{run.stderr[-3000:]}"
    )
    assert not run.stdout.strip(), f"unexpected stdout: {run.stdout[-2000:]}"
    assert match in lines[0], f"{match!r} not in {lines[0]!r}"
    return str(lines[0])


def jvm_chatter(stderr: str) -> list[str]:
    """The lines of ``stderr`` that Spark's JVM logged (an ``icefloe`` process's own Spark
    logs to a file, :data:`icefloe.base.spark.LOG4J2_CONF`); icefloe's error line aside."""
    lines = (line for line in stderr.splitlines() if not line.startswith(ERROR_PREFIX))
    return [line for line in lines if JVM_CHATTER.search(line)]


# ---- files ----------------------------------------------------------------------------------


def normalize_path(path: str) -> str:
    """``file:///a/b``, ``file:/a/b`` and ``/a/b`` are one file."""
    if path.startswith("file://"):
        path = path[len("file://") :]
    elif path.startswith("file:"):
        path = path[len("file:") :]
    return os.path.normpath(path)


def table_data_files(table: Any) -> set[str]:
    """Every file under ``<table location>/data/`` on the local disk (normalized paths)."""
    root = os.path.join(normalize_path(table.metadata.location), "data")
    found = set()
    for folder, _, names in os.walk(root):
        found.update(os.path.normpath(os.path.join(folder, n)) for n in names)
    return found


def referenced_files(table: Any) -> set[str]:
    """Data and delete files that any retained snapshot references (live manifest entries
    of every snapshot's manifests), normalized."""
    io = table.io
    seen_manifests: set[str] = set()
    paths: set[str] = set()
    for snapshot in table.metadata.snapshots:
        for manifest in snapshot.manifests(io):
            if manifest.manifest_path in seen_manifests:
                continue
            seen_manifests.add(manifest.manifest_path)
            for entry in manifest.fetch_manifest_entry(io, discard_deleted=True):
                paths.add(normalize_path(entry.data_file.file_path))
    return paths


def checksum_of(path: str) -> str | None:
    """The file a Hadoop local-filesystem checksum (``.NAME.crc``, written beside each file
    Spark writes to ``file://``) belongs to, or None for any other file."""
    folder, name = os.path.split(path)
    if name.startswith(".") and name.endswith(".crc"):
        return os.path.join(folder, name[1 : -len(".crc")])
    return None


def unreferenced_data_files(table: Any) -> list[str]:
    """Files under the table's ``data/`` that no retained snapshot references (orphans),
    sorted. A ``.NAME.crc`` checksum counts as part of ``NAME`` (Hadoop's file system hides
    it, and deletes it with its file): it is an orphan only if ``NAME`` is unreferenced.
    Reload the table first: this reads the metadata the object holds."""
    referenced = referenced_files(table)
    return sorted(
        path
        for path in table_data_files(table)
        if path not in referenced and checksum_of(path) not in referenced
    )


def missing_data_files(table: Any) -> list[str]:
    """Files the current snapshot references that are not on disk, sorted."""
    on_disk = table_data_files(table)
    snap = table.current_snapshot()
    if snap is None:
        return []
    live = {
        normalize_path(e.data_file.file_path)
        for m in snap.manifests(table.io)
        for e in m.fetch_manifest_entry(table.io, discard_deleted=True)
    }
    return sorted(live - on_disk)


# ---- rows -----------------------------------------------------------------------------------


def _row_hash(row: dict[str, Any]) -> int:
    text = repr(sorted(row.items())).encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=16).digest(), "big")


@dataclass(frozen=True)
class Contents:
    """Row count and order-independent digest (sum of 128-bit row hashes) of a table."""

    rows: int
    digest: int

    @classmethod
    def of_rows(cls, rows: Iterable[dict[str, Any]]) -> Contents:
        n, total = 0, 0
        for row in rows:
            n += 1
            total = (total + _row_hash(row)) % DIGEST_MOD
        return cls(n, total)

    @classmethod
    def of_arrow(cls, arrow_table: Any) -> Contents:
        return cls.of_rows(arrow_table.to_pylist())

    def __add__(self, other: Contents) -> Contents:
        return Contents(self.rows + other.rows, (self.digest + other.digest) % DIGEST_MOD)

    def __str__(self) -> str:
        return f"{self.rows} rows, digest {self.digest:032x}"


def table_contents(table: Any) -> Contents:
    """The current snapshot's rows (a PyIceberg scan, deletes applied) as :class:`Contents`."""
    return Contents.of_arrow(table.scan().to_arrow())


def queue_places(client: Any, keys: Any) -> dict[str, list[str]]:
    """Item id → every set of the queue that holds it (an item is in exactly one)."""
    places: dict[str, list[str]] = {}
    sets = {"ready": keys.ready, "inflight": keys.inflight, "dead": keys.dead}
    for table in client.zrange(keys.tables, 0, -1):
        sets[f"pending {table.decode()}"] = keys.pending(table.decode())
    for where, key in sets.items():
        for raw in client.zrange(key, 0, -1):
            places.setdefault(raw.decode(), []).append(where)
    return places


def current_snapshot_id(table: Any) -> int | None:
    snap = table.current_snapshot()
    return None if snap is None else int(snap.snapshot_id)


def operations(table: Any) -> list[str]:
    """The operation of every snapshot, oldest first (``append``, ``replace``, …)."""
    return [str(s.summary.operation.value) for s in table.metadata.snapshots if s.summary]
