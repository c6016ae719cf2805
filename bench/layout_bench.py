"""Benchmark (issues #32, #47): keeping a sorted (or z-ordered) layout, icefloe against Iceberg.

    .venv/bin/python bench/layout_bench.py [--cases sort,zorder|late] [--rounds 8]
                                           [--partitions 6] [--rows 40000]
                                           [--late 0.25] [--tolerance 1.25]
                                           [--target-kb 1024] [--icefloe loop|optimize]
                                           [--redis redis://127.0.0.1:6379/9] [--quick]

A table partitioned by ``day`` receives rounds of appends (PyIceberg, one file per
partition per round). Each round brings every partition a batch of new keys, after the
keys seen so far (``sort``: ``ts`` grows; ``zorder``: ``x`` moves on, ``y`` anywhere),
and half of the partitions, in turn, late rows (``--late`` of a round's rows) whose keys
fall among the previous round's: the sort key arrives partly out of order. Each
partition's rows are written in the table's order (sorted by ``ts``, or by the z-key of
``x, y``), as a writer honouring the write order does, so one round's files do not overlap
each other; the late rows' file overlaps the previous round's. The same
rows go to three copies, and after each round:

* ``icefloe``: the decider (one pass, ``sort``/``zorder`` policy, ``--tolerance`` as
  ``clustering_tolerance``) and an actor until the queue is empty, in this process
  (``--icefloe optimize``: ``optimize_table`` with the layout action instead);
* ``iceberg``: ``CALL lake.system.rewrite_data_files(strategy => 'sort' | 'zorder',
  options => map('rewrite-all', 'true'), where => <the partitions that got late rows>)``:
  the full re-sort a user runs to restore a layout (Iceberg's default selection rewrites
  only small files and would leave the overlap);
* ``none``: nothing.

Per copy, per round and in total: bytes rewritten (``removed-files-size`` of the round's
``replace`` snapshots), data files after, mean clustering depth (the file-weighted mean of
the partitions' depths from manifest bounds; z-order: in z-key space), snapshots and
manifests in the current snapshot, Parquet bytes (the data files' total size), and for a
fixed set of point and range queries on the layout columns: the data files a reader opens
after Iceberg's pruning (PyIceberg ``plan_files``; summed over the queries) and the
queries' wall time in Spark (median of 3). Every round checks every copy's rows against
the rows written (count and an order-free checksum). Issue #32's acceptance, over the
rounds: files opened <= 1.1x Iceberg's sorted copy, bytes rewritten <= 0.5x Iceberg's,
every row kept. The last line is a JSON summary.

``late`` (issue #47; ``bench/layout_cases.py``): a table sorted by ``k``, each ``day`` first
filled in key order (10 appends of ``--rows`` rows, about a target file each: depth 1); one
day then gets 8 small late files with keys in the top fifth of its range, and the copies
act once as above (``iceberg``'s ``where``: that day; ``--rounds``, ``--late`` unused), read
by 20 ranges on ``k`` in that day. Acceptance at the default ``clustering_tolerance``
(what runs without ``--tolerance``; printed): files opened <= 1.1x Iceberg's, bytes <= 0.5x.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import layout_cases  # noqa: E402
import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402
from pyiceberg.expressions import And, EqualTo, GreaterThanOrEqual, LessThan  # noqa: E402
from pyiceberg.partitioning import PartitionField, PartitionSpec  # noqa: E402
from pyiceberg.schema import Schema  # noqa: E402
from pyiceberg.table.sorting import SortField, SortOrder  # noqa: E402
from pyiceberg.transforms import IdentityTransform  # noqa: E402
from pyiceberg.types import LongType, NestedField, StringType  # noqa: E402
from wide_bench import _answers, drop_keys, private_redis  # noqa: E402

from icefloe.base.catalog import load_catalog  # noqa: E402
from icefloe.base.config import Config, build_config  # noqa: E402
from icefloe.base.layoutspec import layout_spec  # noqa: E402
from icefloe.jobs.rewrite.zorder_rows import zorder_sort_indices  # noqa: E402
from icefloe.optimizer import FileBounds  # noqa: E402

COPIES = ("icefloe", "iceberg", "none")
ACTIONS = {"sort": "sort", "zorder": "zorder", "late": "sort"}  # icefloe's layout action
ORDERS = {"sort": "ts ASC NULLS FIRST", "zorder": "zorder(x, y)", "late": "k ASC NULLS FIRST"}
SCHEMA = Schema(
    NestedField(1, "day", StringType(), required=False),
    NestedField(2, "ts", LongType(), required=False),
    NestedField(3, "x", LongType(), required=False),
    NestedField(4, "y", LongType(), required=False),
    NestedField(5, "kind", StringType(), required=False),
    NestedField(6, "payload", StringType(), required=False),
)
SPEC = PartitionSpec(PartitionField(1, 1000, IdentityTransform(), "day"))
SPAN = 1 << 20  # keys a round's batch covers (ts; zorder: x)


# --- data ------------------------------------------------------------------------------


def round_rows(case: str, rnd: int, partitions: int, rows: int, late: float, seed: int) -> pa.Table:
    """One round's rows for every partition: the new batch, and late rows for half."""
    rng = np.random.default_rng(seed * 1000 + rnd)
    parts = []
    for p in range(partitions):
        keys = rng.integers(rnd * SPAN, (rnd + 1) * SPAN, rows)
        if rnd > 0 and (p + rnd) % 2 == 0:  # late rows, among the previous round's keys
            keys = np.concatenate(
                [keys, rng.integers((rnd - 1) * SPAN, rnd * SPAN, int(rows * late))]
            )
        n = len(keys)
        # zorder: y within one span, so a round's x window is its own block of z-space
        other = rng.integers(0, SPAN if case == "zorder" else 8 * SPAN, n)
        ts, x, y = (
            (keys, other, rng.integers(0, 8 * SPAN, n))
            if case == "sort"
            else (rng.integers(0, 8 * SPAN, n), keys, other)
        )
        batch = pa.table(
            {
                "day": pa.array([f"d{p}"] * n),
                "ts": pa.array(ts, pa.int64()),
                "x": pa.array(x, pa.int64()),
                "y": pa.array(y, pa.int64()),
                "kind": pa.array([f"k{int(k) >> 16}" for k in keys]),  # follows the key
                "payload": pa.array(rng.integers(0, 1 << 40, n).astype(str)),
            }
        )
        parts.append(batch.take(writer_order(batch, case)))
    return pa.concat_tables(parts).cast(SCHEMA.as_arrow())


def writer_order(batch: pa.Table, case: str) -> pa.Array:
    """The order a writer that honours the table's order writes a batch in (Spark sorts
    each task's rows by the write order): files of one batch then do not overlap."""
    if case == "sort":
        return pc.sort_indices(batch, sort_keys=[("ts", "ascending")])
    return zorder_sort_indices(batch, ["x", "y"])


def queries(case: str, rounds: int, seed: int) -> list[tuple[str, Any]]:
    """(Spark SQL predicate, PyIceberg filter) pairs: points and ranges on the layout."""
    rng = np.random.default_rng(seed)
    top = rounds * SPAN
    out: list[tuple[str, Any]] = []
    col = "ts" if case == "sort" else "x"
    for _ in range(4):  # points
        v = int(rng.integers(0, top))
        if case == "sort":
            out.append((f"ts = {v}", EqualTo("ts", v)))
        else:
            w = int(rng.integers(0, SPAN))
            out.append((f"x = {v} AND y = {w}", And(EqualTo("x", v), EqualTo("y", w))))
    for width in (SPAN // 64, SPAN // 4, SPAN):  # ranges on the (leading) key
        lo = int(rng.integers(0, top - width))
        out.append(
            (
                f"{col} >= {lo} AND {col} < {lo + width}",
                And(GreaterThanOrEqual(col, lo), LessThan(col, lo + width)),
            )
        )
    if case == "zorder":  # the second column alone: where z-order beats a sort
        lo = int(rng.integers(0, SPAN - SPAN // 4))
        out.append(
            (
                f"y >= {lo} AND y < {lo + SPAN // 4}",
                And(GreaterThanOrEqual("y", lo), LessThan("y", lo + SPAN // 4)),
            )
        )
    return out


def case_data(case: str, args: Any) -> tuple[list[pa.Table], Any, list[tuple[str, Any]]]:
    """The appends before the rounds, each round's (appends, days given late rows), the
    queries."""
    p, rows, seed = args.partitions, args.rows, args.seed
    if case == "late":
        lates = [(layout_cases.late(p, rows, seed), [layout_cases.late_day(p)])]
        return layout_cases.fill(p, rows, seed), lates, layout_cases.queries(p, seed)
    rounds = (
        (
            [round_rows(case, rnd, p, rows, args.late, seed)],
            [f"d{d}" for d in range(p) if rnd > 0 and (d + rnd) % 2 == 0],
        )
        for rnd in range(args.rounds)
    )
    return [], rounds, queries(case, args.rounds, seed)


def checksum_sql(name: str, schema: Schema) -> str:
    cols = ", ".join(f.name for f in schema.fields)
    h = f"xxhash64({cols}) % 1000000007"  # a sum that cannot overflow
    return f"SELECT count(*) AS n, sum({h}) AS h FROM {name}"


# --- measures --------------------------------------------------------------------------


def depth(table: Any, cfg: Config, ident: str, action: str) -> tuple[float, int]:
    """File-weighted mean of the partitions' clustering depths (manifest bounds only), and
    the partitions deeper than the tolerance."""
    spec = layout_spec(table, cfg.policy_for(ident), action)
    by_part: dict[str, list[FileBounds[str]]] = {}
    for row in table.inspect.files().to_pylist():
        if row["content"] != 0:
            continue
        lo, hi = spec.bounds(
            row["lower_bounds"],
            row["upper_bounds"],
            row["null_value_counts"],
            row["nan_value_counts"],
        )
        by_part.setdefault(str(row["partition"]), []).append(
            FileBounds(row["file_path"], row["file_size_in_bytes"], lo, hi)
        )
    depths = [spec.depth(f) for f in by_part.values()]
    files = sum(d.files for d in depths)
    over = sum(d.mean > spec.tolerance for d in depths)
    return (sum(d.mean * d.files for d in depths) / files if files else 0.0), over


def state(table: Any) -> dict[str, int]:
    snap = table.current_snapshot()
    files = table.inspect.files().to_pylist()
    return {
        "files": sum(1 for f in files if f["content"] == 0),
        "parquet_bytes": sum(f["file_size_in_bytes"] for f in files if f["content"] == 0),
        "snapshots": len(table.metadata.snapshots),
        "manifests": len(snap.manifests(table.io)) if snap else 0,
    }


def rewritten_since(table: Any, seen: set[int]) -> int:
    """Bytes the ``replace`` snapshots not in ``seen`` removed (``seen`` is updated)."""
    total = 0
    for s in table.metadata.snapshots:
        if s.snapshot_id in seen:
            continue
        seen.add(s.snapshot_id)
        summary = s.summary
        if summary is not None and summary.operation.value == "replace":
            total += int(summary.additional_properties.get("removed-files-size", 0))
    return total


def reads(spark: Any, table: Any, name: str, qs: list[tuple[str, Any]]) -> tuple[int, float]:
    """Files opened over the queries (after pruning), and their Spark wall (median of 3)."""
    opened = sum(len(list(table.scan(row_filter=f).plan_files())) for _, f in qs)
    for sql, _ in qs:  # warm: the first run of a query pays for planning code paths
        spark.sql(f"SELECT count(*), sum(x) FROM {name} WHERE {sql}").collect()
    walls = []
    for _ in range(3):
        t = time.perf_counter()
        for sql, _ in qs:
            spark.sql(f"SELECT count(*), sum(x) FROM {name} WHERE {sql}").collect()
        walls.append(time.perf_counter() - t)
    return opened, statistics.median(walls)


# --- arms ------------------------------------------------------------------------------


def run_icefloe(spark: Any, cfg: Config, catalog: Any, ident: str, mode: str, action: str) -> None:
    if mode == "optimize":
        from icefloe.jobs.data.optimize import optimize_table  # the actors' job

        optimize_table(spark, cfg, ident, action=action)
        return
    from icefloe.service.actor.loop import run_actor  # the loops: only in this arm
    from icefloe.service.decider.wiring import open_decider

    decider = open_decider(cfg, catalog)
    try:
        decider.run(once=True)
    finally:  # the next round's decider leads at once
        decider.leader.release()
        decider.shards.release()
    run_actor(cfg, None, idle_exit=0, spark=spark)


def run_iceberg(spark: Any, ident: str, case: str, days: list[str], target: int) -> None:
    if not days:
        return
    order = ORDERS[case]
    where = " OR ".join(f'day = "{d}"' for d in days)
    spark.sql(
        f"CALL lake.system.rewrite_data_files(table => 'lake.{ident}', strategy => 'sort', "
        f"sort_order => '{order}', where => '{where}', options => map('rewrite-all', 'true', "
        f"'target-file-size-bytes', '{target}'))"
    ).collect()


# --- the case --------------------------------------------------------------------------


def make_config(
    home: Path, redis_url: str, prefix: str, ident: str, args: Any, case: str
) -> Config:
    policy: dict[str, Any] = {
        "actions": ["merge", ACTIONS[case]],
        "target_file_size_bytes": args.target_kb * 1024,  # not the appends' property
    }
    if args.tolerance is not None:  # else the configuration's default
        policy["clustering_tolerance"] = args.tolerance
    if case == "zorder":
        policy["zorder"] = ["x", "y"]
    raw = {
        "catalog": {"uri": f"sqlite:///{home}/catalog.db", "warehouse": f"file://{home}/warehouse"},
        "redis": {"url": redis_url, "key_prefix": prefix},
        "spark": {
            "master": "local[2]",
            "conf": {
                "spark.sql.shuffle.partitions": "4",
                "spark.ui.enabled": "false",
                "spark.driver.memory": "3g",
            },
        },
        "defaults": {"target_file_size_bytes": args.target_kb * 1024},  # over the property
        "managed": {"tables": [ident]},
        "tables": {ident: policy},
        "history": {"enabled": False},
    }
    return build_config(raw, source="<layout bench>", home=home)


def run_case(spark: Any, cfg: Config, args: Any, case: str, ns: str) -> dict[str, Any]:
    catalog = load_catalog(cfg)
    names = {c: f"{ns}.{case}_{c}" for c in COPIES}
    action, schema = ACTIONS[case], layout_cases.SCHEMA if case == "late" else SCHEMA
    order = (  # field 2: ts, or k
        SortOrder(SortField(source_id=2, transform=IdentityTransform()))
        if action == "sort"
        else SortOrder()
    )
    props = {
        # what the appends roll at: PyIceberg counts bytes in memory, about 4x the Parquet
        "write.target-file-size-bytes": str(args.writer_kb * 1024),
        "write.distribution-mode": "none",
    }
    for ident in names.values():
        catalog.create_table(ident, schema, partition_spec=SPEC, sort_order=order, properties=props)
    setup, plan, qs = case_data(case, args)
    seen: dict[str, set[int]] = {c: set() for c in COPIES}
    for c in COPIES:  # the late case's fill: every copy the same, no arm runs
        table = catalog.load_table(names[c])
        for data in setup:
            table.append(data)
        rewritten_since(table, seen[c])
    totals = {
        c: {"bytes_rewritten": 0, "files_opened": 0, "query_s": 0.0, "seconds": 0.0} for c in COPIES
    }
    rounds = []
    written = None
    for rnd, (batches, late_days) in enumerate(plan):
        for c in COPIES:
            table = catalog.load_table(names[c])
            for data in batches:
                table.append(data)
            rewritten_since(table, seen[c])  # the appends
        row: dict[str, Any] = {"round": rnd}
        t = time.perf_counter()
        run_icefloe(spark, cfg, catalog, names["icefloe"], args.icefloe, action)
        totals["icefloe"]["seconds"] += time.perf_counter() - t
        t = time.perf_counter()
        run_iceberg(spark, names["iceberg"], case, late_days, args.target_kb * 1024)
        totals["iceberg"]["seconds"] += time.perf_counter() - t
        written = spark.sql(checksum_sql(f"lake.{names['none']}", schema)).collect()[0]
        for c in COPIES:
            table = catalog.load_table(names[c])
            got = spark.sql(checksum_sql(f"lake.{names[c]}", schema)).collect()[0]
            opened, wall = reads(spark, table, f"lake.{names[c]}", qs)
            m = {
                "bytes_rewritten": rewritten_since(table, seen[c]),
                **dict(
                    zip(("depth", "over"), depth(table, cfg, names["icefloe"], action), strict=True)
                ),
                "files_opened": opened,
                "query_s": round(wall, 3),
                "rows_ok": (got.n, got.h) == (written.n, written.h),
                **state(table),
            }
            totals[c]["bytes_rewritten"] += m["bytes_rewritten"]
            totals[c]["files_opened"] += opened
            totals[c]["query_s"] += wall
            row[c] = m
        rounds.append(row)
        print_round(case, row)
    last = rounds[-1]
    result = {
        "case": case,
        "tolerance": cfg.policy_for(names["icefloe"]).clustering_tolerance,
        "rounds": rounds,
        "totals": totals,
        "rows": int(written.n) if written is not None else 0,
        "rows_ok": all(r[c]["rows_ok"] for r in rounds for c in COPIES),
    }
    for c in COPIES:
        totals[c].update(
            {k: last[c][k] for k in ("files", "parquet_bytes", "snapshots", "manifests", "depth")}
        )
    print_totals(result)
    return result


def print_round(case: str, row: dict[str, Any]) -> None:
    print(f"[{case}] round {row['round']}")
    print(
        f"  {'copy':<8} {'MiB rewr':>9} {'files':>6} {'depth':>6} {'opened':>7} "
        f"{'query s':>8} {'MiB':>7} {'snaps':>6} {'mfsts':>6} {'over':>5} rows"
    )
    for c in COPIES:
        m = row[c]
        print(
            f"  {c:<8} {m['bytes_rewritten'] / 2**20:>9.2f} {m['files']:>6} {m['depth']:>6.2f} "
            f"{m['files_opened']:>7} {m['query_s']:>8.3f} {m['parquet_bytes'] / 2**20:>7.2f} "
            f"{m['snapshots']:>6} {m['manifests']:>6} {m['over']:>5} "
            f"{'ok' if m['rows_ok'] else 'LOST'}"
        )


def ratio(a: float, b: float) -> float | None:
    return round(a / b, 3) if b else None


def print_totals(result: dict[str, Any]) -> None:
    t, case = result["totals"], result["case"]
    print(
        f"[{case}] over {len(result['rounds'])} rounds ({result['rows']} rows), "
        f"clustering_tolerance {result['tolerance']}"
    )
    print(
        f"  {'copy':<8} {'MiB rewr':>9} {'opened':>7} {'query s':>8} {'arm s':>7} "
        f"{'files':>6} {'depth':>6} {'MiB':>7} {'snaps':>6} {'mfsts':>6}"
    )
    for c in COPIES:
        m = t[c]
        print(
            f"  {c:<8} {m['bytes_rewritten'] / 2**20:>9.2f} {m['files_opened']:>7} "
            f"{m['query_s']:>8.3f} {m['seconds']:>7.1f} {m['files']:>6} {m['depth']:>6.2f} "
            f"{m['parquet_bytes'] / 2**20:>7.2f} {m['snapshots']:>6} {m['manifests']:>6}"
        )
    ice, berg = t["icefloe"], t["iceberg"]
    result["ratios"] = {
        "bytes_rewritten": ratio(ice["bytes_rewritten"], berg["bytes_rewritten"]),
        "files_opened": ratio(ice["files_opened"], berg["files_opened"]),
        "query_s": ratio(ice["query_s"], berg["query_s"]),
        "parquet_bytes": ratio(ice["parquet_bytes"], berg["parquet_bytes"]),
        "files_opened_vs_none": ratio(ice["files_opened"], t["none"]["files_opened"]),
    }
    print(
        f"  icefloe / iceberg: {json.dumps(result['ratios'])}; every row kept: {result['rows_ok']}"
    )


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", default="sort,zorder", help="sort, zorder, late")
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--partitions", type=int, default=6)
    p.add_argument("--rows", type=int, default=40000, help="new rows per partition per round")
    p.add_argument("--late", type=float, default=0.25, help="late rows, of a round's")
    p.add_argument("--tolerance", type=float, help="clustering_tolerance (the default's)")
    p.add_argument("--target-kb", type=int, default=1024)
    p.add_argument("--writer-kb", type=int, default=4096, help="the appends' roll size (in memory)")
    p.add_argument("--icefloe", choices=("loop", "optimize"), default="loop")
    p.add_argument("--redis", default="redis://127.0.0.1:6379/9")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--quick", action="store_true", help="3 rounds, 4 partitions, 10k rows")
    args = p.parse_args()
    if args.quick:
        args.rounds, args.partitions, args.rows = 3, 4, 10000
    args.case_list = [c for c in ACTIONS if c in args.cases.split(",")]
    if not args.case_list or set(args.cases.split(",")) - set(ACTIONS):
        p.error(f"--cases: sort, zorder and/or late, got {args.cases!r}")
    tolerance = 1 if args.tolerance is None else args.tolerance
    if args.rounds < 2 or args.partitions < 1 or args.rows < 1 or tolerance < 1:
        p.error("need --rounds >= 2, --partitions >= 1, --rows >= 1, --tolerance >= 1")
    return args


def main() -> None:
    args = parse_args()
    from icefloe.base.spark import build_spark  # after the arguments: a JVM takes seconds

    with tempfile.TemporaryDirectory(prefix="icefloe-layout-") as tmp:
        home = Path(tmp)
        proc = None
        url = args.redis
        if not _answers(url):
            proc, url = private_redis(home)
        prefix = f"icefloe-layout-{uuid.uuid4().hex[:8]}"
        results = []
        try:
            spark = None
            for case in args.case_list:
                ns = "bench"
                cfg = make_config(home, url, prefix, f"{ns}.{case}_icefloe", args, case)
                if spark is None:
                    load_catalog(cfg).create_namespace(ns)
                    spark = build_spark(cfg, app_name="icefloe-layout-bench")
                results.append(run_case(spark, cfg, args, case, ns))
        finally:
            drop_keys(url, prefix)
            if proc is not None:
                proc.kill()
    print(
        json.dumps(
            {
                "bench": "layout",
                "args": {k: v for k, v in vars(args).items() if k != "case_list"},
                "cases": [
                    {k: r[k] for k in ("case", "tolerance", "ratios", "rows", "rows_ok")}
                    | {"totals": r["totals"]}
                    for r in results
                ],
            }
        )
    )


if __name__ == "__main__":
    main()
