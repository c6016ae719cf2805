"""The doctor's probes: where the warehouse probe writes, what it catches, Spark masters."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest
from pyiceberg.io.pyarrow import PyArrowFileIO

from icefloe.app.ops.probes import (
    PROBE_PREFIX,
    Master,
    ProbeError,
    location_scheme,
    parse_master,
    probe_location,
    probe_warehouse,
    tcp_connect,
    write_read_delete,
)

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("warehouse", "location"),
    [
        ("s3://warehouse/", "s3://warehouse/.icefloe-doctor-T"),
        ("s3://warehouse", "s3://warehouse/.icefloe-doctor-T"),
        ("s3a://lake/wh/", "s3a://lake/wh/.icefloe-doctor-T"),
        ("file:///x/warehouse", "file:///x/warehouse/.icefloe-doctor-T"),
        ("file:///x/warehouse/", "file:///x/warehouse/.icefloe-doctor-T"),
        ("file:///", "file:///.icefloe-doctor-T"),
        ("/abs/warehouse", "/abs/warehouse/.icefloe-doctor-T"),
    ],
)
def test_probe_location_joins_with_one_slash(warehouse: str, location: str) -> None:
    assert probe_location(warehouse, "T") == location


@pytest.mark.parametrize(
    ("location", "scheme"),
    [
        ("s3://warehouse/", "s3"),
        ("S3A://warehouse/x", "s3a"),
        ("file:///x/warehouse", "file"),
        ("file:/x/warehouse", "file"),
        ("/x/warehouse", "file"),
        ("gs://bucket/wh", "gs"),
        ("lake", None),  # a REST catalog's warehouse name, not a location
        ("my-warehouse", None),
        ("http://catalog/wh", None),
        ("relative/folder", None),
    ],
)
def test_location_scheme(location: str, scheme: str | None) -> None:
    assert location_scheme(location) == scheme


def test_probe_writes_reads_deletes_and_leaves_nothing(tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse"
    warehouse.mkdir()
    assert probe_warehouse({}, f"file://{warehouse}") == "PyArrowFileIO"
    assert list(warehouse.iterdir()) == []


def test_probe_under_a_file_fails_at_write(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("not a folder")
    with pytest.raises(ProbeError) as err:
        probe_warehouse({}, f"file://{tmp_path}/afile/warehouse")
    assert err.value.step == "write"
    assert str(err.value).startswith("write failed: ")
    assert (tmp_path / "afile").read_text() == "not a folder"


class Wrapped:
    """A local FileIO whose reads or deletes misbehave on purpose."""

    def __init__(self, *, corrupt: bool = False, keep: bool = False) -> None:
        self.io = PyArrowFileIO()
        self.corrupt, self.keep = corrupt, keep
        self.deletes = 0

    def new_output(self, location: str) -> Any:
        return self.io.new_output(location)

    def new_input(self, location: str) -> Any:
        if not self.corrupt:
            return self.io.new_input(location)
        outer = self

        class Corrupt:
            def open(self, seekable: bool = True) -> Any:
                return Stream(outer.io.new_input(location).open(seekable))

            def exists(self) -> bool:
                return outer.io.new_input(location).exists()

        return Corrupt()

    def delete(self, location: str) -> None:
        self.deletes += 1
        if not self.keep:
            self.io.delete(location)


class Stream:
    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.inner.close()

    def read(self) -> bytes:
        return bytes(self.inner.read())[:-1] + b"?"


def test_a_read_that_differs_fails_and_the_object_is_still_deleted(tmp_path: Path) -> None:
    io = Wrapped(corrupt=True)
    location = f"file://{tmp_path}/{PROBE_PREFIX}x"
    with pytest.raises(ProbeError) as err:
        write_read_delete(io, location, b"payload")  # type: ignore[arg-type]
    assert err.value.step == "read"
    assert "unlike the 7 written" in str(err.value)
    assert io.deletes == 1
    assert list(tmp_path.iterdir()) == []


def test_a_delete_that_keeps_the_object_fails_at_gone(tmp_path: Path) -> None:
    io = Wrapped(keep=True)
    location = f"file://{tmp_path}/{PROBE_PREFIX}x"
    with pytest.raises(ProbeError) as err:
        write_read_delete(io, location, b"payload")  # type: ignore[arg-type]
    assert err.value.step == "gone"
    assert "still there" in str(err.value)


@pytest.mark.parametrize(
    ("master", "parsed"),
    [
        ("local", Master("local")),
        ("local[*]", Master("local")),
        ("local[4]", Master("local")),
        ("local[2, 3]", Master("local")),
        ("local[*,2]", Master("local")),
        ("local-cluster[2,1,1024]", Master("local-cluster")),
        ("yarn", Master("yarn")),
        ("k8s://https://10.0.0.1:6443", Master("k8s")),
        ("spark://m1:7077", Master("standalone", (("m1", 7077),))),
        (
            "spark://m1:7077,10.0.0.2:7078",
            Master("standalone", (("m1", 7077), ("10.0.0.2", 7078))),
        ),
        ("spark://[::1]:7077", Master("standalone", (("::1", 7077),))),
        ("spark://m1", Master("invalid")),  # Spark needs the port
        ("spark://m1:0", Master("invalid")),
        ("spark://m1:70770", Master("invalid")),
        ("spark://", Master("invalid")),
        ("local[0]", Master("invalid")),
        ("locale", Master("invalid")),
        ("mesos://m:5050", Master("invalid")),  # gone in Spark 4
    ],
)
def test_parse_master(master: str, parsed: Master) -> None:
    assert parse_master(master) == parsed


def test_tcp_connect_to_a_listener_and_to_a_closed_port() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        assert tcp_connect("127.0.0.1", server.getsockname()[1]) is None
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]  # bound, not listening: refuses connections
        why = tcp_connect("127.0.0.1", closed)
    assert why is not None and why.startswith("ConnectionRefusedError")
