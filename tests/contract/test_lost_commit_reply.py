"""A committed rewrite whose reply is lost keeps its files (issue #28, item 2).

A proxy in front of Iceberg's REST catalog forwards a table commit (so it lands), drops
the reply, then refuses every connection for a while, as a catalog behind a failing load
balancer does. The committer cannot read the table, so the outcome is unknown: nothing may
delete the new files. Afterwards the table's current snapshot is the ``replace`` and every
row is readable — on the ad-hoc path (``optimize_table``) and the actor's.
"""

from __future__ import annotations

import http.client
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import pyarrow as pa
import pytest
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType

from icefloe.base.config import build_config

pytestmark = [pytest.mark.contract, pytest.mark.spark, pytest.mark.integration]

COMMIT = re.compile(r"^/v1/(.+/)?namespaces/[^/]+/tables/[^/]+$")
DOWN_SECONDS = 25.0


class LosingProxy:
    """A reverse proxy to ``upstream``; once ``armed``, the next table commit is forwarded,
    its reply dropped, and every connection refused for ``down`` seconds."""

    def __init__(self, upstream: str, down: float = DOWN_SECONDS) -> None:
        self.target = urlsplit(upstream)
        self.down = down
        self.armed = False
        self.down_until = 0.0
        self.lost: list[str] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                return None

            def _relay(self) -> None:
                if time.monotonic() < proxy.down_until:
                    self.close_connection = True
                    return  # no reply: the client sees the connection closed
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                upstream = http.client.HTTPConnection(
                    proxy.target.hostname, proxy.target.port, timeout=60
                )
                headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                upstream.request(self.command, self.path, body=body, headers=headers)
                reply = upstream.getresponse()
                data = reply.read()
                upstream.close()
                path = urlsplit(self.path).path
                if proxy.armed and self.command == "POST" and COMMIT.match(path):
                    proxy.armed = False
                    proxy.lost.append(path)
                    proxy.down_until = time.monotonic() + proxy.down
                    self.close_connection = True
                    return  # the commit landed; its reply is lost
                self.send_response(reply.status)
                for k, v in reply.getheaders():
                    if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_DELETE = do_HEAD = _relay

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def proxied(backend: Any, spark: Any) -> Any:
    """The REST backend's config through a :class:`LosingProxy` (a catalog of its own on
    the shared Spark session)."""
    from icefloe.base.catalog import load_catalog
    from icefloe.base.spark import register_catalog

    proxy = LosingProxy(backend.cfg.catalog.uri)
    port = proxy.server.server_address[1]  # a catalog Spark loaded keeps its first URI
    raw = {
        **backend.raw,
        "catalog": {**backend.raw["catalog"], "uri": proxy.url, "name": f"c_lossy_{port}"},
    }
    cfg = build_config(raw, source="<lost reply>", home=backend.home)
    register_catalog(spark, cfg)
    try:
        yield proxy, cfg, load_catalog(cfg), raw
    finally:
        proxy.close()


def _table(catalog: Any, name: str) -> Any:
    schema = Schema(
        NestedField(1, "id", LongType(), required=False),
        NestedField(2, "day", StringType(), required=False),
    )
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "day"))
    table = catalog.create_table(name, schema=schema, partition_spec=spec)
    for i in range(4):
        ids = range(i * 500, i * 500 + 500)
        table.append(
            pa.table(
                {
                    "id": pa.array(ids, pa.int64()),
                    "day": pa.array([f"d{n % 2}" for n in ids], pa.string()),
                }
            )
        )
    return table


def _assert_readable(backend: Any, name: str, rows: int) -> None:
    table = backend.catalog.load_table(name)
    assert table.current_snapshot().summary.operation.value == "replace"
    assert table.scan().to_arrow().num_rows == rows  # every data file is there


@pytest.mark.parametrize("backend", ["rest-s3"], indirect=True)
def test_optimize_keeps_the_files_of_a_commit_whose_reply_was_lost(
    backend: Any, spark: Any, proxied: Any
) -> None:
    from icefloe.base.errors import OperationFailed
    from icefloe.jobs.data.optimize import optimize_table
    from icefloe.jobs.rewrite.exact import Collaborators

    proxy, cfg, catalog, _ = proxied
    ns = backend.namespace()
    name = f"{ns}.events"
    _table(catalog, name)

    def arm(rewrite: Any, results: Any) -> None:
        proxy.armed = True

    with pytest.raises(OperationFailed, match="outcome is unknown") as failure:
        optimize_table(spark, cfg, name, collaborators=Collaborators(before_commit=arm))
    assert proxy.lost and "\n" not in str(failure.value)
    _assert_readable(backend, name, 2000)


@pytest.mark.redis
@pytest.mark.parametrize("backend", ["rest-s3"], indirect=True)
def test_an_actor_keeps_the_files_of_a_commit_whose_reply_was_lost(
    backend: Any, spark: Any, proxied: Any, redis_client: Any
) -> None:
    from icefloe.base.config import DeciderSettings
    from icefloe.service.actor.loop import run_actor
    from icefloe.service.decider.wiring import open_decider

    proxy, cfg, catalog, raw = proxied
    ns = backend.namespace()
    name = f"{ns}.events"
    _table(catalog, name)
    cfg = build_config({**raw, "managed": {"namespaces": [ns]}}, source="<lost>", home=backend.home)
    decider = open_decider(cfg, catalog, redis_client, settings=DeciderSettings())
    assert decider.step(block_ms=None, dispatch_all=True).dispatched == 2
    proxy.armed = True
    first = run_actor(cfg, max_actions=1, idle_exit=0, spark=spark)
    assert proxy.lost and first.failed == 2  # both days in one batch, one lost commit
    time.sleep(max(0.0, proxy.down_until - time.monotonic()))
    _assert_readable(backend, name, 2000)
