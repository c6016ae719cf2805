"""What ``icefloe status`` and the dashboard (which polls every 2 s) pay per call on a
bigger warehouse, before and after session 19, in one run.

    .venv/bin/python bench/status_bench.py [--partitions 200] [--files 500]
                                           [--tables 10] [--records 5000]
                                           [--redis redis://127.0.0.1:6379/5]

1. A sorted table's clustering: one table's layout of ``partitions`` x ``files`` random
   key ranges stored in Redis (a scratch database: it is flushed); the clustering as
   status computed it before (``depths(layouts.files(table))``) and as it reads it now
   (``status._depths``: the depths the decider keeps, ``LayoutStore.saved_depths``).
2. The dashboard's ``/api/tables`` poll over ``tables`` PyIceberg tables of 200
   partitions x 6 files (a scratch SQLite catalog): every table's ``table_summary`` (each
   poll, before) against ``Dashboard.tables`` once warm (read again only when a table's
   metadata changed, or once a minute).
3. Its ``/api/history`` poll over ``records`` flushed records: ``read_all`` against
   ``read_all(..., kept)`` once warm.

Medians of 5 (3 for the tables); each pair must agree. Not a test: nothing here asserts
on time.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pyarrow as pa  # noqa: E402
import redis  # noqa: E402

from icefloe.app.web.data import Dashboard  # noqa: E402
from icefloe.base.catalog import load_catalog, managed_tables  # noqa: E402
from icefloe.base.keys import Keys  # noqa: E402
from icefloe.jobs.history.flush import Kept, flush, read_all  # noqa: E402
from icefloe.optimizer.layout import FileBounds  # noqa: E402
from icefloe.service.decider.wiring import open_decider  # noqa: E402
from icefloe.service.observe.kept import kept_depths  # noqa: E402
from icefloe.service.observe.tables import table_summary  # noqa: E402
from icefloe.state.layout import depths  # noqa: E402
from icefloe.state.layout.redis import RedisLayouts  # noqa: E402
from icefloe.state.ledger.memory import MemoryLedger  # noqa: E402
from tests.support.config import make_config  # noqa: E402

TABLE, SIG = "bench.sorted", "sort:ts"


def median_s(fn: Callable[[], Any], runs: int = 5) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(runs):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def line(what: str, now_s: float, before_s: float) -> None:
    print(f"  {what:<44} now {now_s * 1000:9.1f} ms  before {before_s * 1000:9.1f} ms", end="")
    print(f"  now/before {now_s / before_s:.4f}")


def clustering(args: argparse.Namespace) -> None:
    client = redis.Redis.from_url(args.redis)
    client.flushdb()
    store = RedisLayouts(client, Keys("bench"))
    rng = random.Random(1)
    files: dict[str, list[FileBounds[str]]] = {}
    for p in range(args.partitions):
        part = []
        for i in range(args.files):
            lo = rng.randint(0, 10**6)
            path = f"s3://bucket/warehouse/t/data/day={p}/{i:05d}-{rng.getrandbits(64):x}.parquet"
            part.append(FileBounds(path, 100 << 20, (lo,), (lo + rng.randint(0, 10**4),)))
        files[f'[0,[["day","int",{p}]]]'] = part
    store.replace(TABLE, SIG, files)
    generation = store.generation(TABLE)
    before_s, measured = median_s(lambda: depths(store.files(TABLE)))
    store.save_depths(TABLE, SIG, measured, generation)  # as the decider keeps them
    now_s, kept = median_s(lambda: kept_depths(store, TABLE, 0))
    assert kept == measured, "the kept depths differ from the files' depths"
    n = args.partitions * args.files
    line(f"status clustering, {n:,} files", now_s, before_s)
    client.flushdb()


def dashboard(args: argparse.Namespace) -> None:
    home = Path(tempfile.mkdtemp(prefix="icefloe-status-bench-"))
    cfg = make_config(home, redis={"url": args.redis, "key_prefix": "icefloe-status-bench"})
    catalog = load_catalog(cfg)
    catalog.create_namespace("db")
    days = pa.array([d for d in range(200) for _ in range(5)], pa.int32())
    rows = pa.table({"day": days, "v": [f"x{i}" for i in range(len(days))]})
    for t in range(args.tables):
        table = catalog.create_table(f"db.t{t}", schema=rows.schema)
        with table.update_spec() as spec:
            spec.add_identity("day")
        for _ in range(6):
            table.append(rows)
    names = managed_tables(cfg, catalog)
    before_s, before = median_s(lambda: [table_summary(cfg, catalog, n) for n in names], 3)
    open_decider(cfg, catalog).step()  # the kept records the list reads (#48)
    board = Dashboard(cfg)
    board.tables()
    now_s, page = median_s(board.tables, 3)
    now = sorted(page["rows"], key=lambda r: r["table"])
    assert [r["files"] for r in now] == [s["files"] for s in before]
    line(f"/api/tables, {args.tables} tables of 1,200 files", now_s, before_s)
    redis.Redis.from_url(args.redis).flushdb()
    ledger = MemoryLedger()
    for i in range(args.records):
        entry = {"id": f"merge:db.t0:p{i}", "table": "db.t0", "action": "merge", "ok": True}
        ledger.record_action(entry | {"finished_at": 1_800_000_000.0 + i}, history=True)
    flush(cfg, catalog, ledger, "bench")
    before_s, old = median_s(lambda: read_all(cfg, catalog, ledger, None, None))
    kept: Kept = {}
    read_all(cfg, catalog, ledger, None, None, kept)
    now_s, new = median_s(lambda: read_all(cfg, catalog, ledger, None, None, kept))
    assert new == old
    line(f"/api/history, {args.records:,} records", now_s, before_s)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--partitions", type=int, default=200)
    ap.add_argument("--files", type=int, default=500)
    ap.add_argument("--tables", type=int, default=10)
    ap.add_argument("--records", type=int, default=5000)
    ap.add_argument("--redis", default="redis://127.0.0.1:6379/5")
    args = ap.parse_args()
    print("status and dashboard, per call (median)")
    clustering(args)
    dashboard(args)


if __name__ == "__main__":
    main()
