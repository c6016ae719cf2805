"""The local servers' ports: ``icefloe dev --free-ports`` picks ports no outgoing connection
can take while a service is down (issue 61 item 14: s3proxy restarted on its port found it
taken)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from icefloe.app.ops import servers

pytestmark = pytest.mark.unit


def test_a_free_port_is_below_the_ephemeral_range_and_free() -> None:
    picks = {servers.free_port() for _ in range(20)}
    assert all(servers.FREE_PORTS_FROM <= p < servers.ephemeral_start() for p in picks)
    assert len(picks) > 1  # at random, not the kernel's next one
    with socket.socket() as s:
        s.bind(("127.0.0.1", picks.pop()))


def test_a_taken_port_is_never_picked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        monkeypatch.setattr(servers, "FREE_PORTS_FROM", port)
        monkeypatch.setattr(servers, "EPHEMERAL_RANGE", tmp_path / "range")
        (tmp_path / "range").write_text(f"{port + 2}\t60999\n")  # room: port, port + 1
        assert all(servers.free_port() != port for _ in range(50))


def test_without_room_below_the_range_the_kernel_picks(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "range").write_text("1024\t65535\n")
    monkeypatch.setattr(servers, "EPHEMERAL_RANGE", tmp_path / "range")
    assert servers.ephemeral_start() == 1024
    assert servers.free_port() >= 1024
    monkeypatch.setattr(servers, "EPHEMERAL_RANGE", tmp_path / "missing")
    assert servers.ephemeral_start() == 32768
