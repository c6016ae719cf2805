package dev.icefloe.spark;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.classic.Dataset;
import org.apache.spark.sql.classic.SparkSession;

/**
 * The tests' Spark: a local session ({@code local[2]}, no UI, 4 shuffle partitions, no
 * broadcast joins unless a test asks) with Iceberg's and icefloe's extensions, as icefloe's
 * sessions load them, and an Iceberg {@code hadoop} catalog {@code lake} in a folder; and
 * what the tests ask of it: rows, optimized plans, settings for a block, hot-key reports.
 * One session for every test class of the JVM ({@link #shared}: a start costs seconds),
 * stopped and its folder removed when the JVM exits; each class uses tables of its own.
 */
final class LocalSpark {
  static final String ENABLED = SkewRule.ENABLED;
  private static LocalSpark shared;

  final SparkSession spark;

  private LocalSpark(SparkSession spark) {
    this.spark = spark;
  }

  /** The JVM's session, started on first use. */
  static synchronized LocalSpark shared() {
    if (shared == null) {
      Path warehouse;
      try {
        warehouse = Files.createTempDirectory("icefloe-jvm-tests");
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      LocalSpark started = start(warehouse);
      Runtime.getRuntime()
          .addShutdownHook(
              new Thread(
                  () -> {
                    started.stop();
                    remove(warehouse);
                  }));
      shared = started;
    }
    return shared;
  }

  private static void remove(Path folder) {
    try (Stream<Path> paths = Files.walk(folder)) {
      paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException e) {
      // a temporary folder: the system's cleaner takes what is left
    }
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

  // --- hot-key reports, as `icefloe skew detect` writes them ----------------------------------

  /**
   * The report of {@code table}'s {@code column} (a bigint unless {@code overrides} give its
   * "type"), counted from the table: the keys of at least 5% of the rows, at the current
   * snapshot, an hour's validity; {@code overrides} replace fields (JSON values as text).
   */
  String report(String table, String column, Map<String, String> overrides) {
    long rows = 0;
    long nulls = 0;
    StringBuilder keys = new StringBuilder();
    List<Row> counts =
        spark
            .sql("SELECT " + column + ", count(*) AS n FROM " + table + " GROUP BY 1 ORDER BY 2 DESC")
            .collectAsList();
    for (Row r : counts) {
      rows += r.getLong(1);
    }
    for (Row r : counts) {
      if (r.isNullAt(0)) {
        nulls = r.getLong(1);
      } else if (r.getLong(1) >= 0.05 * rows) {
        keys.append(keys.length() == 0 ? "" : ",");
        keys.append("[\"").append(r.get(0)).append("\",").append(r.getLong(1)).append("]");
      }
    }
    Map<String, String> fields = new LinkedHashMap<>();
    fields.put("v", "1");
    fields.put("column", "\"" + column + "\"");
    fields.put("type", "\"bigint\"");
    fields.put("snapshot_id", Long.toString(snapshot(table)));
    fields.put("computed_at_ms", Long.toString(System.currentTimeMillis()));
    fields.put("max_age_ms", "3600000");
    fields.put("rows", Long.toString(rows));
    fields.put("null_rows", Long.toString(nulls));
    fields.put("keys", "[" + keys + "]");
    fields.putAll(overrides);
    StringBuilder json = new StringBuilder("{");
    fields.forEach((k, v) -> json.append(json.length() > 1 ? "," : "").append('"').append(k).append("\":").append(v));
    return json.append('}').toString();
  }

  long snapshot(String table) {
    return spark
        .sql("SELECT snapshot_id FROM " + table + ".snapshots ORDER BY committed_at DESC LIMIT 1")
        .collectAsList()
        .get(0)
        .getLong(0);
  }

  /**
   * Stores {@code json} as the report of {@code column}, through Iceberg's API (a report of
   * megabytes would be a statement of megabytes in SQL).
   */
  void publish(String table, String column, String json) {
    try {
      org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark, table)
          .updateProperties()
          .set(HotKeyReport.PREFIX + column, json)
          .commit();
    } catch (Exception e) {
      throw new IllegalStateException("cannot publish a report on " + table, e);
    }
  }
}
