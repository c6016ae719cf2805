"""Benchmark: a streaming table's maintenance, blind on a schedule or decided by icefloe.

    .venv/bin/python bench/maintenance_bench.py [--quick] [--redis redis://127.0.0.1:6379/14]
                                               [--commits 500] [--target-kb 128]
                                               [--decide-every 10] [--blind-every 50]
                                               [--min-manifests 16] [--verbose]

One stream (``bench/maintenance_stream.py``: small PyIceberg appends into a ``day``
partition, a few late rows for the day before, and every ``--delete-every``-th commit a
merge-on-read ``DELETE`` through Spark SQL) is applied commit by commit to three identical
tables, one per arm:

* ``none``: no maintenance at all;
* ``blind``: after every ``--blind-every`` commits, Iceberg's procedures called as a cron
  job would, each with its defaults: ``rewrite_data_files`` (binpack, the same target),
  ``rewrite_position_delete_files``, ``rewrite_manifests``, ``expire_snapshots``,
  ``remove_orphan_files``;
* ``icefloe``: after every ``--decide-every`` commits (a decider polling every 10 s, its
  default, on a stream committing every second), one ``Decider.step`` and the real Spark
  actor (``run_actor``) for whatever it dispatched. Its policy: the same target, the
  default tolerance (a third), actions ``merge``, ``rewrite_manifests``,
  ``remove_orphan_files``, ``expire_snapshots`` and ``compact_deletes`` when the config
  accepts it; ``maintenance.min_manifests`` 16 (a third of the blind cron's 50 commits) and
  ``min_input_files`` 12 (a streaming table's setting: Amoro's ``minor.trigger.file-count``;
  icefloe's default is Iceberg's 5, which on a stream committing every second merges the
  partition being written at every decision).

The tables set ``commit.manifest-merge.enabled=false`` (``--writer-merges-manifests``
leaves Iceberg's default): otherwise every Spark DELETE past 100 manifests merges them
itself, and no arm shows what maintenance does to manifests.

At the end (right after both arms' last scheduled maintenance), per arm: the current
snapshot's manifests and their bytes, the metadata JSON, data and delete files; query
planning (medians: a fresh PyIceberg ``load_table`` + ``scan().plan_files()``, Spark
``count()`` on a fresh DataFrame, and Spark's scan planning alone: the input partitions of
``SELECT *``); a full-scan read (every row and column hashed: also the row-set checksum
every arm must share with the stream's model); and the maintenance bill: seconds (the
procedures' calls; the actors' ``run_actor`` calls, the decider's own time shown apart)
and bytes rewritten, read back from the ``replace`` snapshots. The planning figures are
also sampled over the stream (after every ``--sample-every``-th commit, a prime: the
samples fall evenly over both arms' maintenance cycles), as readers meet them. The goals
(issue #20) are printed beside the ratios icefloe / blind, on the stream's means and at
the end: the end is the blind arm's best moment (its cron has just run), the stream mean
is what a reader pays on average.

Uses its own Redis db (default 14) and key prefix, and a temporary warehouse; cleans up.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import maintenance_stream as stream_mod  # noqa: E402
import redis  # noqa: E402
from maintenance_stream import Append, Commit, StreamShape  # noqa: E402

from icefloe.base.catalog import load_catalog, spark_table_name  # noqa: E402
from icefloe.base.config import Config, build_config  # noqa: E402
from icefloe.base.errors import ConfigError  # noqa: E402
from icefloe.base.partition_key import display_key  # noqa: E402

ARMS = ("none", "blind", "icefloe")
BLIND = (
    "rewrite_data_files",
    "rewrite_position_delete_files",
    "rewrite_manifests",
    "expire_snapshots",
    "remove_orphan_files",
)
ICEFLOE_ACTIONS = ["merge", "rewrite_manifests", "remove_orphan_files", "expire_snapshots"]
GOALS = {"planning": 1.2, "maintenance": 0.5, "read": 1.1}  # icefloe / blind, at most
FAR_BETTER = 2.0  # "far better than no maintenance": none / arm, at least


def bench_raw(
    home: Path, url: str, prefix: str, args: argparse.Namespace, actions: list[str]
) -> dict[str, Any]:
    return {
        "catalog": {"uri": f"sqlite:///{home}/catalog.db", "warehouse": f"file://{home}/wh"},
        "redis": {"url": url, "key_prefix": prefix},
        "spark": {
            "master": "local[2]",
            "conf": {
                "spark.sql.shuffle.partitions": "4",
                "spark.default.parallelism": "4",
                "spark.ui.enabled": "false",
                "spark.driver.memory": "2g",
            },
        },
        "defaults": {  # tolerance: the default third of the target
            "target_file_size_bytes": args.target_kb * 1024,
            "actions": actions,
            "maintenance": {"min_manifests": args.min_manifests},
            **({"min_input_files": args.min_input_files} if args.min_input_files else {}),
        },
        "managed": {"tables": ["bench.icefloe"]},
        "decider": {"ready_depth": 1000},
    }


def bench_config(home: Path, url: str, prefix: str, args: argparse.Namespace) -> Config:
    """With ``compact_deletes`` among the actions once the config accepts it."""
    try:
        actions = [*ICEFLOE_ACTIONS, "compact_deletes"]
        return build_config(bench_raw(home, url, prefix, args, actions), "<bench>", home)
    except ConfigError as e:
        if "compact_deletes" not in str(e):
            raise
        print(f"note: compact_deletes left out of icefloe's actions ({e})")
    return build_config(bench_raw(home, url, prefix, args, ICEFLOE_ACTIONS), "<bench>", home)


class Ledger:
    """Maintenance seconds and runs per action of one arm."""

    def __init__(self) -> None:
        self.seconds = 0.0  # what the goal counts
        self.by_action: dict[str, list[float]] = {}
        self.failures: list[str] = []
        self.other = 0.0  # the decider's own seconds (not maintenance work)

    def add(self, action: str, seconds: float) -> None:
        self.by_action.setdefault(action, []).append(seconds)


class Blind:
    """Iceberg's procedures, all of them, every ``every`` commits."""

    def __init__(self, spark: Any, cfg: Config, ident: str, target: int, every: int):
        self.spark, self.cfg, self.ident, self.every = spark, cfg, ident, every
        self.options = f"options => map('target-file-size-bytes', '{target}')"
        self.ledger = Ledger()

    def call(self, procedure: str) -> None:
        args = f"table => '{self.ident}'"
        if procedure == "rewrite_data_files":
            args += ", " + self.options
        started = time.perf_counter()
        self.spark.sql(f"CALL {self.cfg.catalog.name}.system.{procedure}({args})").collect()
        spent = time.perf_counter() - started
        self.ledger.seconds += spent
        self.ledger.add(procedure, spent)

    def after(self, i: int) -> None:
        if i % self.every == 0:
            for procedure in BLIND:
                self.call(procedure)


class Icefloe:
    """The decider every ``every`` commits, then the Spark actor for what it dispatched."""

    def __init__(self, spark: Any, cfg: Config, client: Any, catalog: Any, ident: str, every: int):
        from icefloe.service.actor.runners import spark_runner
        from icefloe.service.decider.wiring import open_decider

        self.spark, self.cfg, self.every = spark, cfg, every
        self.decider = open_decider(cfg, catalog, client, tables=lambda: [ident])
        self.ledger = Ledger()
        self.bytes_reported = 0
        inner = spark_runner(cfg, spark)

        def runner(item: Any, guard: Any) -> dict[str, Any]:
            started = time.perf_counter()
            try:
                out = inner(item, guard)
            except Exception as e:
                self.ledger.failures.append(f"{item.action}: {type(e).__name__}: {e}"[:300])
                raise
            finally:
                self.ledger.add(item.action, time.perf_counter() - started)
            self.note(item, out)
            return out

        self.runner = runner
        self.phases: dict[str, float] = {}  # merges' seconds by phase (icefloe.jobs.data.optimize)
        self.engines: dict[str, int] = {}
        self.verbose = False

    def note(self, item: Any, out: dict[str, Any]) -> None:
        self.bytes_reported += int(out.get("bytes_rewritten") or 0)
        for phase, secs in (out.get("timings") or {}).items():
            self.phases[phase] = self.phases.get(phase, 0.0) + float(secs)
        done = [p for p in out.get("partitions") or [] if p.get("status") == "rewritten"]
        for p in done:
            self.engines[p.get("engine") or "?"] = self.engines.get(p.get("engine") or "?", 0) + 1
        if self.verbose:
            print(
                f"    {item.action} {display_key(item.partition)}: "
                f"{out.get('files_rewritten', 0)} files, "
                f"{int(out.get('bytes_rewritten') or 0) >> 10} KiB, "
                f"{out.get('delete_files_removed', 0)} delete files removed, "
                f"{out.get('seconds')} s {out.get('timings') or ''}"
            )

    def after(self, i: int) -> None:
        from icefloe.service.actor.loop import run_actor

        if i % self.every:
            return
        started = time.perf_counter()
        self.decider.step(block_ms=None, dispatch_all=True)
        self.ledger.other += time.perf_counter() - started
        if not self.decider.queue.depth().get("ready"):
            return
        started = time.perf_counter()
        run_actor(self.cfg, max_actions=None, idle_exit=0, spark=self.spark, runner=self.runner)
        self.ledger.seconds += time.perf_counter() - started


# ---- measurements -----------------------------------------------------------------------
CHECKSUM = (
    "SELECT count(*) AS n, "
    "sum(CAST(xxhash64(id, day, user_id, payload, value) AS DECIMAL(38, 0))) AS h FROM {}"
)


def plan_seconds(catalog: Any, ident: str) -> float:
    """A fresh reader's planning: load the table, plan every file scan task."""
    started = time.perf_counter()
    tasks = list(catalog.load_table(ident).scan().plan_files())
    spent = time.perf_counter() - started
    assert tasks, ident
    return spent


def spark_count(spark: Any, name: str) -> float:
    started = time.perf_counter()
    spark.table(name).count()
    return time.perf_counter() - started


def spark_planning(spark: Any, name: str) -> float:
    """Spark's scan planning alone: the input partitions of ``SELECT *`` (Iceberg plans
    its tasks), no job run."""
    started = time.perf_counter()
    spark.table(name)._jdf.queryExecution().executedPlan().execute().getNumPartitions()
    return time.perf_counter() - started


def count_from_metadata(spark: Any, name: str) -> bool:
    """Did Iceberg answer ``count()`` from the manifests (aggregate push-down)?"""
    plan = spark.table(name).groupBy().count()._jdf.queryExecution().executedPlan().toString()
    return "LocalTableScan" in plan


def full_read(spark: Any, name: str) -> tuple[float, tuple[int, int]]:
    """Every row and column read and hashed: seconds, and (rows, the row set's checksum)."""
    started = time.perf_counter()
    row = spark.sql(CHECKSUM.format(name)).collect()[0]
    return time.perf_counter() - started, (int(row["n"]), int(row["h"] or 0))


def measure_queries(spark: Any, cfg: Config, catalog: Any, ident: str) -> None:
    name = spark_table_name(cfg, ident)
    plan_seconds(catalog, ident)
    spark_count(spark, name)
    spark_planning(spark, name)
    full_read(spark, name)


def metadata_figures(table: Any) -> dict[str, float]:
    """The current snapshot's metadata: manifests, their bytes, files; the metadata JSON."""
    io, snap = table.io, table.current_snapshot()
    manifests = snap.manifests(io)
    summary = snap.summary
    return {
        "snapshots": len(table.metadata.snapshots),
        "data_files": int(summary.get("total-data-files", 0)),
        "delete_files": int(summary.get("total-delete-files", 0)),
        "manifests": len(manifests),
        "delete_manifests": sum(1 for m in manifests if int(m.content) == 1),
        "manifest_bytes": sum(m.manifest_length for m in manifests),
        "manifest_list_bytes": len(io.new_input(snap.manifest_list)),
        "metadata_json_bytes": len(io.new_input(table.metadata_location)),
    }


def rewritten(table: Any) -> dict[str, float]:
    """What maintenance rewrote, from the ``replace`` snapshots (none was expired): data
    and delete file bytes replaced, and the bytes of the manifests each dropped."""
    io, meta = table.io, table.metadata
    data = manifests = 0
    for snap in meta.snapshots:
        if snap.summary is None or snap.summary.operation.value != "replace":
            continue
        data += int(snap.summary.get("removed-files-size", 0) or 0)
        parent = meta.snapshot_by_id(snap.parent_snapshot_id) if snap.parent_snapshot_id else None
        if parent is not None:
            kept = {m.manifest_path for m in snap.manifests(io)}
            manifests += sum(
                m.manifest_length for m in parent.manifests(io) if m.manifest_path not in kept
            )
    return {"data_rewritten": data, "manifests_rewritten": manifests}


def measure(spark: Any, cfg: Config, catalog: Any, runs: int, reads: int) -> dict[str, Any]:
    """Planning and read medians per arm, the runs interleaved across the arms."""
    got: dict[str, dict[str, Any]] = {
        a: {"plan": [], "count": [], "splan": [], "read": [], "checksums": set()} for a in ARMS
    }
    names = {a: spark_table_name(cfg, f"bench.{a}") for a in ARMS}
    for _ in range(runs):
        for a in ARMS:
            got[a]["plan"].append(plan_seconds(catalog, f"bench.{a}"))
            got[a]["count"].append(spark_count(spark, names[a]))
            got[a]["splan"].append(spark_planning(spark, names[a]))
    for _ in range(reads):
        for a in ARMS:
            secs, checksum = full_read(spark, names[a])
            got[a]["read"].append(secs)
            got[a]["checksums"].add(checksum)
    out: dict[str, Any] = {}
    for a in ARMS:
        g = got[a]
        out[a] = {k: statistics.median(g[k]) for k in ("plan", "count", "splan", "read")}
        out[a]["checksums"] = g["checksums"]
        out[a]["count_from_metadata"] = count_from_metadata(spark, names[a])
        table = catalog.load_table(f"bench.{a}")
        out[a] |= metadata_figures(table) | rewritten(table)
    return out


# ---- the run ----------------------------------------------------------------------------
def run_stream(
    stream: list[Commit],
    arms: dict[str, Any],
    apply: Callable[[Commit, str], None],
    plan: Callable[[str], dict[str, float]],
    sample: int,
) -> tuple[dict[str, dict[str, float]], dict[str, list[dict[str, float]]]]:
    """Every commit to every arm, each arm's maintenance right after; the writer's seconds
    per arm (appends, deletes), and planning (PyIceberg, Spark) sampled after every
    ``sample``-th commit's maintenance: with ``sample`` prime to both arms' periods, the
    samples fall evenly over their cycles (right after a run, halfway, just before), so
    their mean is what a reader meets on average over the stream."""
    ingest = {a: {"append": 0.0, "delete": 0.0} for a in arms}
    samples: dict[str, list[dict[str, float]]] = {a: [] for a in arms}
    started, n = time.perf_counter(), len(stream)
    for i, commit in enumerate(stream, 1):
        kind = "append" if isinstance(commit, Append) else "delete"
        for arm, maintainer in arms.items():
            t0 = time.perf_counter()
            apply(commit, arm)
            ingest[arm][kind] += time.perf_counter() - t0
            if maintainer is not None:
                maintainer.after(i)
        if sample and i % sample == 0:
            for arm in arms:
                samples[arm].append(plan(arm))
        if i % max(1, n // 10) == 0:
            print(f"  commit {i}/{n}  {time.perf_counter() - started:.0f} s", flush=True)
    return ingest, samples


def warm_up(spark: Any, cfg: Config, catalog: Any, args: argparse.Namespace) -> None:
    """Class loading and JIT of every code path timed below, paid once on scratch tables."""
    from icefloe.jobs.data.optimize import optimize_table
    from icefloe.jobs.maintenance.run import run_table_action

    shape = StreamShape(commits=14, rows=50, per_day=7, delete_every=12, seed=99)
    props = stream_mod.table_properties(args.target_kb * 1024, args.writer_merges_manifests)
    for name in ("bench.warm_b", "bench.warm_i"):
        stream_mod.create(catalog, name, props)
        for c in stream_mod.generate(shape):
            stream_mod.apply(c, catalog, spark, name, spark_table_name(cfg, name))
    Blind(spark, cfg, "bench.warm_b", args.target_kb * 1024, 1).after(1)
    optimize_table(spark, cfg, "bench.warm_i")
    run_table_action(spark, cfg, "bench.warm_i", "rewrite_manifests")
    measure_queries(spark, cfg, catalog, "bench.warm_i")


# ---- the report -------------------------------------------------------------------------
KIB, MS = 1 / 1024, 1000.0
ROWS = [  # label, key, scale, format
    ("snapshots", "snapshots", 1, "{:.0f}"),
    ("data files", "data_files", 1, "{:.0f}"),
    ("delete files", "delete_files", 1, "{:.0f}"),
    ("manifests", "manifests", 1, "{:.0f}"),
    ("  of them delete manifests", "delete_manifests", 1, "{:.0f}"),
    ("manifest KiB", "manifest_bytes", KIB, "{:.1f}"),
    ("manifest list KiB", "manifest_list_bytes", KIB, "{:.1f}"),
    ("metadata JSON KiB", "metadata_json_bytes", KIB, "{:.1f}"),
    ("PyIceberg plan_files ms", "plan", MS, "{:.1f}"),
    ("  stream mean ms", "plan_stream", MS, "{:.1f}"),
    ("Spark count() ms", "count", MS, "{:.1f}"),
    ("  stream mean ms", "count_stream", MS, "{:.1f}"),
    ("Spark scan planning ms", "splan", MS, "{:.1f}"),
    ("  stream mean ms", "splan_stream", MS, "{:.1f}"),
    ("full-scan read ms", "read", MS, "{:.1f}"),
    ("  stream mean ms", "read_stream", MS, "{:.1f}"),
    ("maintenance s", "maint_s", 1, "{:.1f}"),
    ("maintenance runs", "maint_runs", 1, "{:.0f}"),
    ("data+delete KiB rewritten", "data_rewritten", KIB, "{:.0f}"),
    ("manifest KiB rewritten", "manifests_rewritten", KIB, "{:.0f}"),
    ("decider s (not counted)", "decider_s", 1, "{:.1f}"),
    ("writer: appends s", "appends_s", 1, "{:.1f}"),
    ("writer: DELETEs s", "deletes_s", 1, "{:.1f}"),
]


def _ratio(a: float, b: float) -> float:
    return a / b if b else float("inf") if a else 1.0


def print_table(res: dict[str, Any]) -> None:
    head = f"{'':28}" + "".join(f"{a:>14}" for a in ARMS)
    print(head + "\n" + "-" * len(head))
    for label, key, scale, fmt in ROWS:
        cells = "".join(
            f"{fmt.format(res[a][key] * scale):>14}" if key in res[a] else f"{'-':>14}"
            for a in ARMS
        )
        print(f"{label:28}{cells}")
    pushed = [a for a in ARMS if res[a]["count_from_metadata"]]
    print(
        "Spark count(): answered from the manifests (aggregate push-down) on "
        f"{', '.join(pushed) or 'no arm'}; elsewhere delete files force a scan of the files"
    )


def print_breakdown(ledgers: dict[str, Ledger]) -> None:
    for arm, ledger in ledgers.items():
        parts = [
            f"{action} {len(secs)}x {sum(secs):.1f} s" for action, secs in ledger.by_action.items()
        ]
        print(f"{arm} maintenance: " + ("; ".join(parts) or "nothing ran"))
        for failure in ledger.failures:
            print(f"  FAILED {failure}")


def print_goals(res: dict[str, Any]) -> dict[str, float]:
    """The issue's goals, icefloe / blind, on what readers meet over the stream (the mean
    of the samples) and the maintenance seconds of the whole stream; the figures right
    after the last commit are shown beside them: that is the blind cron's best moment
    (it has just run), one point of its saw-tooth, not what a reader meets on average."""
    ice, blind = res["icefloe"], res["blind"]
    checks = [
        ("PyIceberg planning", "plan_stream", "planning"),
        ("Spark count()", "count_stream", "planning"),
        ("maintenance seconds", "maint_s", "maintenance"),
        ("full-scan read", "read_stream", "read"),
    ]
    ratios, met = {}, []
    print(
        f"\nicefloe / blind vs the goals (the stream's means: {ice['samples']} samples, every "
        "arm sampled after the same commits; the maintenance bill of the whole stream):"
    )
    for label, key, goal in checks:
        r = _ratio(ice[key], blind[key])
        ok = r <= GOALS[goal]
        met.append(ok)
        ratios[key] = r
        print(f"  {label:28} {r:6.2f}x  goal <= {GOALS[goal]}x  {'met' if ok else 'MISSED'}")
    print("  beside them, no goals ('end': right after the last commit, the blind cron's best):")
    for label, key in (
        ("PyIceberg planning, end", "plan"),
        ("Spark count(), end", "count"),
        ("full-scan read, end", "read"),
        ("data+delete bytes rewritten", "data_rewritten"),
        ("manifest bytes rewritten", "manifests_rewritten"),
        ("Spark scan planning, stream", "splan_stream"),
        ("Spark scan planning, end", "splan"),
    ):
        ratios[key] = _ratio(ice[key], blind[key])
        print(f"  {label:28} {ratios[key]:6.2f}x  (no goal)")
    none = res["none"]
    print(f"no maintenance / arm (goal: both far better, >= {FAR_BETTER}x on planning):")
    for key, label in (("plan", "plan_files"), ("count", "count()"), ("read", "read")):
        rb, ri = _ratio(none[key], blind[key]), _ratio(none[key], ice[key])
        verdict = "(no goal)"
        if key != "read":
            ok = min(rb, ri) >= FAR_BETTER
            met.append(ok)
            verdict = "met" if ok else "MISSED"
        print(f"  {label:12} none/blind {rb:6.2f}x  none/icefloe {ri:6.2f}x  {verdict}")
    ratios["goals_met"] = float(sum(met))
    ratios["goals"] = float(len(met))
    return ratios


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[1])
    p.add_argument("--redis", default="redis://127.0.0.1:6379/14")
    p.add_argument("--quick", action="store_true", help="100 commits, fewer timing runs")
    p.add_argument("--commits", type=int, help="default 500 (--quick: 100)")
    p.add_argument("--per-day", type=int, help="commits per day partition (default 100/50)")
    p.add_argument("--delete-every", type=int, default=20, help="a DELETE every N commits")
    p.add_argument("--rows", type=int, default=200, help="rows per append")
    p.add_argument("--target-kb", type=int, default=128)
    p.add_argument("--blind-every", type=int, default=50)
    p.add_argument("--decide-every", type=int, default=10)
    p.add_argument("--min-manifests", type=int, default=16, help="icefloe's maintenance key")
    p.add_argument(
        "--min-input-files", type=int, default=12, help="icefloe's key (0: the policy's, 5)"
    )
    p.add_argument(
        "--sample-every", type=int, default=7, help="stream planning samples (prime); 0: off"
    )
    p.add_argument("--runs", type=int, help="planning runs per arm (default 7, --quick 5)")
    p.add_argument("--reads", type=int, help="full-scan reads per arm (default 3)")
    p.add_argument("--verbose", action="store_true", help="one line per icefloe action")
    p.add_argument(
        "--writer-merges-manifests",
        action="store_true",
        help="leave commit.manifest-merge.enabled at Iceberg's default (true): every Spark "
        "DELETE past 100 manifests then merges them itself",
    )
    args = p.parse_args()
    args.commits = args.commits or (100 if args.quick else 500)
    args.per_day = args.per_day or (50 if args.quick else 100)
    args.runs = args.runs or (5 if args.quick else 7)
    args.reads = args.reads or 3
    return args


def run(args: argparse.Namespace, home: Path, prefix: str, stream: list[Commit]) -> dict:
    from icefloe.base.spark import build_spark

    cfg = bench_config(home, args.redis, prefix, args)
    print(f"icefloe's actions: {', '.join(cfg.defaults.actions)}")
    catalog = load_catalog(cfg)
    catalog.create_namespace("bench")
    spark = build_spark(cfg, app_name="icefloe-maintenance-bench")
    spark.sparkContext.setLogLevel("ERROR")
    client = redis.Redis.from_url(args.redis)
    try:
        t0 = time.perf_counter()
        warm_up(spark, cfg, catalog, args)
        print(f"warm-up {time.perf_counter() - t0:.0f} s")
        props = stream_mod.table_properties(args.target_kb * 1024, args.writer_merges_manifests)
        for arm in ARMS:
            stream_mod.create(catalog, f"bench.{arm}", props)
        maint: dict[str, Any] = {
            "none": None,
            "blind": Blind(spark, cfg, "bench.blind", args.target_kb * 1024, args.blind_every),
            "icefloe": Icefloe(spark, cfg, client, catalog, "bench.icefloe", args.decide_every),
        }
        maint["icefloe"].verbose = args.verbose

        def apply(commit: Commit, arm: str) -> None:
            ident = f"bench.{arm}"
            stream_mod.apply(commit, catalog, spark, ident, spark_table_name(cfg, ident))

        def plan(arm: str) -> dict[str, float]:
            """One stream sample; Spark's count() and the full read only on the arms the
            goals compare."""
            ident, name = f"bench.{arm}", spark_table_name(cfg, f"bench.{arm}")
            got = {"plan": plan_seconds(catalog, ident), "splan": spark_planning(spark, name)}
            if arm != "none":
                got["count"] = spark_count(spark, name)
                got["read"] = full_read(spark, name)[0]
            return got

        ingest, samples = run_stream(stream, maint, apply, plan, args.sample_every)
        t0 = time.perf_counter()
        res = measure(spark, cfg, catalog, args.runs, args.reads)
        print(f"measured in {time.perf_counter() - t0:.0f} s")
    finally:
        spark.stop()
        for key in client.scan_iter(match=f"{prefix}*", count=1000):
            client.delete(key)
        client.close()
    ledgers = {a: m.ledger for a, m in maint.items() if m is not None}
    for a in ARMS:
        res[a]["appends_s"], res[a]["deletes_s"] = ingest[a]["append"], ingest[a]["delete"]
        for key in ("plan", "splan", "count", "read"):
            got = [x[key] for x in samples[a] if key in x]
            if got:
                res[a][f"{key}_stream"] = statistics.fmean(got)
        res[a]["samples"] = len(samples[a])
        ledger = ledgers.get(a, Ledger())
        res[a]["maint_s"] = ledger.seconds
        res[a]["maint_runs"] = sum(len(s) for s in ledger.by_action.values())
        if a == "icefloe":
            res[a]["decider_s"] = ledger.other
    res["ledgers"] = ledgers
    res["icefloe_bytes_reported"] = maint["icefloe"].bytes_reported
    res["icefloe_phases"] = maint["icefloe"].phases
    res["icefloe_engines"] = maint["icefloe"].engines
    return res


def main() -> None:
    args = parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    shape = StreamShape(
        commits=args.commits, rows=args.rows, per_day=args.per_day, delete_every=args.delete_every
    )
    stream = stream_mod.generate(shape)
    appends = sum(isinstance(c, Append) for c in stream)
    expected = stream_mod.live_rows(stream)
    print(
        f"stream: {args.commits} commits ({appends} appends of ~{args.rows} rows, "
        f"{args.commits - appends} merge-on-read DELETEs), a new day partition every "
        f"{args.per_day} commits; target {args.target_kb} KiB; blind every "
        f"{args.blind_every} commits, icefloe's decider every {args.decide_every}"
    )
    started = time.perf_counter()
    home = Path(tempfile.mkdtemp(prefix="icefloe-maintenance-bench-"))
    try:
        res = run(args, home, f"icefloe-mbench-{os.getpid()}", stream)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    wall = time.perf_counter() - started
    print(
        f"\n{args.commits} commits, medians of {args.runs} planning runs and {args.reads} "
        f"reads per arm; bench wall time {wall:.0f} s"
    )
    print_table(res)
    print_breakdown(res["ledgers"])
    phases = ", ".join(f"{k} {v:.1f} s" for k, v in res["icefloe_phases"].items())
    engines = ", ".join(f"{k} {v}" for k, v in res["icefloe_engines"].items())
    print(f"icefloe merges by phase: {phases}; partitions written by engine: {engines}")
    print(
        "no snapshot here is an hour old, no file a day: neither arm expires snapshots or "
        "removes orphans (Iceberg's defaults: older than 5 days, 3 days; icefloe's floors: "
        "1 h, 24 h and its policy's 5 days, 3 days); the blind arm still pays for the calls"
    )
    sums = {a: res[a]["checksums"] for a in ARMS}
    same = len(set().union(*sums.values())) == 1
    rows = {n for s in sums.values() for n, _ in s}
    print(
        f"row sets: {'identical' if same else 'DIFFERENT'} across the arms "
        f"({', '.join(f'{a} {sorted(sums[a])}' for a in ARMS) if not same else sorted(rows)[0]} "
        f"rows; the stream's model: {expected})"
    )
    print(f"icefloe actions' own report: {res['icefloe_bytes_reported'] / 1024:.0f} KiB rewritten")
    ratios = print_goals(res)
    ok = same and rows == {expected}
    print(
        "maintenance-summary "
        + " ".join(f"{k}={v:.3f}" for k, v in ratios.items())
        + f" rows_ok={int(ok)} wall_s={wall:.0f}"
    )
    if not ok:
        raise SystemExit("the arms do not give the stream's answer")


if __name__ == "__main__":
    main()
