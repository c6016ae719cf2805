"""Benchmark: icefloe's ``compute_stats`` (Iceberg's table and partition statistics) against
the compaction it follows.

    .venv/bin/python bench/stats_bench.py [--rows 2000000] [--partitions 24] [--commits 20]
                                          [--runs 3] [--quick]

One table partitioned by ``day`` (``id`` bigint, ``day`` string, ``category`` string of 50
values, ``amount`` double, ``ts`` timestamp) is built by ``--commits`` Spark INSERTs, each
writing rows into every partition (Iceberg's hash distribution: a file per partition per
commit). Then, in one Spark session (``local[2]``) and a temporary lake:

1. the baseline: a full compaction, ``CALL lake.system.rewrite_data_files(table => ...,
   options => map('rewrite-all', 'true'))``, timed once;
2. icefloe's ``run_table_action(spark, cfg, ident, "compute_stats")``: Iceberg's
   ``compute_table_stats`` (Puffin NDV sketches: a Spark job over every row) and
   ``compute_partition_stats`` (manifests only), then icefloe's check from the metadata.
   The first computation is run ``--runs`` times (median); before each run the statistics
   the previous one registered are removed (Iceberg's ``updateStatistics`` /
   ``updatePartitionStatistics``, a metadata commit), so every run computes from nothing.
   The two procedures' shares are timed inside the same runs: the bench wraps
   ``icefloe.jobs.maintenance.procedures.call_procedure`` (each share includes that function's own
   PyIceberg table load); what is left is icefloe's (catalog loads, facts, verification);
3. one append of ~5% more rows: the rule's verdict (``stats_changed_ratio`` 0.2: not due);
   then enough rows to cross 0.2: due; the refresh timed (``--runs``, median; before each,
   the statistics of the new snapshot are removed and the older ones kept, so the partition
   statistics are computed incrementally from the older file each time). Beside it, for
   reference, ``compute_partition_stats`` from nothing at the same snapshot (every partition
   statistics file removed first; a direct CALL);
4. the table's row count and an order-free checksum (``xxhash64`` of every column, summed)
   are read before and after every ``compute_stats`` run, with the snapshot count and the
   current snapshot: statistics must change neither;
5. the report: statistics seconds against compaction seconds, the metadata bytes the
   statistics add (the Puffin and partition statistics files' sizes registered in the
   metadata, and the metadata JSON's growth), snapshots before/after, NDV sketch against the
   exact distinct counts, and a last line ``stats-summary {json}``.

The rule's verdicts are ``icefloe.optimizer.actions.table_needs`` on ``read_health`` of the table,
as ``icefloe maintain`` and the decider compute them, with no last run recorded (the 1 h
``stats_interval_hours`` is the service's pacing, not measured here).

No Redis is used. The machine is small and noisy: compare within a run.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from icefloe.base.catalog import load_catalog, load_table, spark_table_name  # noqa: E402
from icefloe.base.config import Config, build_config  # noqa: E402
from icefloe.jobs.maintenance import procedures  # noqa: E402
from icefloe.jobs.maintenance.run import run_table_action  # noqa: E402
from icefloe.optimizer.actions import table_needs  # noqa: E402
from icefloe.state.health import read_health  # noqa: E402

ACTION = "compute_stats"
IDENT = "bench.events"
CATEGORIES = 50
DAY0 = 1_704_067_200  # 2024-01-01 00:00:00 UTC
CHECKSUM = (
    "SELECT count(*) AS n, "
    "sum(CAST(xxhash64(id, day, category, amount, ts) AS DECIMAL(38, 0))) AS h FROM {}"
)
COLUMNS = ("id", "day", "category", "amount", "ts")


# ---- the lake -------------------------------------------------------------------------
def make_config(home: Path) -> Config:
    raw = {
        "catalog": {"uri": f"sqlite:///{home}/catalog.db", "warehouse": f"file://{home}/warehouse"},
        "spark": {
            "master": "local[2]",
            "conf": {
                "spark.sql.shuffle.partitions": "4",
                "spark.default.parallelism": "4",
                "spark.ui.enabled": "false",
                "spark.driver.memory": "3g",
            },
        },
        "managed": {"tables": [IDENT]},
        "history": {"enabled": False},
    }
    return build_config(raw, source="<stats bench>", home=home)


def insert(spark: Any, name: str, start: int, rows: int, partitions: int) -> float:
    """``rows`` rows with ids from ``start``, spread over every day partition: seconds."""
    sql = f"""
        INSERT INTO {name}
        SELECT id,
               CAST(date_add(DATE'2024-01-01', d) AS STRING) AS day,
               concat('c', lpad(CAST(pmod(xxhash64(id, 2), {CATEGORIES}) AS STRING), 2, '0'))
                 AS category,
               CAST(pmod(xxhash64(id, 3), 10000000) AS DOUBLE) / 100 AS amount,
               timestamp_seconds({DAY0} + d * 86400 + pmod(xxhash64(id, 4), 86400)) AS ts
        FROM (SELECT id, CAST(pmod(xxhash64(id, 1), {partitions}) AS INT) AS d
              FROM range({start}, {start + rows}, 1, 2))
    """
    started = time.perf_counter()
    spark.sql(sql).collect()
    return time.perf_counter() - started


def checksum(spark: Any, name: str) -> tuple[int, int]:
    row = spark.sql(CHECKSUM.format(name)).collect()[0]
    return int(row["n"]), int(row["h"] or 0)


def java_table(spark: Any, name: str) -> Any:
    """The Iceberg Java table behind ``name`` (the catalog caches nothing: icefloe's conf)."""
    from icefloe.base.spark import activate

    activate(spark)
    jvm = spark.sparkContext._jvm
    return jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, name)


def drop_statistics(spark: Any, name: str, catalog: Any, only: int | None = None) -> None:
    """Remove the registered table and partition statistics (``only``: of that snapshot),
    one metadata commit each; the files stay (a temporary lake)."""
    meta = load_table(catalog, IDENT).metadata
    table_ids = {f.snapshot_id for f in meta.statistics}
    part_ids = {f.snapshot_id for f in meta.partition_statistics}
    if only is not None:
        table_ids &= {only}
        part_ids &= {only}
    jt = java_table(spark, name)
    if table_ids:
        update = jt.updateStatistics()
        for sid in table_ids:
            update = update.removeStatistics(sid)
        update.commit()
    if part_ids:
        update = jt.updatePartitionStatistics()
        for sid in part_ids:
            update = update.removePartitionStatistics(sid)
        update.commit()


# ---- what one run is measured by -------------------------------------------------------
class ProcedureClock:
    """Seconds of each ``call_procedure`` icefloe makes (wraps the module's function; the
    runner calls it through the module)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, float]] = []
        self._inner: Callable[..., Any] = procedures.call_procedure

    def __enter__(self) -> ProcedureClock:
        inner = self._inner

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                self.calls.append((args[3], time.perf_counter() - started))

        procedures.call_procedure = timed
        return self

    def __exit__(self, *exc: Any) -> None:
        procedures.call_procedure = self._inner

    def take(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for procedure, secs in self.calls:
            out[procedure] = out.get(procedure, 0.0) + secs
        self.calls.clear()
        return out


def table_state(catalog: Any) -> dict[str, Any]:
    table = load_table(catalog, IDENT)
    meta, snap = table.metadata, table.current_snapshot()
    summary = snap.summary if snap is not None else None
    return {
        "snapshot": snap.snapshot_id if snap is not None else None,
        "snapshots": len(meta.snapshots),
        "data_files": int(summary.get("total-data-files", 0)) if summary else 0,
        "data_bytes": int(summary.get("total-files-size", 0)) if summary else 0,
        "rows": int(summary.get("total-records", 0)) if summary else 0,
        "metadata_json_bytes": len(table.io.new_input(table.metadata_location)),
        "puffin_bytes": {f.snapshot_id: f.file_size_in_bytes for f in meta.statistics},
        "partition_stats_bytes": {
            f.snapshot_id: f.file_size_in_bytes for f in meta.partition_statistics
        },
        "ndv": {
            int(b.fields[0]): int((b.properties or {}).get("ndv", -1))
            for f in meta.statistics
            if snap is not None and f.snapshot_id == snap.snapshot_id
            for b in f.blob_metadata
        },
    }


def verdict(cfg: Config, catalog: Any) -> dict[str, Any]:
    """The rule's verdict now (no last run recorded), with the share it read."""
    table = load_table(catalog, IDENT)
    m = cfg.policy_for(IDENT, table.properties).maintenance
    health = read_health(table, m.manifest_target(table.properties), m.retain_last)
    needs = table_needs(
        health, m.rules(health.manifest_target), [ACTION], int(time.time() * 1000), {}
    )
    share = health.stats_changed_rows / health.data_rows if health.data_rows else 0.0
    return {
        "rows": health.data_rows,
        "changed_rows": health.stats_changed_rows,
        "share": share,
        "due": bool(needs),
        "has_stats": health.stats_snapshot_id is not None,
        "reason": needs[0].reason if needs else "not due",
        "ratio": m.rules(health.manifest_target).setting("stats_changed_ratio", 0.2),
    }


def stats_runs(
    spark: Any,
    cfg: Config,
    catalog: Any,
    name: str,
    clock: ProcedureClock,
    runs: int,
    reset: Callable[[], None],
    expected: tuple[int, int],
) -> dict[str, Any]:
    """``runs`` times: ``reset``, then icefloe's compute_stats; each checked (rows, checksum,
    snapshots, current snapshot unchanged). The medians and every run's figures."""
    got: dict[str, list[float]] = {"total": [], "table": [], "partition": [], "icefloe": []}
    checks = []
    for _ in range(runs):
        reset()
        before = table_state(catalog)
        clock.take()
        started = time.perf_counter()
        out = run_table_action(spark, cfg, IDENT, ACTION)
        total = time.perf_counter() - started
        shares = clock.take()
        after = table_state(catalog)
        rows_after = checksum(spark, name)
        got["total"].append(total)
        got["table"].append(shares.get("compute_table_stats", 0.0))
        got["partition"].append(shares.get("compute_partition_stats", 0.0))
        got["icefloe"].append(total - sum(shares.values()))
        checks.append(
            {
                "calls": out["result"]["calls"],
                "verified": out["verified"].get("checked") is True,
                "snapshots": (before["snapshots"], after["snapshots"]),
                "same_snapshot": before["snapshot"] == after["snapshot"],
                "rows_ok": rows_after == expected,
                "puffin_bytes": after["puffin_bytes"].get(after["snapshot"], 0),
                "partition_stats_bytes": after["partition_stats_bytes"].get(after["snapshot"], 0),
                "metadata_json": (before["metadata_json_bytes"], after["metadata_json_bytes"]),
            }
        )
    return {
        "median": {k: statistics.median(v) for k, v in got.items()},
        "runs": got,
        "checks": checks,
        "ok": all(
            c["verified"]
            and c["same_snapshot"]
            and c["snapshots"][0] == c["snapshots"][1]
            and c["rows_ok"]
            for c in checks
        ),
    }


# ---- the run --------------------------------------------------------------------------
def run(args: argparse.Namespace, home: Path) -> dict[str, Any]:
    from icefloe.base.spark import build_spark  # after the arguments: a JVM takes seconds

    cfg = make_config(home)
    catalog = load_catalog(cfg)
    catalog.create_namespace("bench")
    spark = build_spark(cfg, app_name="icefloe-stats-bench")
    name = spark_table_name(cfg, IDENT)
    res: dict[str, Any] = {}
    try:
        spark.sql(
            f"CREATE TABLE {name} (id BIGINT, day STRING, category STRING, amount DOUBLE, "
            "ts TIMESTAMP) USING iceberg PARTITIONED BY (day)"
        )
        per = args.rows // args.commits
        started = time.perf_counter()
        for i in range(args.commits):
            insert(spark, name, i * per, per, args.partitions)
        rows = per * args.commits
        res["build_s"] = time.perf_counter() - started
        res["built"] = table_state(catalog)
        fmt = load_table(catalog, IDENT).metadata.format_version
        print(
            f"built {rows:,} rows in {args.commits} INSERTs ({res['build_s']:.0f} s): "
            f"{res['built']['data_files']} data files, "
            f"{res['built']['data_bytes'] / 2**20:.1f} MiB, format v{fmt}"
        )

        # 1. the baseline: a full compaction, once
        everything = "options => map('rewrite-all', 'true')"
        started = time.perf_counter()
        spark.sql(
            f"CALL {cfg.catalog.name}.system.rewrite_data_files(table => '{IDENT}', {everything})"
        ).collect()
        res["compaction_s"] = time.perf_counter() - started
        res["compacted"] = table_state(catalog)
        expected = checksum(spark, name)
        assert expected[0] == rows, (expected, rows)
        print(
            f"compaction: {res['compaction_s']:.1f} s, {res['built']['data_files']} -> "
            f"{res['compacted']['data_files']} files"
        )
        res["verdicts"] = [("after the compaction, no statistics", verdict(cfg, catalog))]

        # 2. the first computation, from nothing each run
        with ProcedureClock() as clock:
            res["first"] = stats_runs(
                spark,
                cfg,
                catalog,
                name,
                clock,
                args.runs,
                lambda: drop_statistics(spark, name, catalog),
                expected,
            )
            first_state = table_state(catalog)
            stats_snapshot = first_state["snapshot"]
            res["ndv"] = first_state["ndv"]
            exact = spark.sql(
                "SELECT "
                + ", ".join(f"count(DISTINCT {c}) AS {c}" for c in COLUMNS)
                + f" FROM {name}"
            ).collect()[0]
            res["exact_ndv"] = {c: int(exact[c]) for c in COLUMNS}
            res["verdicts"].append(("right after compute_stats", verdict(cfg, catalog)))
            print(f"first compute_stats: {res['first']['median']['total']:.1f} s (median)")

            # 3. appends: under the ratio, then over it
            small = max(1, round(rows * args.small_share))
            insert(spark, name, rows, small, args.partitions)
            res["verdicts"].append((f"+{small:,} rows (1 commit)", verdict(cfg, catalog)))
            target = args.cross_share / (1 - args.cross_share)  # changed / rows at the stats
            more = max(1, round(rows * target) - small)
            insert(spark, name, rows + small, more, args.partitions)
            res["verdicts"].append((f"+{more:,} rows more (1 commit)", verdict(cfg, catalog)))
            expected_after = checksum(spark, name)
            assert expected_after[0] == rows + small + more

            refreshed = table_state(catalog)["snapshot"]
            res["refresh"] = stats_runs(
                spark,
                cfg,
                catalog,
                name,
                clock,
                args.runs,
                lambda: drop_statistics(spark, name, catalog, only=refreshed),
                expected_after,
            )
            res["verdicts"].append(("after the refresh", verdict(cfg, catalog)))
            res["refreshed"] = table_state(catalog)
            print(f"refresh compute_stats: {res['refresh']['median']['total']:.1f} s (median)")

        # beside it: partition statistics from nothing at the same snapshot (a direct CALL)
        full = []
        for _ in range(args.runs):
            drop_statistics(spark, name, catalog)
            started = time.perf_counter()
            spark.sql(
                f"CALL {cfg.catalog.name}.system.compute_partition_stats(table => '{IDENT}', "
                f"snapshot_id => {refreshed})"
            ).collect()
            full.append(time.perf_counter() - started)
        res["partition_full_s"] = statistics.median(full)
        res["partition_full_runs"] = full
        res["final"] = table_state(catalog)
        res["final_rows_ok"] = checksum(spark, name) == expected_after
        res["rows"], res["stats_snapshot"] = rows, stats_snapshot
    finally:
        spark.stop()
    return res


# ---- the report -----------------------------------------------------------------------
def _ratio(a: float, b: float) -> float:
    return a / b if b else float("inf")


def report(args: argparse.Namespace, res: dict[str, Any], wall: float) -> dict[str, Any]:
    comp = res["compaction_s"]
    first, refresh = res["first"]["median"], res["refresh"]["median"]
    n = args.runs
    print(f"\nseconds (compaction: one run; statistics: medians of {n})")
    head = f"{'':46}{'seconds':>10}{'x compaction':>14}"
    print(head + "\n" + "-" * len(head))
    lines = [
        ("compaction (rewrite_data_files, rewrite-all)", comp),
        ("compute_stats, first (icefloe, all of it)", first["total"]),
        ("  compute_table_stats (Puffin NDV)", first["table"]),
        ("  compute_partition_stats (from nothing)", first["partition"]),
        ("  icefloe's own (loads, facts, verify)", first["icefloe"]),
        ("compute_stats, refresh (icefloe, all of it)", refresh["total"]),
        ("  compute_table_stats (Puffin NDV, again)", refresh["table"]),
        ("  compute_partition_stats (incremental)", refresh["partition"]),
        ("  icefloe's own (loads, facts, verify)", refresh["icefloe"]),
        ("compute_partition_stats from nothing, same snap.", res["partition_full_s"]),
    ]
    for label, secs in lines:
        print(f"{label:46}{secs:>10.2f}{_ratio(secs, comp):>13.3f}x")
    for what in ("first", "refresh"):
        runs = res[what]["runs"]
        print(
            f"  {what} runs: total "
            + ", ".join(f"{s:.2f}" for s in runs["total"])
            + "; table "
            + ", ".join(f"{s:.2f}" for s in runs["table"])
            + "; partition "
            + ", ".join(f"{s:.2f}" for s in runs["partition"])
        )
    print(
        "  partition stats from nothing: "
        + ", ".join(f"{s:.2f}" for s in res["partition_full_runs"])
    )

    fc, rc = res["first"]["checks"][-1], res["refresh"]["checks"][-1]
    data = res["compacted"]["data_bytes"]
    print("\nmetadata the statistics add (the last run's files)")
    head = f"{'':40}{'first':>18}{'refresh':>18}"
    print(head + "\n" + "-" * len(head))
    for label, a, b in (
        ("Puffin (table statistics) bytes", fc["puffin_bytes"], rc["puffin_bytes"]),
        ("partition statistics bytes", fc["partition_stats_bytes"], rc["partition_stats_bytes"]),
        (
            "metadata JSON bytes, before -> after",
            "{} -> {}".format(*fc["metadata_json"]),
            "{} -> {}".format(*rc["metadata_json"]),
        ),
        (
            "snapshots before -> after",
            "{} -> {}".format(*fc["snapshots"]),
            "{} -> {}".format(*rc["snapshots"]),
        ),
        ("rows and checksum unchanged", str(fc["rows_ok"]), str(rc["rows_ok"])),
    ):
        print(f"{label:40}{a!s:>18}{b!s:>18}")
    added = fc["puffin_bytes"] + fc["partition_stats_bytes"]
    print(
        f"data: {data:,} bytes in {res['compacted']['data_files']} files; statistics files "
        f"{added:,} bytes ({added / data:.5%} of the data)"
    )
    print(
        f"every run: snapshots and current snapshot unchanged, rows and checksum unchanged, "
        f"icefloe's check passed: first {res['first']['ok']}, refresh {res['refresh']['ok']}; "
        f"table still holds its rows at the end: {res['final_rows_ok']}"
    )

    print(f"\nthe rule (stats_changed_ratio {res['verdicts'][0][1]['ratio']}):")
    for label, v in res["verdicts"]:
        print(
            f"  {label:38} {v['changed_rows']:>10,} of {v['rows']:>10,} changed "
            f"({v['share']:6.1%}): {'DUE' if v['due'] else 'not due'} ({v['reason']})"
        )
    print(
        "  (no statistics yet: the changed rows are every snapshot's added and deleted rows, "
        "a compaction's twice; the rule is due on the absence alone)"
    )

    print("\nNDV sketch (Puffin) against exact distinct counts:")
    ids = {c: i + 1 for i, c in enumerate(COLUMNS)}
    for c in COLUMNS:
        sketch, exact = res["ndv"].get(ids[c], -1), res["exact_ndv"][c]
        off = _ratio(sketch, exact) - 1
        print(f"  {c:10} sketch {sketch:>10,}  exact {exact:>10,}  ({off:+.2%})")

    summary = {
        "rows": res["rows"],
        "partitions": args.partitions,
        "commits": args.commits,
        "runs": n,
        "data_bytes": data,
        "compaction_s": round(comp, 3),
        "stats_first_s": round(first["total"], 3),
        "stats_first_table_s": round(first["table"], 3),
        "stats_first_partition_s": round(first["partition"], 3),
        "stats_refresh_s": round(refresh["total"], 3),
        "stats_refresh_table_s": round(refresh["table"], 3),
        "stats_refresh_partition_s": round(refresh["partition"], 3),
        "partition_full_s": round(res["partition_full_s"], 3),
        "first_vs_compaction": round(_ratio(first["total"], comp), 4),
        "refresh_vs_compaction": round(_ratio(refresh["total"], comp), 4),
        "puffin_bytes": fc["puffin_bytes"],
        "partition_stats_bytes": fc["partition_stats_bytes"],
        "snapshots_added": sum(b - a for a, b in (fc["snapshots"], rc["snapshots"])),
        "verdicts": [v["due"] for _, v in res["verdicts"]],
        "rows_ok": bool(res["first"]["ok"] and res["refresh"]["ok"] and res["final_rows_ok"]),
        "wall_s": round(wall),
    }
    print("stats-summary " + json.dumps(summary))
    return summary


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--rows", type=int, help="rows the INSERTs write (default 2,000,000)")
    p.add_argument("--partitions", type=int, default=24, help="day partitions")
    p.add_argument("--commits", type=int, default=20, help="INSERTs building the table")
    p.add_argument("--runs", type=int, default=3, help="runs of each statistics timing")
    p.add_argument("--small-share", type=float, default=0.05, help="the first append's rows")
    p.add_argument(
        "--cross-share", type=float, default=0.22, help="changed share after the second append"
    )
    p.add_argument("--quick", action="store_true", help="200,000 rows")
    args = p.parse_args()
    args.rows = args.rows or (200_000 if args.quick else 2_000_000)
    return args


def main() -> None:
    args = parse_args()
    started = time.perf_counter()
    home = Path(tempfile.mkdtemp(prefix="icefloe-stats-bench-"))
    try:
        res = run(args, home)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    summary = report(args, res, time.perf_counter() - started)
    if not summary["rows_ok"] or summary["snapshots_added"]:
        raise SystemExit("compute_stats changed the table's rows or snapshots")
    if summary["verdicts"] != [True, False, False, True, False]:
        raise SystemExit(f"unexpected verdicts {summary['verdicts']}")


if __name__ == "__main__":
    main()
