package dev.icefloe.spark;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import java.util.function.Supplier;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.classic.Dataset;
import org.apache.spark.sql.classic.SparkSession;

/**
 * The tests' Spark: a local session ({@code local[2]}, no UI, 4 shuffle partitions, no
 * broadcast joins unless a test asks) with Iceberg's and icefloe's extensions, as icefloe's
 * sessions load them, and an Iceberg {@code hadoop} catalog {@code lake} in a folder; and
 * what the tests ask of it: rows, optimized plans, settings for a block.
 */
final class LocalSpark {
  static final String ENABLED = SkewRule.ENABLED;

  final SparkSession spark;

  private LocalSpark(SparkSession spark) {
    this.spark = spark;
  }

  static LocalSpark start(Path warehouse) {
    SparkSession spark =
        SparkSession.builder()
            .master("local[2]")
            .appName("icefloe-jvm-tests")
            .config("spark.ui.enabled", "false")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.sql.shuffle.partitions", "4")
            .config("spark.sql.autoBroadcastJoinThreshold", "-1")
            .config("spark.sql.session.timeZone", "UTC")
            .config(
                "spark.sql.extensions",
                "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions,"
                    + IcefloeSparkExtensions.class.getName())
            .config("spark.sql.catalog.lake", "org.apache.iceberg.spark.SparkCatalog")
            .config("spark.sql.catalog.lake.type", "hadoop")
            .config("spark.sql.catalog.lake.warehouse", warehouse.toUri().toString())
            .getOrCreate();
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.db");
    return new LocalSpark(spark);
  }

  void stop() {
    spark.stop();
  }

  Dataset<Row> sql(String query) {
    return spark.sql(query);
  }

  /** The rows of {@code query}, each as its string, sorted: an answer to compare. */
  List<String> rows(String query) {
    List<String> out = new ArrayList<>();
    for (Row row : spark.sql(query).collectAsList()) {
      out.add(row.toString());
    }
    out.sort(null);
    return out;
  }

  LogicalPlan optimized(String query) {
    return spark.sql(query).queryExecution().optimizedPlan();
  }

  /** {@code block} with the skew rule on or off. */
  <T> T rule(boolean on, Supplier<T> block) {
    return with(Map.of(ENABLED, Boolean.toString(on)), block);
  }

  /** {@code block} with the settings {@code confs}, each set back (or unset) after it. */
  <T> T with(Map<String, String> confs, Supplier<T> block) {
    Map<String, String> before = new LinkedHashMap<>();
    for (Map.Entry<String, String> e : confs.entrySet()) {
      before.put(e.getKey(), spark.conf().get(e.getKey(), null));
      spark.conf().set(e.getKey(), e.getValue());
    }
    try {
      return block.get();
    } finally {
      for (Map.Entry<String, String> e : before.entrySet()) {
        if (e.getValue() == null) {
          spark.conf().unset(e.getKey());
        } else {
          spark.conf().set(e.getKey(), e.getValue());
        }
      }
    }
  }

  /** The plan's nodes (not those of its subqueries) that {@code test} accepts, in pre-order. */
  static List<LogicalPlan> nodes(LogicalPlan plan, Predicate<LogicalPlan> test) {
    return Scala.list(plan.collect(Scala.partial(p -> test.test(p) ? p : null)));
  }

  /** Whether a node of the plan outputs a column whose name starts with {@code prefix}. */
  static boolean outputs(LogicalPlan plan, String prefix) {
    return plan.exists(
        p -> {
          for (Attribute a : Scala.list(p.output())) {
            if (a.name().startsWith(prefix)) {
              return true;
            }
          }
          return false;
        });
  }

  /** The plan's text without expression ids: two plannings of one query compare equal. */
  static String normalized(LogicalPlan plan) {
    return plan.toString().replaceAll("#\\d+L?", "#").replaceAll("plan_id=\\d+", "plan_id=");
  }
}
