"""The warehouse of ``many_tables_bench.py``: N small tables built fast, and a counter of
the catalog requests each call makes.

One real table (``tmpl.template``: 2 identity partitions, 3 appends of one small file a
partition: 6 files, 3 snapshots) is written with PyIceberg; every other table is a copy of
its metadata JSON (its own ``location`` and ``table-uuid``; the data files, manifests and
manifest lists are shared) registered in the catalog: on the embedded catalog by one bulk
insert into ``iceberg_tables`` (the rows ``SqlCatalog.register_table`` would write), on the
REST catalog by ``register_table`` (one request a table; the copies uploaded in parallel).
Every table loads, plans and appends like any other.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyarrow as pa

NAMESPACE = "db"  # the managed namespace
TEMPLATE = "tmpl.template"  # the one table written for real (not managed)
ROWS = pa.table(
    {
        "id": pa.array(range(20), pa.int64()),
        "day": pa.array([i % 2 for i in range(20)], pa.int32()),
        "v": pa.array([f"row-{i}" for i in range(20)], pa.string()),
    }
)


def table_name(i: int) -> str:
    return f"{NAMESPACE}.t{i:05d}"


# ---- counting ----------------------------------------------------------------------------


@dataclass
class Requests:
    """What the catalog was asked in one measured call: ``sql`` statements (the embedded
    catalog's round trips), ``http`` requests (a REST catalog's), PyIceberg ``calls`` by
    method (``load_table`` is a table's metadata read)."""

    sql: int = 0
    http: int = 0
    http_by: Counter[str] = field(default_factory=Counter)  # "GET table 200", "GET table 304"
    calls: Counter[str] = field(default_factory=Counter)
    loaded: Counter[str] = field(default_factory=Counter)  # load_table's identifiers

    @property
    def round_trips(self) -> int:
        return self.sql + self.http

    @property
    def loads(self) -> int:
        """Tables whose metadata was read: ``load_table`` calls (SQL), GETs of a table
        answered 200 (REST: a conditional load answered 304 is not one)."""
        return self.http_by["GET table 200"] if self.http else self.calls["load_table"]

    def as_dict(self) -> dict[str, Any]:
        out = {"round_trips": self.round_trips, "loads": self.loads, "calls": dict(self.calls)}
        return out | ({"http": dict(self.http_by)} if self.http else {})


class Counting:
    """Counts, in this process, every SQL statement any SQLAlchemy engine runs, every HTTP
    request a ``requests`` session sends, and every call of the PyIceberg catalog methods
    below (class-level wrappers: catalogs opened later are counted too)."""

    METHODS = ("load_table", "list_tables", "table_exists", "list_namespaces", "register_table")

    def __init__(self) -> None:
        self.now = Requests()
        self._lock = threading.Lock()
        self._installed = False

    def install(self) -> None:
        if self._installed:
            return
        import requests
        from pyiceberg.catalog.rest import RestCatalog
        from pyiceberg.catalog.sql import SqlCatalog
        from sqlalchemy import event
        from sqlalchemy.engine import Engine

        def on_sql(*_: Any) -> None:
            with self._lock:
                self.now.sql += 1

        event.listen(Engine, "before_cursor_execute", on_sql)
        send = requests.Session.send

        def counted_send(session: Any, request: Any, **kw: Any) -> Any:
            response = send(session, request, **kw)
            path = request.path_url.split("?")[0].split("/")
            kind = "table" if len(path) > 2 and path[-2] == "tables" else path[-1]
            with self._lock:
                self.now.http += 1
                self.now.http_by[f"{request.method} {kind} {response.status_code}"] += 1
                if kind == "table" and request.method == "GET" and response.status_code == 200:
                    self.now.loaded[f"{unquote(path[-3])}.{unquote(path[-1])}"] += 1
            return response

        requests.Session.send = counted_send  # type: ignore[method-assign,assignment]
        for cls in (SqlCatalog, RestCatalog):
            for method in self.METHODS:
                if method in vars(cls):
                    setattr(cls, method, self._wrapped(getattr(cls, method), method))
        self._installed = True

    def _wrapped(self, fn: Callable[..., Any], method: str) -> Callable[..., Any]:
        def call(*args: Any, **kw: Any) -> Any:
            with self._lock:
                self.now.calls[method] += 1
                if method == "load_table" and len(args) > 1:
                    ident = args[1]
                    self.now.loaded[ident if isinstance(ident, str) else ".".join(ident)] += 1
            return fn(*args, **kw)

        return call

    @contextmanager
    def counting(self) -> Iterator[Requests]:
        """The requests made inside the block."""
        self.now = counted = Requests()
        try:
            yield counted
        finally:
            self.now = Requests()  # what follows the block is not its


COUNTER = Counting()


# ---- the template and its copies ---------------------------------------------------------


def write_template(catalog: Any) -> Any:
    """``tmpl.template``: 2 partitions (``day`` 0, 1), 3 appends of one file each."""
    catalog.create_namespace("tmpl")
    table = catalog.create_table(TEMPLATE, schema=ROWS.schema)
    with table.update_spec() as spec:
        spec.add_identity("day")
    for _ in range(3):
        table.append(ROWS)
    return catalog.load_table(TEMPLATE)


def copies(template: Any, warehouse: str, n: int) -> Iterator[tuple[str, str, str]]:
    """(table name, metadata location, metadata JSON) of each of the ``n`` copies: the
    template's metadata with its own location (``warehouse/db/tNNNNN``) and uuid."""
    io = template.io
    with io.new_input(template.metadata_location).open() as f:
        meta = json.loads(f.read())
    version = Path(template.metadata_location).name.split("-", 1)[0]
    base = warehouse.rstrip("/")
    for i in range(n):
        name = table_name(i)
        location = f"{base}/{NAMESPACE}/{name.split('.')[1]}"
        meta["location"], meta["table-uuid"] = location, str(uuid.uuid4())
        where = f"{location}/metadata/{version}-{uuid.uuid4()}.metadata.json"
        yield name, where, json.dumps(meta)


def build_embedded(catalog: Any, warehouse: str, n: int) -> float:
    """``n`` tables in ``db`` of an embedded (SQLite) catalog; seconds taken. The copies'
    files are written to the local warehouse, their rows inserted in one transaction."""
    from pyiceberg.catalog.sql import IcebergTables
    from sqlalchemy import insert
    from sqlalchemy.orm import Session

    start = time.perf_counter()
    template = write_template(catalog)
    catalog.create_namespace(NAMESPACE)
    rows = []
    for name, where, text in copies(template, warehouse, n):
        path = Path(where.removeprefix("file://"))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        rows.append(catalog._create_table_row(NAMESPACE, name.split(".")[1], where))
    with Session(catalog.engine) as session:
        session.execute(insert(IcebergTables), rows)
        session.commit()
    return time.perf_counter() - start


def build_rest(catalog: Any, warehouse: str, n: int, threads: int = 8) -> float:
    """``n`` tables in ``db`` of a REST catalog: the copies uploaded to its object store,
    then registered (``register_table``), ``threads`` at a time; seconds taken."""
    start = time.perf_counter()
    template = write_template(catalog)
    catalog.create_namespace(NAMESPACE)
    io = template.io

    def one(item: tuple[str, str, str]) -> None:
        name, where, text = item
        with io.new_output(where).create(overwrite=True) as f:
            f.write(text.encode())
        catalog.register_table(name, where)

    with ThreadPoolExecutor(threads) as pool:
        for _ in pool.map(one, copies(template, warehouse, n)):
            pass
    return time.perf_counter() - start


def build_rest_direct(catalog: Any, warehouse: str, n: int, rest_dir: Path) -> float:
    """``n`` tables in ``db`` of the rest-s3 profile's catalog, without a request a table:
    the template through the REST API, then each copy written straight into s3proxy's
    filesystem store (``rest_dir/s3/<bucket>/<key>``: its objects are plain files) and its
    row inserted, in one transaction, into the REST server's own SQLite catalog
    (``rest_dir/rest-catalog.db``, the row its JdbcCatalog's ``registerTable`` writes);
    seconds taken. The server reads both on each request (no cache)."""
    import sqlite3

    start = time.perf_counter()
    template = write_template(catalog)
    catalog.create_namespace(NAMESPACE)
    db = sqlite3.connect(rest_dir / "rest-catalog.db", timeout=60)
    try:
        cols = {r[1] for r in db.execute("PRAGMA table_info(iceberg_tables)")}
        found = db.execute(
            "SELECT catalog_name FROM iceberg_tables WHERE table_name = 'template'"
        ).fetchone()
        assert found, "the template is not in the REST server's catalog"
        rows = []
        for name, where, text in copies(template, warehouse, n):
            path = rest_dir / "s3" / where.removeprefix("s3://")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            row = [found[0], NAMESPACE, name.split(".")[1], where, None]
            rows.append([*row, "TABLE"] if "iceberg_type" in cols else row)
        marks = ", ".join("?" * len(rows[0]))
        names = "catalog_name, table_namespace, table_name, metadata_location, "
        names += "previous_metadata_location" + (", iceberg_type" if "iceberg_type" in cols else "")
        db.executemany(f"INSERT INTO iceberg_tables ({names}) VALUES ({marks})", rows)
        db.commit()
    finally:
        db.close()
    return time.perf_counter() - start


def append_small(catalog: Any, names: list[str]) -> None:
    """One small file appended to each of ``names`` (a commit: a new metadata location)."""
    rows = ROWS.slice(0, 1)  # one row: one file, in partition day=0
    for name in names:
        catalog.load_table(name).append(rows)
