"""The dashboard's pure parts: the file-size histogram, the loopback rule, the one-line
refusal off loopback without a token, the assets shipped as package data, and the
server's ``Host`` check and security headers on a real loopback socket (the browser test
is ``tests/integration/test_ui_browser.py``)."""

from __future__ import annotations

import configparser
import fnmatch
import http.client
import socket
import struct
from pathlib import Path
from typing import Any

import pytest

from icefloe.app.web.data import histogram
from icefloe.app.web.server import (
    ASSETS,
    STATIC,
    host_name,
    is_loopback,
    make_server,
    serve_in_thread,
)
from icefloe.base.errors import UsageError
from tests.support.config import REPO, make_config

pytestmark = pytest.mark.unit


def test_histogram_counts_tenths_of_the_target_then_the_files_at_or_above_it() -> None:
    bins = histogram([0, 9, 10, 55, 99, 100, 250], 100)
    assert [b["files"] for b in bins] == [2, 1, 0, 0, 0, 1, 0, 0, 0, 1, 2]
    assert (bins[0]["lo"], bins[0]["hi"], bins[-1]["lo"], bins[-1]["hi"]) == (0, 10, 100, None)
    assert sum(b["files"] for b in histogram([], 100)) == 0


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.0.0.2", True),
        ("::1", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("::", False),
        ("10.1.2.3", False),
        ("example.com", False),
    ],
)
def test_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_off_loopback_without_a_token_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"--host 0\.0\.0\.0 .*--token"):
        make_server(make_config(tmp_path), "0.0.0.0", 0, None)
    with pytest.raises(UsageError):
        make_server(make_config(tmp_path), "0.0.0.0", 0, "")


def test_every_asset_ships_as_package_data() -> None:
    cfg = configparser.ConfigParser()
    cfg.read(REPO / "setup.cfg")
    globs = [g.strip() for g in cfg["options.package_data"]["icefloe.app"].split(",")]
    root = REPO / "app"
    shipped = sorted(STATIC.iterdir())
    assert {p.name for p in shipped} == set(ASSETS.values())
    for path in shipped:
        rel = str(path.relative_to(root))
        assert any(fnmatch.fnmatch(rel, g) for g in globs), rel


def test_an_unchanged_table_s_summary_is_read_once_a_minute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The table page reads the selected table's summary again only when its metadata
    changed, or when the kept summary is ``SUMMARY_MAX_AGE_S`` old, not on every poll."""
    import pyarrow as pa

    from icefloe.app.web import data
    from icefloe.base.catalog import load_catalog

    cfg = make_config(tmp_path)
    catalog = load_catalog(cfg)
    catalog.create_namespace("db")
    rows = pa.table({"day": pa.array([1, 1, 2], pa.int32()), "v": ["a", "b", "c"]})
    table = catalog.create_table("db.t", schema=rows.schema)
    table.append(rows)
    reads: list[str] = []
    real = data.table_summary
    monkeypatch.setattr(data, "table_summary", lambda *a: reads.append(a[2]) or real(*a))
    clock = [1000.0]
    board = data.Dashboard(cfg, now=lambda: clock[0])

    def files() -> int:
        return int(board._summary("db.t").summary["files"])

    assert files() == 1 and reads == ["db.t"]
    assert files() == 1 and reads == ["db.t"]  # unchanged: kept
    assert board._summary("db.t", with_sizes=True).sizes == [
        table.inspect.files()["file_size_in_bytes"][0].as_py()
    ]
    table.append(rows)  # a new metadata version: read at once
    assert files() == 2 and len(reads) == 2
    clock[0] += data.SUMMARY_MAX_AGE_S  # unchanged, but its score ages: read again
    files()
    assert len(reads) == 3


def test_skew_reports_are_read_again_only_when_one_was_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from icefloe.app.web import data
    from icefloe.base.catalog import load_catalog
    from icefloe.jobs.skew.detect import reports_version, save_report

    cfg = make_config(tmp_path)
    catalog = load_catalog(cfg)
    reads: list[int] = []
    real = data.stored_reports
    monkeypatch.setattr(data, "stored_reports", lambda *a: reads.append(1) or real(*a))
    board = data.Dashboard(cfg)
    assert reports_version(catalog) is None and board.skew() == [] and len(reads) == 1
    report = {"table": "db.t", "snapshot_id": 7, "rows": 10}
    save_report(catalog, report, "all", "icefloe")
    first = reports_version(catalog)
    assert first is not None and [r["table"] for r in board.skew()] == ["db.t"]
    assert board.skew() == board.skew() and len(reads) == 2  # nothing stored since: kept
    save_report(catalog, report | {"snapshot_id": 8}, "all", "icefloe")
    assert reports_version(catalog) != first
    assert [r["snapshot_id"] for r in board.skew()] == ["8"] and len(reads) == 3


@pytest.mark.parametrize(
    ("header", "name"),
    [("127.0.0.1:8765", "127.0.0.1"), ("[::1]:8765", "::1"), ("LocalHost", "localhost")]
    + [("evil.example:8765", "evil.example"), ("::1", "::1"), ("", "")],
)
def test_host_name_drops_the_port(header: str, name: str) -> None:
    assert host_name(header) == name


def _get(server: Any, path: str, host: str, token: str = "") -> tuple[int, dict[str, str]]:
    port = server.server_address[1]
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.putrequest("GET", path, skip_host=True)
        if host:
            conn.putheader("Host", host)
        if token:
            conn.putheader("Authorization", f"Bearer {token}")
        conn.endheaders()
        reply = conn.getresponse()
        reply.read()
        return reply.status, {k.lower(): v for k, v in reply.getheaders()}
    finally:
        conn.close()


def test_a_rebound_host_name_is_refused_and_every_answer_carries_the_headers(
    tmp_path: Path,
) -> None:
    """DNS rebinding: a page that rebinds its own name to 127.0.0.1 sends that name as the
    ``Host``; a token-less (loopback) dashboard answers only loopback names."""
    server = make_server(make_config(tmp_path), "127.0.0.1", 0, None)
    serve_in_thread(server)
    port = server.server_address[1]
    try:
        for evil in (f"evil.example:{port}", "evil.example", "127.0.0.1.nip.io", ""):
            status, headers = _get(server, "/api/overview", evil)
            assert status == 421, evil
            assert headers["x-content-type-options"] == "nosniff"
        for good in (f"127.0.0.1:{port}", f"localhost:{port}", "[::1]", "localhost"):
            status, headers = _get(server, "/", good)
            assert status == 200, good
            assert headers["x-frame-options"] == "DENY"
            assert "frame-ancestors 'none'" in headers["content-security-policy"]
            assert "script-src 'self'" in headers["content-security-policy"]
    finally:
        server.shutdown()
        server.server_close()
    guarded = make_server(make_config(tmp_path), "127.0.0.1", 0, "t" * 20)
    serve_in_thread(guarded)
    try:  # with a token, the token is the guard: any name, but never without it
        assert _get(guarded, "/", "dashboard.example")[0] == 401
        assert _get(guarded, "/", "dashboard.example", "t" * 20)[0] == 200
    finally:
        guarded.shutdown()
        guarded.server_close()


def test_a_get_body_is_refused_and_a_client_that_leaves_costs_no_traceback(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    server = make_server(make_config(tmp_path), "127.0.0.1", 0, None)
    serve_in_thread(server)
    port = server.server_address[1]
    try:
        smuggled = b"GET /api/nothing HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(
                b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: "
                + str(len(smuggled)).encode()
                + b"\r\n\r\n"
                + smuggled
            )
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
        assert answer.startswith(b"HTTP/1.1 400") and answer.count(b"HTTP/1.1 ") == 1
        for _ in range(20):  # ask for the page and leave before the answer
            with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                sock.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert _get(server, "/", "127.0.0.1")[0] == 200  # still serving
    finally:
        server.shutdown()
        server.server_close()
    err = capfd.readouterr().err
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
