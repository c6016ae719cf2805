"""What ``icefloe status`` (and the dashboard, which polls it every 2 s) pays for a sorted
table's clustering: measured from every stored file's bounds, against the depths the
decider keeps as it measures them (``LayoutStore.saved_depths``).

    .venv/bin/python bench/status_bench.py [--partitions 200] [--files 500]
                                           [--redis redis://127.0.0.1:6379/5]

One table's layout of ``partitions`` x ``files`` random key ranges is stored in Redis (a
scratch database: it is flushed); then, median of 5: the clustering as status computed it
before (``depths(layouts.files(table))``) and as it reads it now (``status._depths``: the
kept depths, the stored files only of partitions without one). Both must agree. Not a
test: nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import redis  # noqa: E402

from optimizer.layout import FileBounds  # noqa: E402
from service.base.keys import Keys  # noqa: E402
from service.observe.status import _depths  # noqa: E402
from service.state.layout import depths  # noqa: E402
from service.state.layout.redis import RedisLayouts  # noqa: E402

TABLE, SIG = "bench.sorted", "sort:ts"


def median_s(fn: Callable[[], Any], runs: int = 5) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(runs):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--partitions", type=int, default=200)
    ap.add_argument("--files", type=int, default=500)
    ap.add_argument("--redis", default="redis://127.0.0.1:6379/5")
    args = ap.parse_args()
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
    now_s, kept = median_s(lambda: _depths(store, TABLE, 0))
    assert kept == measured, "the kept depths differ from the files' depths"
    n = args.partitions * args.files
    print(f"status clustering of one sorted table, {args.partitions} partitions, {n:,} files")
    print(f"  measured from the stored files (before): {before_s * 1000:9.1f} ms")
    print(f"  the decider's kept depths (now):         {now_s * 1000:9.1f} ms")
    print(f"  now / before: {now_s / before_s:.4f}")
    client.flushdb()


if __name__ == "__main__":
    main()
