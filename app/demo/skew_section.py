"""The demo's skew section: plant a hot key, detect it (``skew detect`` stores the report in
the table's properties), and run a LEFT join written as plain SQL twice: as Spark plans it
(AQE on) and with icefloe's SQL extension rewriting it (``jvm/``, the skew rule), each run
counting the join's rows and summing their hashes (the two are compared), with its wall time
and join-stage task times."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

from icefloe.base.catalog import spark_table_name
from icefloe.base.config import Config
from icefloe.jobs.skew.detect import detect_table
from icefloe.jobs.skew.stage_metrics import Meter

Say = Callable[[str], None]

RULE = "spark.icefloe.skew.enabled"
JOIN_SQL = (
    "SELECT u.user_id, u.name, p.amount, p.receipt "
    "FROM {users} u LEFT JOIN {purchases} p ON u.user_id = p.user_id"
)
SALT_LABEL = re.compile(r"icefloe_(?:salt|isolate)\([^)]*\)")  # the rule's either form


METRICS = ("wall", "max_over_median", "max_read_mb", "tasks", "task_seconds")
SKEW_CONF = {
    # measure shuffle joins as they are: no broadcast of the small side, no coalescing of
    # the tiny demo partitions into one task; AQE's skew split stays on (the default)
    "spark.sql.autoBroadcastJoinThreshold": "-1",
    "spark.sql.adaptive.coalescePartitions.enabled": "false",
    "spark.sql.shuffle.partitions": "8",
}


def skew_section(
    spark: Any,
    cfg: Config,
    catalog: Any,
    namespace: str,
    say: Say,
    rows: int = 400_000,
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
    query = JOIN_SQL.format(
        users=spark_table_name(cfg, users), purchases=spark_table_name(cfg, purchases)
    )
    say(f"skew: {query}")
    meter = Meter(spark)
    plain, plain_sum, _ = _metered_checksum(meter, query, rule_on=False)
    salted, salted_sum, salted_df = _metered_checksum(meter, query, rule_on=True)
    rewrite = SALT_LABEL.search(salted_df._jdf.queryExecution().optimizedPlan().toString())
    return {
        "table": purchases,
        "rows": report["rows"],
        "hot_keys": hot,
        "skewed_partitions": report.get("skewed_partitions", []),
        "plain": {k: plain[k] for k in METRICS},
        "salted": {k: salted[k] for k in METRICS},
        "identical": plain_sum == salted_sum,
        "sql": query,
        "rewrite": rewrite.group(0) if rewrite else None,
    }


def _metered_checksum(meter: Meter, query: str, rule_on: bool) -> tuple[dict[str, Any], Any, Any]:
    """The join's rows and the sum of their hashes, planned with the rule on or off (one
    plan holding both sides of a comparison would be planned one way for both), with the
    run's wall time and join-stage task metrics; and the DataFrame (its plan)."""
    spark = meter.spark
    for key, value in {**SKEW_CONF, RULE: "true" if rule_on else "false"}.items():
        spark.conf.set(key, value)
    df = spark.sql(f"SELECT count(*) AS n, sum(hash(*)) AS h FROM ({query})")
    group = f"icefloe-demo-skew-{'salted' if rule_on else 'plain'}"
    spark.sparkContext.setJobGroup(
        group, f"the demo's LEFT join, rule {'on' if rule_on else 'off'}"
    )
    started = time.perf_counter()
    row = df.collect()[0]
    wall = time.perf_counter() - started
    return {"wall": wall, **meter.stage_metrics(group)}, (int(row["n"]), int(row["h"] or 0)), df
