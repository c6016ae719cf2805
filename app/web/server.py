"""``icefloe ui``'s server: the page and its assets (``static/``, shipped with the package:
no CDN, it works air-gapped) and a JSON API the page polls, on the standard library's
``ThreadingHTTPServer``.

It binds 127.0.0.1 by default. On any other address a token is required: every request
then carries ``Authorization: Bearer <token>`` or ``?token=<token>`` (the page keeps the
one in its own URL), else 401.

Without a token (a loopback address), a request must name a loopback host in its ``Host``
header (``localhost``, ``127.0.0.1``, ``[::1]``, with any port), else 421: a web page the
operator visits cannot rebind its own name to 127.0.0.1 and read the API (DNS rebinding).
Every answer carries ``X-Content-Type-Options: nosniff``, ``X-Frame-Options: DENY`` and a
``Content-Security-Policy`` that allows the page's own script, style and API only. A GET
with a body is refused (its body would otherwise be read as the next request on the
connection), and a client that leaves before its answer is written is let go quietly.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import mimetypes
import sys
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from icefloe.app.web.data import PAGE_ROWS, Dashboard
from icefloe.base.config import Config, parse_table_identifier
from icefloe.base.errors import (
    IcefloeError,
    OperationFailed,
    TableNotFound,
    UsageError,
    describe,
)
from icefloe.base.redact import scrub

MAX_PAGE_ROWS = 500  # rows a tables page may ask for

STATIC = Path(__file__).resolve().parent / "static"
SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
}
ASSETS = {"/": "index.html", "/app.js": "app.js", "/style.css": "style.css"}


def host_name(header: str) -> str:
    """The host of a ``Host`` header, without its port (``[::1]:8765`` -> ``::1``)."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:].split("]", 1)[0]
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class UiServer(ThreadingHTTPServer):
    """The HTTP server with what its handlers need: the dashboard and the token."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], dashboard: Dashboard, token: str | None):
        self.dashboard = dashboard
        self.token = token
        super().__init__(address, Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that left mid-request (reset, broken pipe) is let go quietly; any other
        error is reported as the standard library does."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}/"

    def routes(self) -> dict[str, Callable[[dict[str, list[str]]], Any]]:
        d = self.dashboard
        return {
            "/api/overview": lambda q: d.overview(),
            "/api/tables": lambda q: d.tables(*_page(q)),
            "/api/table": lambda q: d.table(_table_name(q)),
            "/api/history": lambda q: d.history(),
            "/api/skew": lambda q: d.skew(),
        }


def _page(query: dict[str, list[str]]) -> tuple[str, int, int]:
    """``q`` (a name filter), ``offset`` and ``limit`` (1 to 500) of a tables page."""
    q = (query.get("q") or [""])[0]
    try:
        offset = int((query.get("offset") or ["0"])[0])
        limit = int((query.get("limit") or [str(PAGE_ROWS)])[0])
    except ValueError:
        raise UsageError("offset and limit must be whole numbers") from None
    if offset < 0 or not 1 <= limit <= MAX_PAGE_ROWS or len(q) > 200:
        raise UsageError(f"offset >= 0, limit 1..{MAX_PAGE_ROWS}, q at most 200 characters")
    return q, offset, limit


def _table_name(query: dict[str, list[str]]) -> str:
    name = (query.get("name") or [""])[0]
    parse_table_identifier(name, "name")
    return name


def make_server(cfg: Config, host: str, port: int, token: str | None) -> UiServer:
    """The server bound to ``host:port`` (not yet serving); a non-loopback ``host``
    without a token is a :class:`UsageError`, an address it cannot bind
    :class:`OperationFailed`."""
    if not is_loopback(host) and not token:
        raise UsageError(
            f"--host {host} is not a loopback address: give a token (--token-file, or "
            "ICEFLOE_UI_TOKEN)"
        )
    try:
        return UiServer((host, port), Dashboard(cfg), token or None)
    except OSError as e:  # the port taken, an address this machine does not have
        raise OperationFailed(f"cannot serve on {host}:{port}: {e.strerror or e}") from e


def serve_in_thread(server: UiServer) -> threading.Thread:
    """``server`` serving on a daemon thread (tests, the screenshot script)."""
    thread = threading.Thread(target=server.serve_forever, name="icefloe-ui", daemon=True)
    thread.start()
    return thread


class Handler(BaseHTTPRequestHandler):
    server: UiServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
        pass  # quiet: the page polls every 2 s

    def do_GET(self) -> None:  # noqa: N802 - the base class's name
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        if self.headers.get("Content-Length", "0").strip() not in ("", "0") or self.headers.get(
            "Transfer-Encoding"
        ):  # its body would be read as the next request on this connection
            self.close_connection = True
            self._send(400, "application/json", b'{"error": "a GET carries no body"}')
            return
        if self.server.token is None and not is_loopback(host_name(self.headers.get("Host", ""))):
            self._send(421, "application/json", b'{"error": "not a loopback host name"}')
            return
        if not self._authorized(query):
            self._send(401, "application/json", b'{"error": "a token is required"}')
            return
        if url.path in ASSETS:
            body = (STATIC / ASSETS[url.path]).read_bytes()
            kind = mimetypes.guess_type(ASSETS[url.path])[0] or "application/octet-stream"
            self._send(200, kind, body)
            return
        route = self.server.routes().get(url.path)
        if route is None:
            self._send(404, "application/json", b'{"error": "not found"}')
            return
        try:
            status, payload = 200, route(query)
        except (UsageError, TableNotFound) as e:
            status, payload = 400 if isinstance(e, UsageError) else 404, {"error": scrub(str(e))}
        except IcefloeError as e:
            status, payload = 503, {"error": scrub(str(e))}
        except Exception as e:  # a library's error: one line, as the CLI shows it
            status, payload = 500, {"error": describe(e)}
        body = json.dumps(payload, default=str).encode()
        self._send(status, "application/json", body)

    def _authorized(self, query: dict[str, list[str]]) -> bool:
        token = self.server.token
        if token is None:
            return True
        header = self.headers.get("Authorization", "")
        given = header[7:] if header.startswith("Bearer ") else (query.get("token") or [""])[0]
        return hmac.compare_digest(given.encode(), token.encode())

    def _send(self, status: int, kind: str, body: bytes) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", kind + ("; charset=utf-8" if "json" in kind else ""))
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            if self.close_connection:
                self.send_header("Connection", "close")
            for name, value in SECURITY_HEADERS.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):  # the client left: nothing to say
            self.close_connection = True
