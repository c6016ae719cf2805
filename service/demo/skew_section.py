"""The demo's skew section: plant a hot key, detect it, and run the salted LEFT join
against the plain one (identical rows, stage max/median task time)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jobs.skew.detect import detect_table
from jobs.skew.salting import salted_join
from jobs.skew.stage_metrics import Meter
from service.base.catalog import spark_table_name
from service.base.config import Config

Say = Callable[[str], None]


SKEW_CONF = {
    # measure shuffle joins as they are: no broadcast of the small side, no coalescing of
    # the tiny demo partitions into one task; AQE's skew split stays on (the default)
    "spark.sql.autoBroadcastJoinThreshold": "-1",
    "spark.sql.adaptive.coalescePartitions.enabled": "false",
    "spark.sql.shuffle.partitions": "16",
}


def skew_section(
    spark: Any,
    cfg: Config,
    catalog: Any,
    namespace: str,
    say: Say,
    rows: int = 1_000_000,
    hot_share: float = 0.3,
) -> dict[str, Any]:
    """Plant a hot key, detect it, and run the salted LEFT join against the plain one."""
    # pyspark: only where Spark runs (the module loads without it)
    from pyspark.sql import functions as F

    purchases, users = f"{namespace}.purchases", f"{namespace}.users"
    say(f"skew: planting a hot key (user_id 42 in {hot_share:.0%} of {rows:,} purchases)")
    fact = spark.range(rows).select(
        F.when(F.col("id") % 100 < int(hot_share * 100), F.lit(42))
        .otherwise(F.col("id") % 20_000)
        .alias("user_id"),
        (F.col("id") * 7 % 1000 / 10).alias("amount"),
        F.sha2(F.col("id").cast("string"), 256).alias("receipt"),
    )
    dim = spark.range(20_000).select(
        F.col("id").alias("user_id"), F.concat(F.lit("user-"), F.col("id")).alias("name")
    )
    for name, df in ((purchases, fact), (users, dim)):
        df.writeTo(spark_table_name(cfg, name)).using("iceberg").createOrReplace()
    report = detect_table(spark, cfg, catalog, purchases, ["user_id"], refresh=True)
    hot = report["keys"]["user_id"]["hot_keys"]
    say("skew: hot keys found: " + ", ".join(f"{h['key']} ({h['share']:.0%})" for h in hot))
    left = spark.table(spark_table_name(cfg, users))
    right = spark.table(spark_table_name(cfg, purchases))
    meter = Meter(spark)
    plain_df = left.join(right, "user_id", "left")
    salted_df = salted_join(
        left, right, "user_id", "left", hot_keys=[h["key"] for h in hot], skewed_side="right"
    )
    plain = meter.run("plain left join (AQE on)", plain_df, SKEW_CONF)
    salted = meter.run("salted left join", salted_df, SKEW_CONF)
    identical = (
        plain_df.count() == salted_df.count()
        and plain_df.exceptAll(salted_df).isEmpty()
        and salted_df.exceptAll(plain_df).isEmpty()
    )
    return {
        "table": purchases,
        "rows": report["rows"],
        "hot_keys": hot,
        "skewed_partitions": report.get("skewed_partitions", []),
        "plain": {k: plain[k] for k in ("wall", "max_over_median", "max_read_mb", "tasks")},
        "salted": {k: salted[k] for k in ("wall", "max_over_median", "max_read_mb", "tasks")},
        "identical": identical,
    }
