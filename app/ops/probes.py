"""The mechanics behind ``icefloe doctor``'s backend checks, with no report wording.

* the warehouse probe: write a small object under the warehouse through PyIceberg's FileIO
  (the same properties PyIceberg's catalog gets), read it back, delete it, check it is gone;
* the Spark master: which kind of master ``spark.master`` names, and for a standalone
  master, a TCP connect to each of its ``host:port`` endpoints.

:mod:`icefloe.app.ops.doctor` turns the results into checks with a fix each.
"""

from __future__ import annotations

import re
import socket
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from pyiceberg.io import FileIO

PROBE_PREFIX = ".icefloe-doctor-"
CONNECT_TIMEOUT = 2.0  # seconds, per Spark master endpoint
S3_SCHEMES = frozenset({"s3", "s3a", "s3n"})

_LOCAL = re.compile(r"local(\[\s*(\*|[1-9]\d*)\s*(,\s*[1-9]\d*\s*)?\])?")
_LOCAL_CLUSTER = re.compile(r"local-cluster\[\s*\d+\s*,\s*\d+\s*,\s*\d+\s*\]")
_ENDPOINT = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[^\[\]:/\s]+):(\d{1,5})")


# --- the warehouse ----------------------------------------------------------------------------


def probe_location(warehouse: str, token: str) -> str:
    """``<warehouse>/.icefloe-doctor-<token>``: one slash between, whether or not the
    warehouse ends with one (``s3://warehouse/``, ``file:///x/warehouse``, ``file:///``)."""
    name = PROBE_PREFIX + token
    return warehouse + name if warehouse.endswith("/") else f"{warehouse}/{name}"


def location_scheme(location: str) -> str | None:
    """The scheme PyIceberg's FileIO would write ``location`` with (``file`` for an absolute
    local path), or None when it has none PyIceberg knows: a REST catalog's warehouse may
    be a name (``lake``), which PyArrow would quietly take for a folder under the cwd."""
    # pyiceberg: only when a catalog, table or file is used
    from pyiceberg.io import SCHEMA_TO_FILE_IO

    if location.startswith("/"):
        return "file"
    try:
        scheme = urlsplit(location).scheme.lower()
    except ValueError:
        return None
    return scheme if scheme in SCHEMA_TO_FILE_IO else None


class ProbeError(Exception):
    """One step of the warehouse probe failed; ``step`` is write, read, delete or gone."""

    def __init__(self, step: str, message: str) -> None:
        super().__init__(f"{step} failed: {message}")
        self.step = step


def error_line(e: BaseException) -> str:
    """``Type: first line of the message`` (at most 300 characters of it)."""
    text = str(e).strip()
    line = text.splitlines()[0][:300] if text else ""
    return f"{type(e).__name__}: {line}" if line else type(e).__name__


def write_read_delete(io: FileIO, location: str, payload: bytes) -> None:
    """Write ``payload`` to ``location``, read it back and compare, delete it and check it
    is gone. Raises :class:`ProbeError` naming the step; never leaves the object behind
    when it can delete it."""
    step, written = "write", False
    try:
        with io.new_output(location).create(overwrite=False) as out:
            written = True
            out.write(payload)
        step = "read"
        with io.new_input(location).open(seekable=False) as stream:
            got = stream.read()
        if got != payload:
            raise ProbeError(step, f"read back {len(got)} bytes unlike the {len(payload)} written")
        step = "delete"
        io.delete(location)
        written = False
        step = "gone"
        if io.new_input(location).exists():
            raise ProbeError(step, "the object is still there after its delete")
    except ProbeError:
        raise
    except Exception as e:  # FileIO errors vary by backend (OSError, botocore, fsspec...)
        raise ProbeError(step, error_line(e)) from e
    finally:
        if written:
            _delete_quietly(io, location)


def _delete_quietly(io: FileIO, location: str) -> None:
    try:
        io.delete(location)
    except Exception:  # the probe failed already; its error is the one to report
        pass


def probe_warehouse(properties: Mapping[str, str], warehouse: str) -> str:
    """Run the probe on ``warehouse`` through ``load_file_io(properties, warehouse)``;
    returns the FileIO's class name. Raises :class:`ProbeError` (step ``open`` when no
    FileIO loads)."""
    # pyiceberg: only when a catalog, table or file is used
    from pyiceberg.io import load_file_io

    token = uuid.uuid4().hex
    try:
        io = load_file_io(dict(properties), warehouse)
    except Exception as e:
        raise ProbeError("open", error_line(e)) from e
    payload = f"icefloe doctor probe {token}\n".encode()
    write_read_delete(io, probe_location(warehouse, token), payload)
    return type(io).__name__


# --- the Spark master -------------------------------------------------------------------------


@dataclass(frozen=True)
class Master:
    """What ``spark.master`` names. ``kind``: local, local-cluster, standalone, yarn, k8s
    or invalid; ``endpoints``: a standalone master's ``(host, port)`` pairs."""

    kind: str
    endpoints: tuple[tuple[str, int], ...] = ()


def parse_master(master: str) -> Master:
    """Classify a Spark master URL (``spark://h1:7077,h2:7077`` lists HA masters)."""
    text = master.strip()
    if _LOCAL.fullmatch(text):
        return Master("local")
    if _LOCAL_CLUSTER.fullmatch(text):
        return Master("local-cluster")
    if text == "yarn":
        return Master("yarn")
    if text.startswith("k8s://"):
        return Master("k8s")
    if not text.startswith("spark://"):
        return Master("invalid")
    endpoints = []
    for part in text[len("spark://") :].split(","):
        m = _ENDPOINT.fullmatch(part.strip())
        if m is None or not 0 < int(m.group(2)) < 65536:
            return Master("invalid")
        endpoints.append((m.group(1).strip("[]"), int(m.group(2))))
    return Master("standalone", tuple(endpoints))


def tcp_connect(host: str, port: int, timeout: float = CONNECT_TIMEOUT) -> str | None:
    """None when ``host:port`` accepts a TCP connection within ``timeout``, else why not."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except OSError as e:
        return error_line(e)
