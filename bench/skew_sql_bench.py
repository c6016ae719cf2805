"""Benchmark: the skew rule of icefloe's Spark SQL extension vs plain Spark (issue #49).

Not a test: a script that builds its OWN SparkSession (local[2], UI on for the REST API,
icefloe's extension jar on ``spark.jars``), writes a skewed fact table and a dimension as
Iceberg tables, stores the fact table's hot-key report in its table property
``icefloe.skew.hot-keys.k`` (``icefloe.optimizer.skew_report``) and runs plain SQL:

* ``left_dim_fact``: dimension LEFT JOIN fact, the skewed side on the right (AQE cannot
  split the preserved side; the rule asks which hot keys the fact table holds),
* ``left_fact_dim``: fact LEFT JOIN dimension (the salted side is the preserved one),
* ``full_outer``: fact FULL OUTER JOIN dimension (the same question),
* ``group_by``: count, sum, avg by the hot key.

Each with the rule on and off (``SET spark.icefloe.skew.enabled``) in the same session;
for ``group_by`` "on" also sets ``spark.icefloe.skew.aggregates=true`` (the rule leaves
GROUP BY alone by default). AQE on with its skew join on (Spark's thresholds), broadcast
joins off (a dimension this small would be broadcast, and there would be no skew to
handle), partition coalescing off (as in ``bench/skew_bench.py``: else AQE merges the
small partitions into one or two tasks). Every query runs twice each way first
(``--warmup``), untimed but for the first run's wall (``1st s``): a first run compiles
its plan's generated code, and the JIT warms over the first runs of a session. The code
cache is sized to keep every plan's code; each size prints how many classes the timed
runs compiled (0: none recompiled). Each rep runs every query on and off back to back
(alternating which goes first); figures are medians over the reps, and ``wall on/off`` is
the median of the reps' own on/off ratios (the JSON also has the ratio of the medians).
Per query the "stage" is
the one that read the most shuffle bytes (``icefloe.jobs.skew.stage_metrics``): the max and
median time of its tasks that read the shuffle (an isolated join's hot part runs in that
stage too, as map-side join tasks over the fact table's splits: counted and shown apart);
``task-s`` sums every task of the query; ``mk16`` is the makespan its task times would
have on 16 slots (LPT, stages one after another, as in ``bench/skew_bench.py``). What is
timed is ``SELECT count(*), sum(CAST(xxhash64(*) AS DECIMAL(38, 0))) FROM (<query>)``:
every run checks its result (row count, order-free checksum) against every other run of
the query, rule on or off, and that the rule fired or not (``SkewRule.rewrites()``).

Fact data of ``demo`` (the demo's skew section: 1 M rows, 20,000 keys) and ``large``
(4 M rows, 200,000 keys): 30% of rows on key 0, 10% on key 1 (absent from the
dimension), 5% on key 2, 8% NULL, the rest spread over the dimension's keys. ``heavy``
(4 M rows, 200,000 keys): 70% on key 0, the rest spread: the one size where the hot key's
task dominates its stage on 2 slots (a stage takes at least half its task time there).
The dimension has 1,000 keys more that the fact table never holds; 16 shuffle
partitions; the fact table is 8 data files, one scan task each. Per size it also prints
the partitions of the join's shuffle (Spark's ``pmod(hash(k, salt), n)``) the hot keys'
salts land on, the max/median partition rows that predicts, and times the presence
subqueries (a ``LIMIT 1`` for one hot key, a ``collect_set`` for more) on their own: what
the rule runs for the keys it cannot find in the fact table's files on the driver
(``DriverProbe``; all of them with ``--conf spark.icefloe.skew.probeFiles=0``).

Last, the planning figure of issue #61 (``--planning-keys``, 100,000): an inner join's
planning time (nothing runs) over a table whose report lists that many keys, rule on and
off, side by side (``--sizes ''`` for it alone).

    .venv/bin/python bench/skew_sql_bench.py [--sizes demo,large,heavy]
        [--large-rows 4000000] [--reps 3] [--partitions 16] [--json out.json]
        [--planning-keys 100000]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from icefloe.base.versions import (  # noqa: E402
    PROJECT_ROOT,
    extensions_jar,
    is_extensions_jar,
    local_jars,
    sql_extensions,
)
from icefloe.jobs.skew.stage_metrics import Meter, reads_shuffle  # noqa: E402
from icefloe.optimizer import skew_report  # noqa: E402
from icefloe.optimizer.skew_stats import makespan  # noqa: E402

NS = "skewsql"
ENABLED = "spark.icefloe.skew.enabled"
AGGREGATES = "spark.icefloe.skew.aggregates"  # off by default: the bench's group_by sets it
# Spark's own AQE settings (skew join on, factor 5, 256 MB); coalescing off, see the doc
AQE = {
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.adaptive.coalescePartitions.enabled": "false",
    "spark.sql.adaptive.skewJoin.enabled": "true",
}
QUERIES = {
    "left_dim_fact": (
        "SELECT d.k AS dk, d.name, f.id, f.v, f.note "
        f"FROM lake.{NS}.dim d LEFT JOIN lake.{NS}.fact f ON d.k = f.k"
    ),
    "left_fact_dim": (
        "SELECT f.id, f.k AS fk, f.v, f.note, d.name "
        f"FROM lake.{NS}.fact f LEFT JOIN lake.{NS}.dim d ON f.k = d.k"
    ),
    "full_outer": (
        "SELECT f.id, f.k AS fk, f.v, d.k AS dk, d.name "
        f"FROM lake.{NS}.fact f FULL OUTER JOIN lake.{NS}.dim d ON f.k = d.k"
    ),
    "group_by": (
        "SELECT k, count(*) AS n, sum(v) AS s, avg(v) AS a, max(id) AS m "
        f"FROM lake.{NS}.fact GROUP BY k"
    ),
}
# per size: fact rows, dimension keys, percent of the fact rows per hot key (None: NULL)
Hot = tuple[tuple[int | None, int], ...]
MIXED: Hot = ((0, 30), (1, 10), (2, 5), (None, 8))
SIZES: dict[str, tuple[int, int, Hot]] = {
    "demo": (1_000_000, 20_000, MIXED),
    "large": (4_000_000, 200_000, MIXED),
    "heavy": (4_000_000, 200_000, ((0, 70),)),
}
SLOTS = 16  # the simulated cluster
FILES = 8  # the fact table's data files, one scan task each
GOALS = (
    "max/median <= 2.0x where AQE leaves >= 3x; wall < 1.0x where the skewed task "
    "dominates (heavy), <= 1.1x (demo)"
)


class StageMeter(Meter):
    """:class:`Meter`'s job group and REST reading, for a query whose one-row result is
    collected; reports the main stage's max and median task time, every task's time and
    the simulated makespan on :data:`SLOTS` slots (stages one after another)."""

    def collect(self, name: str, df: Any, conf: dict[str, str]) -> dict[str, Any]:
        for k, v in conf.items():
            self.spark.conf.set(k, v)
        self.n += 1
        group = f"bench-{self.n}"
        self.sc.setJobGroup(group, name)
        compiled = self.compiles()
        start = time.perf_counter()
        (row,) = df.collect()
        wall = time.perf_counter() - start
        return {
            "wall": wall,
            "rows": int(row[0]),
            "checksum": str(row[1]),
            "compiles": self.compiles() - compiled,
            **self.stages(group),
        }

    def compiles(self) -> int:
        """Classes Spark's code generator has compiled in this JVM so far."""
        metrics = self.spark._jvm.org.apache.spark.metrics.source.CodegenMetrics
        return int(metrics.METRIC_COMPILATION_TIME().getCount())

    def stages(self, group: str) -> dict[str, Any]:
        time.sleep(1.0)  # let the listener bus deliver the last task-end events
        tracker = self.sc.statusTracker()
        ids = {
            s
            for j in tracker.getJobIdsForGroup(group)
            if (info := tracker.getJobInfo(j)) is not None
            for s in info.stageIds
        }
        stages = []
        for sid in sorted(ids):
            try:
                attempts = self._get(f"/stages/{sid}")
            except Exception:
                continue  # skipped stages (a reused shuffle) have no attempt
            for att in attempts:
                if att.get("status") != "COMPLETE":
                    continue
                tasks = self._get(f"/stages/{sid}/{att['attemptId']}/taskList?length=1000000")
                timed = [t for t in tasks if "duration" in t]
                if timed:
                    stages.append((sum(_shuffle_read(t) for t in tasks), timed))
        if not stages:
            return {"max": 0.0, "median": 0.0, "ratio": 0.0, "tasks": 0, "task_s": 0.0}
        _, main = max(stages, key=lambda s: (s[0], sum(t["duration"] for t in s[1])))
        # the join's tasks: those reading its shuffle. An isolated join's hot part runs in
        # the same stage as scan tasks (a map-side join over the reported table's splits,
        # no shuffle read): they are the scan's even splits, reported apart
        joins = [t["duration"] / 1000 for t in main if reads_shuffle(t)]
        scans = [t["duration"] / 1000 for t in main if not reads_shuffle(t)]
        durs = joins or scans
        med = statistics.median(durs)
        every = [[t["duration"] / 1000 for t in ts] for _, ts in stages]
        return {
            "max": max(durs),
            "median": med,
            "ratio": max(durs) / med if med > 0 else float("inf"),
            "tasks": len(durs),
            "scan_tasks": len(scans) if joins else 0,
            "scan_max": max(scans) if joins and scans else 0.0,
            "task_s": sum(sum(d) for d in every),
            "stages": len(stages),
            "makespan": sum(makespan(d, SLOTS) for d in every),
        }


def _shuffle_read(task: dict[str, Any]) -> int:
    m = task.get("taskMetrics", {}).get("shuffleReadMetrics", {})
    return int(m.get("remoteBytesRead", 0)) + int(m.get("localBytesRead", 0))


def session_jars() -> list[str]:
    """``.jars/``, with the extension jar from ``jvm/target`` when ``.jars/`` has none."""
    jars = local_jars()
    if not any(is_extensions_jar(j) for j in jars):
        built = PROJECT_ROOT / "jvm" / "target" / extensions_jar()
        if not built.is_file():
            sys.exit(f"no extension jar in .jars/ nor {built}: cd jvm && mvn -q -B package")
        jars.append(str(built))
    return jars


def build_session(partitions: int) -> Any:
    from icefloe.base.config import build_config
    from icefloe.base.spark import build_spark

    home = Path(tempfile.mkdtemp(prefix="icefloe-skew-sql-bench-"))
    cfg = build_config(
        {
            "catalog": {
                "uri": f"sqlite:///{home}/catalog.db",
                "warehouse": f"file://{home}/warehouse",
            },
            "redis": {"url": "redis://127.0.0.1:6379/15"},
            "spark": {"master": "local[2]"},
        },
        source="<bench>",
        home=home,
    )
    jars = session_jars()
    return build_spark(
        cfg,
        "icefloe-skew-sql-bench",
        {
            "spark.jars": ",".join(jars),
            "spark.sql.extensions": sql_extensions(jars),
            "spark.ui.enabled": "true",
            "spark.ui.port": "0",
            "spark.driver.memory": "3g",
            "spark.sql.shuffle.partitions": str(partitions),
            "spark.sql.autoBroadcastJoinThreshold": "-1",  # measure shuffle joins
            "spark.ui.retainedTasks": "1000000",
            "spark.ui.retainedStages": "10000",
            # the reps cycle through eight plans per size: with Spark's default cache of
            # 100 generated classes, each plan's code is evicted before it runs again and
            # the first task on each core recompiles it (2-8 classes, 0.1-0.3 s a run:
            # the rule's plans, with more operators, lose more). Sized so the warm-up
            # compiles every plan once; each run prints what it compiled
            "spark.sql.codegen.cache.maxEntries": "2000",
        },
    )


def make_tables(spark: Any, rows: int, dim_keys: int, hot: Hot) -> None:
    """The skewed fact table (``hot``: percent of rows per key) and the dimension."""
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS lake.{NS}")
    branches, upto = [], 0
    for key, percent in hot:
        upto += percent
        value = "NULL" if key is None else key
        branches.append(f"WHEN b < {upto} THEN CAST({value} AS BIGINT)")
    spark.sql(
        f"""CREATE OR REPLACE TABLE lake.{NS}.fact USING iceberg
        TBLPROPERTIES ('read.split.target-size' = '{4 << 20}') AS
        SELECT CASE {" ".join(branches)}
                    ELSE pmod(xxhash64(id), {dim_keys - 3}) + 3 END AS k,
               id, id % 1000 AS v, concat('receipt-', id) AS note
        FROM (SELECT id, id % 100 AS b FROM range(0, {rows}, 1, {FILES}))"""
    )
    spark.sql(
        f"""CREATE OR REPLACE TABLE lake.{NS}.dim USING iceberg AS
        SELECT id AS k, concat('user-', id) AS name FROM range({dim_keys + 1000}) WHERE id != 1"""
    )


def store_report(spark: Any, salt_factor: float) -> skew_report.HotKeyReport:
    """The fact table's exact hot-key report of ``k`` (keys of >= 1% of the rows), stored
    in its table property as ``icefloe skew detect`` would. ``salt_factor`` != 1 is an
    experiment: the stored ``rows`` divided by it, so the rule gives each key that many
    times more salts (``ceil(key rows / (rows / partitions))``: a key of under one
    partition's share, left alone at 1, is salted at 2); returned as stored."""
    fact = f"lake.{NS}.fact"
    snapshot = spark.sql(
        f"SELECT snapshot_id FROM {fact}.snapshots ORDER BY committed_at DESC LIMIT 1"
    ).first()[0]
    total, nulls = spark.sql(f"SELECT count(*), count_if(k IS NULL) FROM {fact}").first()
    counts = spark.sql(
        f"SELECT k, count(*) AS n FROM {fact} WHERE k IS NOT NULL GROUP BY k "
        f"HAVING count(*) >= {total} / 100 ORDER BY n DESC"
    ).collect()
    report = skew_report.build(
        "k",
        "bigint",
        snapshot,
        int(time.time() * 1000),
        86_400_000,
        total,
        nulls,
        [(r["k"], r["n"]) for r in counts],
    )
    report = dataclasses.replace(report, rows=round(total / salt_factor))
    spark.sql(
        f"ALTER TABLE {fact} SET TBLPROPERTIES ('{report.name}' = '{skew_report.encode(report)}')"
    )
    return report


def salts_for(key_rows: int, report: skew_report.HotKeyReport, partitions: int) -> int:
    """The rule's salts of a key (``HotKeyReport.saltsFor`` in ``jvm/``): a key over an
    average partition's rows is cut into chunks of (the rows of every such key and NULL) /
    partitions, 2 to ``maxSalts`` (32) of them."""
    average = max(1.0, max(report.rows, 1) / max(partitions, 1))
    if key_rows <= average:
        return 1
    spread = sum(n for n in (*(n for _, n in report.keys), report.null_rows) if n > average)
    most = max(2, int(EXTRA.get("spark.icefloe.skew.maxSalts", "32")))  # a --conf may set it
    return min(most, max(2, math.ceil(key_rows / max(1.0, spread / max(partitions, 1)))))


def rule_salt_values(partition_of: list[int], n: int, load: list[int]) -> list[int]:
    """``n`` salt values of one key as the rule picks them (``SaltValues.spread`` in
    ``jvm/``): candidates in order, each time the first untaken one on the least loaded
    partition; ``partition_of[s]`` is salt ``s``'s partition, ``load`` counts chunks per
    partition over the report's keys so far (updated)."""
    taken: set[int] = set()
    out = []
    for _ in range(n):
        best = min(
            (s for s in range(len(partition_of)) if s not in taken),
            key=lambda s: (load[partition_of[s]], s),
        )
        taken.add(best)
        load[partition_of[best]] += 1
        out.append(best)
    return out


def predicted_spread(spark: Any, report: skew_report.HotKeyReport, total: int, parts: int) -> dict:
    """The join's shuffle partitions as the report predicts them: the reported keys' (and
    NULL's) rows where Spark's ``hashpartitioning`` puts them (``pmod(hash(k[, salt]), n)``),
    every other row spread evenly; max/median partition rows plain, salted with salts
    ``0..n-1`` (the rule before it picked them), and salted as the rule now salts
    (:func:`rule_salt_values`, keys in the report's order, then NULL)."""
    chunks = {v: n for v, n in report.keys} | {"NULL": report.null_rows}
    salts = {v: salts_for(n, report, parts) for v, n in chunks.items()}
    even = (total - sum(chunks.values())) / parts
    loads = {name: [even] * parts for name in ("plain", "0..n-1", "rule")}
    chunk_load = [0] * parts
    where = {}
    hashed = {}
    for value in chunks:
        candidates = max(64, min(4096, 4 * parts + salts[value]))
        hashed[value] = spark.sql(
            f"SELECT pmod(hash(CAST({value} AS BIGINT)), {parts}), "
            f"transform(sequence(0, {candidates - 1}), "
            f"s -> pmod(hash(CAST({value} AS BIGINT), s), {parts}))"
        ).first()
        if salts[value] < 2 and value != "NULL":
            chunk_load[hashed[value][1][0]] += 1  # the rule counts a key left alone first
    for value, n in chunks.items():
        p, ps = hashed[value]
        loads["plain"][p] += n
        if salts[value] < 2:  # left alone: salt 0, in the salted join as in any other
            loads["0..n-1"][ps[0]] += n
            loads["rule"][ps[0]] += n
            continue
        for q in ps[: salts[value]]:
            loads["0..n-1"][q] += n / salts[value]
        values = rule_salt_values(list(ps), salts[value], chunk_load)
        where[value] = [ps[v] for v in values]
        for q in where[value]:
            loads["rule"][q] += n / salts[value]
    out: dict[str, Any] = {k: max(v) / statistics.median(v) for k, v in loads.items()}
    return {**out, "partitions": where}


def rewrites(spark: Any) -> int:
    return int(spark._jvm.dev.icefloe.spark.SkewRule.rewrites())


def checked(sql: str) -> str:
    """``sql``'s row count and order-free checksum (the sum of each row's hash): the query
    that is timed, so every run is checked."""
    return f"SELECT count(*), sum(CAST(xxhash64(*) AS DECIMAL(38, 0))) FROM ({sql}) AS {NS}_result"


def presence_probes(keys: list[str]) -> str:
    """What an isolated join asks of the reported side's rows when the other side keeps
    unmatched rows and the driver found no key in the files (``Presence.held`` in ``jvm/``):
    one key, a ``LIMIT 1`` probe; more, the set of the hot keys the column holds."""
    if len(keys) == 1:
        return f"SELECT k FROM lake.{NS}.fact WHERE k = {keys[0]} LIMIT 1"
    return f"SELECT collect_set(k) FROM lake.{NS}.fact WHERE k IN ({', '.join(map(str, keys))})"


EXTRA: dict[str, str] = {}  # --conf: more Spark settings for every run


def conf_of(case: str, variant: str) -> dict[str, str]:
    """AQE as in the module doc; the rule on or off; GROUP BY salting only for its "on"."""
    on = variant == "on"
    return {
        **AQE,
        **EXTRA,
        ENABLED: str(on).lower(),
        AGGREGATES: str(on and case == "group_by").lower(),
    }


def run_size(spark: Any, meter: StageMeter, size: str, args: argparse.Namespace) -> dict:
    rows, dim_keys, hot = SIZES[size]
    if size == "large":
        rows, dim_keys = args.large_rows, args.large_dim_keys
    t = time.perf_counter()
    make_tables(spark, rows, dim_keys, hot)
    report = store_report(spark, args.salt_factor)
    spread = predicted_spread(spark, report, rows, args.partitions)
    print(
        f"\n== {size}: fact {rows:,} rows ({FILES} files), dimension {dim_keys + 999:,} keys, "
        f"{args.partitions} shuffle partitions, local[2] (tables written in "
        f"{time.perf_counter() - t:.0f}s)\n   report: "
        + ", ".join(
            f"{k} {n / rows:.0%} ({salts_for(n, report, args.partitions)} salts)"
            for k, n in [*report.keys, ("NULL", report.null_rows)]
            if n > 0
        )
        + (f"; salt factor {args.salt_factor}" if args.salt_factor != 1 else "")
        + "\n   join partitions of the rule's salts: "
        + ", ".join(f"{k} → {ps}" for k, ps in spread["partitions"].items())
        + f"\n   predicted max/median partition rows: plain {spread['plain']:.2f}x, "
        f"salts 0..n-1 {spread['0..n-1']:.2f}x, the rule's salts {spread['rule']:.2f}x"
    )
    cases = [c for c in QUERIES if c in args.cases]
    presence = checked(presence_probes([str(k) for k, _ in report.keys]))
    scans: list[dict[str, Any]] = []
    # warm-up, untimed: --warmup rounds of every query both ways (class loading, the JIT,
    # each plan's generated code, Iceberg metadata), so no rep times a first run
    cold: dict[tuple[str, str], float] = {}
    for _ in range(args.warmup):
        for case in cases:
            for variant in ("off", "on"):
                df = spark.sql(checked(QUERIES[case]))
                wall = meter.collect("warm-up", df, conf_of(case, variant))["wall"]
                cold.setdefault((case, variant), wall)
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {c: {"off": [], "on": []} for c in cases}
    for rep in range(args.reps):
        for case in cases:
            for variant in ("off", "on") if rep % 2 == 0 else ("on", "off"):
                before = rewrites(spark)
                df = spark.sql(checked(QUERIES[case]))
                r = meter.collect(f"{size} {case} {variant}", df, conf_of(case, variant))
                r["fired"] = rewrites(spark) > before
                runs[case][variant].append(r)
        # what the presence probes of the FULL and LEFT dim⟕fact rewrites cost on their own
        scans.append(meter.collect("presence probes", spark.sql(presence), {ENABLED: "false"}))
    scan = {k: statistics.median(r[k] for r in scans) for k in ("wall", "task_s")}
    print(
        f"   presence subqueries alone (rule off; the rule runs them only with probeFiles=0): wall "
        f"{scan['wall']:.2f}s, {scan['task_s']:.1f} task-s\n   generated classes compiled in "
        "the timed runs (0: each ran its warm-up's code): "
        + ", ".join(
            f"{v} {sum(r['compiles'] for c in cases for r in runs[c][v])}" for v in ("off", "on")
        )
    )
    print(
        f"   {'query':<14} {'rule':<4} {'1st s':>5} {'wall s':>6} {'max task':>8} {'median':>6} "
        f"{'max/med':>7} {'tasks':>5} {'task-s':>6} {'mk' + str(SLOTS):>6}  {'rows':>10}  "
        f"{'wall on/off':>11} {'mk on/off':>9}  result"
    )
    out: dict[str, Any] = {
        "rows": rows,
        "dim_keys": dim_keys + 999,
        "report": {"keys": report.keys, "null_rows": report.null_rows},
        "predicted": spread,
        "presence_scan": scan,
        "cases": {},
    }
    for case in cases:
        entry: dict[str, Any] = {}
        for variant in ("off", "on"):
            rs = runs[case][variant]
            m = {
                k: statistics.median(r[k] for r in rs)
                for k in ("wall", "max", "median", "ratio", "task_s", "makespan")
            }
            m["tasks"] = max(r["tasks"] for r in rs)
            m["scan_tasks"] = max(r.get("scan_tasks", 0) for r in rs)
            m["scan_max"] = statistics.median(r.get("scan_max", 0.0) for r in rs)
            m["stages"] = max(r.get("stages", 0) for r in rs)
            m["fired"] = all(r["fired"] for r in rs)
            m["walls"] = [round(r["wall"], 2) for r in rs]
            m["first_wall"] = cold.get((case, variant), math.nan)  # --warmup 0: none
            m["compiles"] = sum(r["compiles"] for r in rs)
            m["results"] = sorted({(r["rows"], r["checksum"]) for r in rs})
            entry[variant] = m
        results = {x for v in ("off", "on") for x in entry[v]["results"]}
        entry["equal"] = len(results) == 1
        # each rep runs the two back to back: the median of their ratios cancels the
        # machine's drift over the run, which a ratio of the two medians keeps
        pairs = zip(runs[case]["on"], runs[case]["off"], strict=True)
        paired = [on["wall"] / off["wall"] for on, off in pairs]
        entry["wall_ratio"] = statistics.median(paired)
        entry["wall_ratios"] = [round(r, 2) for r in paired]
        entry["wall_ratio_of_medians"] = entry["on"]["wall"] / entry["off"]["wall"]
        entry["makespan_ratio"] = entry["on"]["makespan"] / entry["off"]["makespan"]
        out["cases"][case] = entry
        for variant in ("off", "on"):
            m = entry[variant]
            fired_ok = m["fired"] == (variant == "on")
            print(
                f"   {case if variant == 'off' else '':<14} {variant:<4} {m['first_wall']:5.2f} "
                f"{m['wall']:6.2f} "
                f"{m['max']:8.2f} {m['median']:6.2f} {m['ratio']:6.2f}x {m['tasks']:5d} "
                f"{m['task_s']:6.1f} {m['makespan']:6.2f}  {m['results'][0][0]:10,}  "
                + (
                    f"{entry['wall_ratio']:10.2f}x {entry['makespan_ratio']:8.2f}x  "
                    + ("equal" if entry["equal"] else "DIFFER")
                    if variant == "on"
                    else f"{'':>10}  {'':>8}   "
                )
                + ("" if fired_ok else " (rule fired: " + str(m["fired"]) + ")")
                + (
                    f"; +{m['scan_tasks']} map-side join tasks (max {m['scan_max']:.2f}s)"
                    if m["scan_tasks"]
                    else ""
                )
            )
    return out


PLANNED = (
    f"SELECT f.id, f.k AS fk, d.name FROM lake.{NS}.plan_fact f JOIN lake.{NS}.dim d ON f.k = d.k"
)


def plan_seconds(spark: Any, sql: str, on: bool) -> float:
    """Wall of planning ``sql`` (analysis, optimization with the rule on or off, the
    physical plan): nothing runs."""
    spark.conf.set(ENABLED, str(on).lower())
    t = time.perf_counter()
    spark.sql(sql)._jdf.queryExecution().sparkPlan()
    return time.perf_counter() - t


def planning(spark: Any, keys: int, reps: int) -> dict[str, Any]:
    """Issue #61: the planning time of an inner join over a table whose hot-key report
    lists ``keys`` keys (valid: the table's own hot keys, then made-up ones of one row
    each), with the rule on and off. The rule uses the 64 heaviest and parses the report
    once per (table, property value): the first plan after the report is written pays
    the parse, the others find it parsed. Medians over ``reps`` plannings each way."""
    fact = f"lake.{NS}.plan_fact"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS lake.{NS}")
    spark.sql(
        f"CREATE OR REPLACE TABLE {fact} USING iceberg AS SELECT CASE WHEN id % 10 < 4 "
        "THEN 0L ELSE id % 1000 END AS k, id FROM range(100000)"
    )
    if not spark.catalog.tableExists(f"lake.{NS}.dim"):
        spark.sql(
            f"CREATE TABLE lake.{NS}.dim USING iceberg AS SELECT id AS k, "
            "concat('user-', id) AS name FROM range(2000)"
        )
    snapshot = spark.sql(f"SELECT snapshot_id FROM {fact}.snapshots").first()[0]
    made_up = [(10_000_000 + i, 1) for i in range(keys)]
    report = skew_report.build(
        "k", "bigint", snapshot, int(time.time() * 1000), 86_400_000, 100_000, 0, [(0, 40_000)]
    )
    # past build's MAX_KEYS on purpose: a report as big as anyone may write
    report = dataclasses.replace(report, keys=(*report.keys, *((str(v), n) for v, n in made_up)))
    value = skew_report.encode(report)
    jtable = spark._jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(
        spark._jsparkSession, fact
    )
    jtable.updateProperties().set(report.name, value).commit()
    before = rewrites(spark)
    first_on = plan_seconds(spark, PLANNED, True)
    fired = rewrites(spark) > before
    first_off = plan_seconds(spark, PLANNED, False)
    on: list[float] = []
    off: list[float] = []
    for i in range(reps):
        pair = [(True, on), (False, off)]
        for flag, out in pair if i % 2 == 0 else pair[::-1]:
            out.append(plan_seconds(spark, PLANNED, flag))
    spark.conf.set(ENABLED, "true")
    result = {
        "keys": keys,
        "property_bytes": len(value.encode()),
        "fired": fired,
        "first_on_s": first_on,
        "first_off_s": first_off,
        "on_s": statistics.median(on),
        "off_s": statistics.median(off),
    }
    result["ratio"] = result["on_s"] / result["off_s"]
    result["first_ratio"] = first_on / first_off
    print(
        f"\n== planning (issue #61): inner join, a report of {keys:,} keys "
        f"({result['property_bytes'] / 1e6:.1f} MB), rule fired: {fired}\n"
        f"   first plan after the report: on {first_on:.3f}s  off {first_off:.3f}s  "
        f"on/off {result['first_ratio']:.2f}\n"
        f"   median of {reps}:               on {result['on_s']:.3f}s  off {result['off_s']:.3f}s  "
        f"on/off {result['ratio']:.2f}  (goal <= 2)"
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="demo,large,heavy", help="of demo, large, heavy")
    parser.add_argument("--large-rows", type=int, default=SIZES["large"][0])
    parser.add_argument("--large-dim-keys", type=int, default=SIZES["large"][1])
    parser.add_argument("--partitions", type=int, default=16, help="spark.sql.shuffle.partitions")
    parser.add_argument("--reps", type=int, default=3, help="runs per variant (medians)")
    parser.add_argument(
        "--warmup", type=int, default=2, help="untimed rounds of every query both ways first"
    )
    parser.add_argument("--cases", default=",".join(QUERIES), help="queries to run")
    parser.add_argument(
        "--salt-factor", type=float, default=1.0, help="experiment: about this many times the salts"
    )
    parser.add_argument("--json", metavar="PATH", help="write every figure as JSON here")
    parser.add_argument(
        "--planning-keys",
        type=int,
        default=100_000,
        help="keys of the report whose join's planning is timed (0: no planning figure)",
    )
    parser.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark setting for every run (e.g. spark.icefloe.skew.isolateMaxBytes=-1)",
    )
    args = parser.parse_args()
    args.cases = [c.strip() for c in args.cases.split(",")]
    EXTRA.update(kv.split("=", 1) for kv in args.conf)
    started = time.perf_counter()
    spark = build_session(args.partitions)
    meter = StageMeter(spark)
    sizes = [s for s in args.sizes.split(",") if s]
    results: dict[str, Any] = {s: run_size(spark, meter, s, args) for s in sizes}
    planned = planning(spark, args.planning_keys, 9) if args.planning_keys > 0 else None
    spark.stop()
    print(f"\ngoals (issue #49): {GOALS}; total {time.perf_counter() - started:.0f}s")
    summary = " ".join(
        f"{size}.{case}=wall:{c['wall_ratio']:.2f},"
        f"max/med:{c['on']['ratio']:.2f}/{c['off']['ratio']:.2f}"
        for size, r in results.items()
        for case, c in r["cases"].items()
    )
    equal = all(c["equal"] for r in results.values() for c in r["cases"].values())
    if planned is not None:
        summary += f" planning.{planned['keys']}keys=on/off:{planned['ratio']:.2f}"
    print(f"skew-sql-summary {summary} all_equal={str(equal).lower()}")
    if args.json:
        out = {**results, "planning": planned}
        Path(args.json).write_text(json.dumps(out, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
