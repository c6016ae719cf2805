"""Benchmark: salted joins/aggregations vs Spark's adaptive execution on skewed data.

Not a test: a script that builds its OWN SparkSession (local[2], UI on for the REST API),
runs every query variant in one process and prints side-by-side figures, then one
``skew-summary`` line. Per query it reads the stages of its job group from the status
tracker and the per-task metrics from the REST API (``/stages/<id>/<attempt>/taskList``):
task durations and shuffle bytes read. The "join stage" is the stage that read the most
shuffle bytes; max/median is over its tasks. Makespan on 16/64 slots is simulated from
the measured task durations (LPT schedule, stages run one after another).

Variants: ``default`` (AQE as shipped), ``tuned`` (AQE with small skew thresholds and
advisory size), ``salted`` (icefloe.jobs.skew on the default settings with its automatic strategy:
isolate-and-broadcast for the inner join, salting for the rest; it replaces AQE's skew
split, which would otherwise re-split the salted partitions). Plus a non-skewed join
(guardrail overhead on Iceberg tables: salted_join taking the stored skew report, and with
automatic detection, vs the plain join) and hot-key detection on Zipf data (sampled vs
exact counts).

    .venv/bin/python bench/skew_bench.py [--rows 4000000] [--reps 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from icefloe.jobs.skew.aggregate import salted_aggregate  # noqa: E402
from icefloe.jobs.skew.hot_keys import detect_hot_keys  # noqa: E402
from icefloe.jobs.skew.salting import plan_salted_join, salted_join  # noqa: E402
from icefloe.jobs.skew.stage_metrics import Meter  # noqa: E402

# Coalescing is off in every variant: on inputs this small AQE would merge all shuffle
# partitions into one or two tasks and there would be no task distribution to measure.
DEFAULT_AQE = {
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.adaptive.coalescePartitions.enabled": "false",
    "spark.sql.adaptive.skewJoin.enabled": "true",
    "spark.sql.adaptive.skewJoin.skewedPartitionFactor": "5",
    "spark.sql.adaptive.skewJoin.skewedPartitionThresholdInBytes": "256MB",
    "spark.sql.adaptive.advisoryPartitionSizeInBytes": "64MB",
}
TUNED_AQE = {
    **DEFAULT_AQE,
    "spark.sql.adaptive.skewJoin.skewedPartitionFactor": "2",
    "spark.sql.adaptive.skewJoin.skewedPartitionThresholdInBytes": "256KB",
    "spark.sql.adaptive.advisoryPartitionSizeInBytes": "256KB",
}


def bench_config(home: Path) -> Any:
    """A throw-away warehouse (JDBC catalog on SQLite) for the tables the guardrail reads."""
    from icefloe.base.config import build_config

    return build_config(
        {
            "catalog": {
                "uri": f"sqlite:///{home}/catalog.db",
                "warehouse": f"file://{home}/warehouse",
            },
            "redis": {"url": "redis://127.0.0.1:6379/15"},
            "spark": {"master": "local[2]"},
            "defaults": {"target_file_size_bytes": 128 << 20, "tolerance_bytes": 0},
        },
        source="<bench>",
        home=home,
    )


def build_session(partitions: int, cfg: Any = None) -> Any:
    from icefloe.base.spark import build_spark

    if cfg is None:
        cfg = bench_config(Path(tempfile.mkdtemp(prefix="icefloe-skew-bench-")))
    return build_spark(
        cfg,
        "icefloe-skew-bench",
        {
            "spark.ui.enabled": "true",
            "spark.driver.memory": "3g",
            "spark.sql.shuffle.partitions": str(partitions),
            "spark.sql.autoBroadcastJoinThreshold": "-1",  # measure shuffle joins
            "spark.ui.retainedTasks": "1000000",
            "spark.sql.execution.arrow.pyspark.enabled": "true",
            "spark.ui.retainedStages": "10000",
        },
    )


def make_data(spark: Any, rows: int, hot_share: float, dim_keys: int) -> tuple[Any, Any]:
    """A fact table with ``hot_share`` of its rows on key 0, and a dimension of keys."""
    from pyspark.sql import functions as F

    hot = int(hot_share * 100)
    fact = spark.range(rows).select(
        F.when(F.col("id") % 100 < hot, F.lit(0))
        .otherwise(F.pmod(F.xxhash64("id"), F.lit(dim_keys - 1)) + 1)
        .alias("k"),
        F.col("id").alias("v"),
        (F.col("id") % 1000).alias("g"),
    )
    dim = spark.range(dim_keys).select(F.col("id").alias("k"), (F.col("id") * 7).alias("w"))
    return fact.persist(), dim.persist()


def line(r: dict[str, Any]) -> str:
    return (
        f"  {r['name']:<34} wall {r['wall']:7.2f}s  tasks {r['tasks']:4d}  "
        f"max/median {r['max_over_median']:6.2f}  max read {r['max_read_mb']:7.2f} MiB  "
        f"makespan16 {r['makespan16']:7.2f}s  makespan64 {r['makespan64']:7.2f}s"
    )


def zipf_detection(spark: Any, rows: int) -> tuple[float, float, list[str]]:
    import numpy as np

    out, precisions, recalls = [], [], []
    for s in (1.1, 1.5, 2.0):
        keys = np.random.default_rng(11).zipf(s, rows).astype("int64")
        import pandas as pd

        df = spark.createDataFrame(pd.DataFrame({"k": keys})).persist()
        df.count()
        exact = {h.key for h in detect_hot_keys(df, "k", method="exact").hot}
        t = time.perf_counter()
        approx = {
            h.key
            for h in detect_hot_keys(
                df, "k", method="sample", sample_rows=max(1000, rows // 20)
            ).hot
        }
        took = time.perf_counter() - t
        both = len(exact & approx)
        p = both / len(approx) if approx else 1.0
        r = both / len(exact) if exact else 1.0
        precisions.append(p)
        recalls.append(r)
        out.append(
            f"  zipf s={s}: exact hot keys {len(exact)}, sampled {len(approx)}, "
            f"precision {p:.3f} recall {r:.3f}, sampled detection {took:.2f}s"
        )
        df.unpersist()
    return min(precisions), min(recalls), out


def measure_guardrail(spark: Any, meter: Any, args: argparse.Namespace) -> dict[str, float]:
    """Overhead of salted_join on a join WITHOUT skew (the guardrail must pick the plain join).

    Two Iceberg tables, as in production. ``report``: the way the skew DAG runs it, the
    detect task stored a report for the table's snapshot and the join looks it up (the
    lookup is inside the timed span). ``auto``: no report, salted_join samples the input
    itself first. Alternating runs, medians; overhead = median / plain median - 1.
    """
    from icefloe.base.catalog import load_catalog
    from icefloe.jobs.skew.detect import detect_table, stored_hot_keys

    cfg = args.cfg
    catalog = load_catalog(cfg)
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.bench")
    spark.range(args.rows).selectExpr(f"id % {args.dim_keys} as k", "id as v").writeTo(
        "lake.bench.even"
    ).createOrReplace()
    spark.range(args.dim_keys).selectExpr("id as k", "id * 7 as w").writeTo(
        "lake.bench.dim"
    ).createOrReplace()
    report = detect_table(spark, cfg, catalog, "bench.even", ["k"])
    assert not report["keys"]["k"]["hot_keys"], report["keys"]["k"]
    even, dim = spark.table("lake.bench.even"), spark.table("lake.bench.dim")
    times: dict[str, list[float]] = {"plain": [], "report": [], "auto": []}
    print("guardrail (no skew, Iceberg tables): plain join vs salted_join, alternating")
    for i in range(max(5, args.reps)):
        plain = meter.run(f"even plain {i}", even.join(dim, "k"), DEFAULT_AQE)
        times["plain"].append(plain["wall"])
        for how in ("report", "auto"):
            t = time.perf_counter()
            hot = stored_hot_keys(catalog, "bench.even", "k") if how == "report" else None
            df, decision = plan_salted_join(even, dim, "k", "inner", hot_keys=hot)
            planning = time.perf_counter() - t  # lookup, detection, the guardrail's decision
            # the query's own wall (meter.run's metrics collection afterwards is not timed)
            times[how].append(planning + meter.run(f"even {how} {i}", df, DEFAULT_AQE)["wall"])
            assert not decision.salted, decision
    med = {k: statistics.median(v) for k, v in times.items()}
    pct = {k: (med[k] / med["plain"] - 1) * 100 for k in ("report", "auto")}
    print(
        f"  plain {med['plain']:.2f}s  with stored report {med['report']:.2f}s "
        f"(overhead {pct['report']:.1f}%)  auto-detect {med['auto']:.2f}s "
        f"(overhead {pct['auto']:.1f}%); decision: plain join"
    )
    return pct


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=4_000_000)
    parser.add_argument("--dim-keys", type=int, default=200_000)
    parser.add_argument("--partitions", type=int, default=32)
    parser.add_argument("--reps", type=int, default=5, help="runs per variant (median)")
    parser.add_argument("--zipf-rows", type=int, default=300_000)
    args = parser.parse_args()
    args.cfg = bench_config(Path(tempfile.mkdtemp(prefix="icefloe-skew-bench-")))
    spark = build_session(args.partitions, args.cfg)
    meter = Meter(spark)
    fact, dim = make_data(spark, args.rows, 0.30, args.dim_keys)
    print(
        f"data: fact {fact.count()} rows (30% on key 0), dim {dim.count()} keys; "
        f"{args.partitions} shuffle partitions, local[2]"
    )
    results: dict[str, dict[str, Any]] = {}

    def variants(label: str, plain: Any, salted: Any) -> None:
        """Each variant ``reps`` times, interleaved; the run with the median wall is shown."""
        print(label)
        runs: dict[str, list[dict[str, Any]]] = {"default": [], "tuned": [], "salted": []}
        for _ in range(args.reps):
            for variant, df, conf in (
                ("default", plain, DEFAULT_AQE),
                ("tuned", plain, TUNED_AQE),
                ("salted", salted, DEFAULT_AQE),
            ):
                runs[variant].append(meter.run(f"{label} {variant}", df, conf))
        for variant, rs in runs.items():
            r = sorted(rs, key=lambda x: x["wall"])[len(rs) // 2]
            results[f"{label}/{variant}"] = r
            print(line(r))

    meter.run("warm-up", fact.join(dim, "k", "inner"), DEFAULT_AQE)  # JIT, class loading
    variants(
        "inner",
        fact.join(dim, "k", "inner"),
        salted_join(fact, dim, "k", "inner", hot_keys=[0], skewed_side="left"),
    )
    variants(
        "left-skewed-right",
        dim.join(fact, "k", "left"),
        salted_join(dim, fact, "k", "left", hot_keys=[0], skewed_side="right"),
    )
    variants(
        "full",
        fact.join(dim, "k", "full"),
        salted_join(fact, dim, "k", "full", hot_keys=[0], skewed_side="left"),
    )
    from pyspark.sql import functions as F

    variants(
        "count-distinct-agg",
        fact.groupBy("k").agg(F.count_distinct("v").alias("n")),
        salted_aggregate(fact, "k", {"n": ("count_distinct", "v")}, hot_keys=[0]),
    )

    guardrail = measure_guardrail(spark, meter, args)
    overhead = guardrail["report"]

    print("hot-key detection on Zipf data (sample-then-verify vs exact counts)")
    t = time.perf_counter()
    detect_hot_keys(fact, "k", method="sample")
    detect_cost = time.perf_counter() - t
    inner_plain = results["inner/default"]["wall"]
    print(
        f"  detection on the fact table: {detect_cost:.2f}s = "
        f"{100 * detect_cost / inner_plain:.0f}% of a plain inner join ({inner_plain:.2f}s)"
    )
    precision, recall, zl = zipf_detection(spark, args.zipf_rows)
    print("\n".join(zl))

    inner_ratio = results["inner/salted"]["wall"] / results["inner/tuned"]["wall"]
    print(
        "skew-summary "
        f"left_join_max_over_median={results['left-skewed-right/salted']['max_over_median']:.2f} "
        f"left_join_aqe_max_over_median="
        f"{results['left-skewed-right/tuned']['max_over_median']:.2f} "
        f"inner_vs_tuned_aqe_time={inner_ratio:.2f} "
        f"agg_max_over_median={results['count-distinct-agg/salted']['max_over_median']:.2f} "
        f"guardrail_overhead_pct={overhead:.1f} "
        f"hot_key_recall={recall:.3f} hot_key_precision={precision:.3f} "
        f"auto_detect_overhead_pct={guardrail['auto']:.1f}"
    )
    spark.stop()


if __name__ == "__main__":
    main()
