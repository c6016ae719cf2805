package dev.icefloe.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Explode;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.plans.logical.Aggregate;
import org.apache.spark.sql.catalyst.plans.logical.BROADCAST$;
import org.apache.spark.sql.catalyst.plans.logical.Generate;
import org.apache.spark.sql.catalyst.plans.logical.Join;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.MergeRows;
import org.apache.spark.sql.catalyst.plans.logical.ReplaceData;
import org.apache.spark.sql.catalyst.plans.logical.SHUFFLE_HASH$;
import org.apache.spark.sql.catalyst.plans.logical.Union;
import org.apache.spark.sql.catalyst.plans.logical.WriteDelta;
import org.apache.spark.sql.execution.CommandExecutionMode;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@link SkewRule} over a local session: for each of its forms (salted join, isolated join,
 * salted GROUP BY), the optimized plan without the rule and with it, the rewrite's shape
 * where a current hot-key report is published, the plain plan where none is (or a bad
 * one), and the same answer either way. Iceberg tables of 2,000 rows: key 1 holds 40% of
 * the fact's rows, key 2 20% (and is missing from the dimension), NULL 5%.
 */
class SkewRuleTest {
  static final String ISOLATE = SkewRule.ISOLATE_MAX_BYTES;
  static final String MIN_SHARE = SkewRule.ISOLATE_MIN_SHARE;
  static final String PROBE_FILES = SkewRule.PROBE_FILES;
  static final String AGGREGATES = SkewRule.AGGREGATES;
  static final String FACT = "lake.db.f";
  static final String DIM = "lake.db.d";
  static final String PLAIN = "lake.db.plain"; // the fact's rows, no report unless a test sets one
  static final String INNER = "SELECT * FROM " + FACT + " x JOIN " + DIM + " y ON x.k = y.k";
  // the dimension keeps its unmatched rows: which hot keys the fact holds must be found
  static final String LEFT = "SELECT * FROM " + DIM + " x LEFT JOIN " + FACT + " y ON x.k = y.k";

  static LocalSpark spark;

  @BeforeAll
  static void start() {
    spark = LocalSpark.shared();
    for (String table : List.of(FACT, PLAIN)) {
      spark.sql(
          "CREATE TABLE " + table + " USING iceberg AS SELECT id, CASE WHEN id % 100 < 40 THEN 1L"
              + " WHEN id % 100 < 60 THEN 2L WHEN id % 100 < 65 THEN NULL ELSE id % 97 + 10 END AS k,"
              + " CAST(id AS DOUBLE) / 2 AS v FROM range(2000)");
    }
    spark.sql(
        "CREATE TABLE " + DIM + " USING iceberg AS SELECT CAST(id AS BIGINT) AS k,"
            + " concat('n', id) AS name FROM range(120) WHERE id != 2"
            + " UNION ALL SELECT 1L, 'dup' UNION ALL SELECT NULL, 'nullkey'");
    publish(FACT, report(FACT, "k", Map.of()));
  }

  // --- the reports, as `icefloe skew detect` writes them -------------------------------------

  /** {@link LocalSpark#report}. */
  static String report(String table, String column, Map<String, String> overrides) {
    return spark.report(table, column, overrides);
  }

  static long snapshot(String table) {
    return spark.snapshot(table);
  }

  /** Stores {@code json} as the report of the column it names ({@code k} unless it says). */
  static void publish(String table, String json) {
    publish(table, "k", json);
  }

  static void publish(String table, String column, String json) {
    spark.sql(
        "ALTER TABLE " + table + " SET TBLPROPERTIES ('" + HotKeyReport.PREFIX + column + "' = '"
            + json.replace("'", "\\'") + "')");
  }

  static void unpublish(String table) {
    spark.sql("ALTER TABLE " + table + " UNSET TBLPROPERTIES IF EXISTS ('" + HotKeyReport.PREFIX + "k')");
  }

  // --- what the tests compare ----------------------------------------------------------------

  /** Runs {@code query} with the rule and without: the same rows. The rule's optimized plan. */
  static LogicalPlan sameAnswer(String query) {
    long before = SkewRule.rewrites();
    List<String> salted = spark.rule(true, () -> spark.rows(query));
    LogicalPlan plan = spark.rule(true, () -> spark.optimized(query));
    List<String> plain = spark.rule(false, () -> spark.rows(query));
    assertFalse(plain.isEmpty(), "no rows: the query tests nothing: " + query);
    assertEquals(plain, salted, query);
    assertTrue(SkewRule.rewrites() > before, "the rule did not fire: " + query);
    return plan;
  }

  /** The rule's optimized plan of {@code query} is the plain one. */
  static void unchanged(String query) {
    long before = SkewRule.rewrites();
    LogicalPlan on = spark.rule(true, () -> spark.optimized(query));
    LogicalPlan off = spark.rule(false, () -> spark.optimized(query));
    assertEquals(before, SkewRule.rewrites(), "the rule fired: " + query + "\n" + on);
    assertFalse(LocalSpark.outputs(on, "icefloe_"), on::toString);
    assertEquals(LocalSpark.normalized(off), LocalSpark.normalized(on), query);
  }

  static List<Join> joins(LogicalPlan plan) {
    return LocalSpark.nodes(plan, p -> p instanceof Join).stream().map(p -> (Join) p).toList();
  }

  static boolean references(Expression e, String prefix) {
    for (Attribute a : Scala.list(e.references().toSeq())) {
      if (a.name().startsWith(prefix)) {
        return true;
      }
    }
    return false;
  }

  /** The join that matches on the salt: its condition names the salted side's salt column. */
  static Join saltedJoin(LogicalPlan plan) {
    List<Join> salted =
        joins(plan).stream()
            .filter(j -> j.condition().isDefined() && references(j.condition().get(), "icefloe_salt("))
            .toList();
    assertEquals(1, salted.size(), plan::toString);
    return salted.get(0);
  }

  // --- the forms ----------------------------------------------------------------------------

  @Test
  void saltedJoinSpreadsTheHotKeyAndKeepsTheAnswer() {
    // isolation off: salted, sort-merge. Key 1 (800 of 2,000 rows, 4 partitions) gets 4
    // salts; key 2 (400, under a partition's share) none
    spark.with(
        Map.of(ISOLATE, "-1"),
        () -> {
          LogicalPlan off = spark.rule(false, () -> spark.optimized(INNER));
          assertFalse(LocalSpark.outputs(off, "icefloe_"), off::toString);
          assertEquals(1, joins(off).size(), off::toString);
          for (String query : List.of(INNER, LEFT)) {
            LogicalPlan on = sameAnswer(query);
            Join join = saltedJoin(on);
            assertTrue(LocalSpark.outputs(on, "icefloe_salt(lake.db.f.k: 1 hot keys, 4 salts)"), on::toString);
            // the other side's rows copied once per salt: Generate(explode(...))
            assertTrue(on.exists(p -> p instanceof Generate g && g.generator() instanceof Explode), on::toString);
            assertTrue(join.hint().leftHint().isEmpty() && join.hint().rightHint().isEmpty(), on::toString);
            assertFalse(on.exists(p -> p instanceof Union), on::toString);
          }
          return null;
        });
  }

  @Test
  void saltedJoinBuildsASmallOtherSideInAShuffledHashJoin() {
    // the hot rows' share (60%) under isolateMinShare: salted, the small dimension hashed
    spark.with(
        Map.of(MIN_SHARE, "2"),
        () -> {
          Join join = saltedJoin(sameAnswer(INNER));
          assertTrue(join.hint().leftHint().isEmpty(), join::toString);
          assertEquals(Scala.some(SHUFFLE_HASH$.MODULE$), join.hint().rightHint().get().strategy(), join::toString);
          String physical = spark.rule(true, () -> spark.sql(INNER).queryExecution().sparkPlan().toString());
          assertTrue(physical.contains("ShuffledHashJoin"), physical);
          return null;
        });
  }

  @Test
  void isolatedJoinBroadcastsTheHotKeysInAUnion() {
    spark.with(
        Map.of(ISOLATE, "256m", MIN_SHARE, "0"),
        () -> {
          String plainPhysical = spark.rule(false, () -> spark.sql(INNER).queryExecution().sparkPlan().toString());
          assertFalse(plainPhysical.contains("BroadcastHashJoin"), plainPhysical);
          LogicalPlan on = sameAnswer(INNER);
          // UNION ALL of the hot part (a broadcast join over the hot keys' rows) and the cold one
          List<LogicalPlan> unions = LocalSpark.nodes(on, p -> p instanceof Union);
          assertEquals(1, unions.size(), on::toString);
          assertEquals(2, unions.get(0).children().size(), on::toString);
          List<Join> parts = joins(unions.get(0));
          assertEquals(2, parts.size(), on::toString);
          assertEquals(Scala.some(BROADCAST$.MODULE$), parts.get(0).hint().rightHint().get().strategy(), on::toString);
          assertEquals(Scala.some(SHUFFLE_HASH$.MODULE$), parts.get(1).hint().rightHint().get().strategy(), on::toString);
          assertTrue(LocalSpark.outputs(on, "icefloe_isolate(lake.db.f.k: 2 hot keys, broadcast)"), on::toString);
          String physical = spark.rule(true, () -> spark.sql(INNER).queryExecution().sparkPlan().toString());
          assertTrue(physical.contains("BroadcastHashJoin"), physical);
          return null;
        });
  }

  @Test
  void isolatedOuterJoinProvesTheHotKeysInTheFilesOrAsksTheRows() {
    // the dimension keeps its unmatched rows, key 2 among them: the fact must be known to
    // hold keys 1 and 2. DriverProbe finds them in the Iceberg table's files (a SparkTable),
    // so no presence subquery is left; with probeFiles 0 they are asked of the rows
    spark.with(
        Map.of(ISOLATE, "256m", MIN_SHARE, "0"),
        () -> {
          LogicalPlan probed = sameAnswer(LEFT);
          assertEquals(1, LocalSpark.nodes(probed, p -> p instanceof Union).size(), probed::toString);
          assertFalse(probed.toString().contains(Presence.PRESENT), probed::toString);
          LogicalPlan asked = spark.with(Map.of(PROBE_FILES, "0"), () -> sameAnswer(LEFT));
          assertTrue(asked.toString().contains(Presence.PRESENT), asked::toString);
          return null;
        });
  }

  @Test
  void saltedAggregateCombinesPartialsPerSalt() {
    String query =
        "SELECT k, count(*) AS n, count(v) AS nv, sum(id) AS s, min(v) AS lo,"
            + " max(id) AS hi FROM " + FACT + " GROUP BY k";
    // off by default: Spark's partial aggregation already collapses a hot key
    unchanged(query);
    spark.with(
        Map.of(AGGREGATES, "true"),
        () -> {
          LogicalPlan off = spark.rule(false, () -> spark.optimized(query));
          assertEquals(1, LocalSpark.nodes(off, p -> p instanceof Aggregate).size(), off::toString);
          LogicalPlan on = sameAnswer(query);
          List<LogicalPlan> aggs = LocalSpark.nodes(on, p -> p instanceof Aggregate);
          assertEquals(2, aggs.size(), on::toString);
          Aggregate outer = (Aggregate) aggs.get(0);
          Aggregate inner = (Aggregate) aggs.get(1);
          assertTrue(outer.exists(p -> p == inner), on::toString);
          assertTrue(
              Scala.list(inner.groupingExpressions()).stream().anyMatch(g -> references(g, "icefloe_salt(")),
              inner::toString);
          assertFalse(
              Scala.list(outer.groupingExpressions()).stream().anyMatch(g -> references(g, "icefloe_")),
              outer::toString);
          return null;
        });
  }

  // --- where it must leave the plan alone ----------------------------------------------------

  @Test
  void anAbsentOrBadReportLeavesThePlanUnchanged() {
    String join = "SELECT * FROM " + PLAIN + " x JOIN " + DIM + " y ON x.k = y.k";
    String left = "SELECT * FROM " + DIM + " x LEFT JOIN " + PLAIN + " y ON x.k = y.k";
    String grouped = "SELECT k, sum(id) FROM " + PLAIN + " GROUP BY k";
    Map<String, String> modes = Map.of(ISOLATE, "-1", AGGREGATES, "true");
    spark.with(
        modes,
        () -> {
          unpublish(PLAIN);
          unchanged(join); // no report
          unchanged("SELECT * FROM " + FACT + " x JOIN " + DIM + " y ON x.id = y.k"); // not the key
          long stale = System.currentTimeMillis() - 7_200_000L;
          List<String> bad =
              List.of(
                  "{\"v\":1,\"column\":\"k\",\"type\":", // not JSON
                  "[1, 2]",
                  report(PLAIN, "k", Map.of("v", "2")),
                  report(PLAIN, "k", Map.of("type", "\"int\"")), // another type than the column's
                  report(PLAIN, "k", Map.of("column", "\"id\"")), // another column's
                  report(PLAIN, "k", Map.of("snapshot_id", "1", "computed_at_ms", Long.toString(stale))),
                  report(PLAIN, "k", Map.of("keys", "[[\"one\",800]]", "null_rows", "0")), // not bigints
                  report(PLAIN, "k", Map.of("keys", "[]", "null_rows", "0"))); // nothing to spread
          for (String json : bad) {
            publish(PLAIN, json);
            for (String query : List.of(join, left, grouped)) {
              try {
                unchanged(query);
              } catch (AssertionError e) {
                throw new AssertionError("report " + json + ": " + e.getMessage(), e);
              }
            }
          }
          // the same report at the table's snapshot is used however old it is: the fixture fires
          publish(PLAIN, report(PLAIN, "k", Map.of("computed_at_ms", Long.toString(stale))));
          saltedJoin(sameAnswer(join));
          unpublish(PLAIN);
          unchanged(join);
          return null;
        });
  }

  @Test
  void theSwitchAndBroadcastJoinsLeaveThePlanAlone() {
    LogicalPlan off = spark.rule(false, () -> spark.optimized(INNER));
    assertFalse(LocalSpark.outputs(off, "icefloe_"), off::toString);
    // Spark broadcasts the dimension anyway: no shuffle, no skew
    spark.with(Map.of("spark.sql.autoBroadcastJoinThreshold", "10MB"), () -> {
      unchanged(INNER);
      return null;
    });
  }

  @Test
  void nothingToRewriteKeepsThePlanInstance() {
    // Catalyst's traversal copies nothing where no join is rewritten: the very same plan
    SkewRule rule = new SkewRule(spark.spark);
    for (String query :
        List.of(
            "SELECT k, v FROM " + FACT + " WHERE id < 10",
            "SELECT * FROM " + PLAIN + " x JOIN " + DIM + " y ON x.id = y.k",
            INNER)) { // optimized already: the scans are no longer relations the rule traces
      LogicalPlan plan = spark.rule(false, () -> spark.optimized(query));
      assertSame(plan, rule.apply(plan), query);
    }
  }

  @Test
  void rowLevelWritesAreLeftAsWritten() {
    // Iceberg's MERGE (copy-on-write: ReplaceData over MergeRows) and a merge-on-read DELETE
    // (WriteDelta) read their target through the operation's RowLevelOperationTable: never
    // a second read, so the whole command is left alone, and every row is kept
    String cow = "lake.db.m";
    String mor = "lake.db.del";
    spark.sql("CREATE TABLE " + cow + " USING iceberg AS SELECT * FROM " + FACT);
    spark.sql(
        "CREATE TABLE " + mor + " USING iceberg TBLPROPERTIES ('format-version' = '2',"
            + " 'write.delete.mode' = 'merge-on-read') AS SELECT * FROM " + FACT);
    publish(cow, report(cow, "k", Map.of()));
    publish(mor, report(mor, "k", Map.of()));
    String merge =
        "MERGE INTO " + cow + " t USING (SELECT DISTINCT k FROM " + DIM + ") s ON t.k = s.k"
            + " WHEN MATCHED THEN UPDATE SET v = t.v + 1";
    String delete = "DELETE FROM " + mor + " WHERE k IN (SELECT k FROM " + DIM + " WHERE k < 5)";
    spark.with(
        Map.of(ISOLATE, "-1"),
        () -> {
          LogicalPlan merged = command(merge);
          assertTrue(merged.exists(p -> p instanceof ReplaceData), merged::toString);
          assertTrue(merged.exists(p -> p instanceof MergeRows), merged::toString);
          LogicalPlan deleted = command(delete);
          assertTrue(deleted.exists(p -> p instanceof WriteDelta), deleted::toString);
          for (LogicalPlan plan : List.of(merged, deleted)) {
            assertFalse(LocalSpark.outputs(plan, "icefloe_"), plan::toString);
            assertTrue(SkewRule.rowLevelWrite(plan), plan::toString);
          }
          Row before = spark.sql("SELECT count(*), sum(v) FROM " + cow).collectAsList().get(0);
          long matched = count("SELECT count(*) FROM " + cow + " WHERE k IN (SELECT k FROM " + DIM + ")");
          long gone = count("SELECT count(*) FROM " + mor + " WHERE k IN (0, 1, 3, 4)");
          long rows = count("SELECT count(*) FROM " + mor);
          spark.rule(true, () -> spark.sql(merge).collectAsList());
          spark.rule(true, () -> spark.sql(delete).collectAsList());
          Row after = spark.sql("SELECT count(*), sum(v) FROM " + cow).collectAsList().get(0);
          assertEquals(before.getLong(0), after.getLong(0));
          assertEquals(before.getDouble(1) + matched, after.getDouble(1));
          assertEquals(rows - gone, count("SELECT count(*) FROM " + mor));
          assertEquals(800, gone); // key 1's rows: the only ones of those keys
          return null;
        });
    // the same target's reads outside a row-level write are still rewritten
    spark.with(Map.of(ISOLATE, "-1"), () -> saltedJoin(sameAnswer(
        "SELECT * FROM " + cow + " x JOIN " + DIM + " y ON x.k = y.k")));
  }

  // --- reports past the limits: never a slow plan, nor a big one ----------------------------

  @Test
  void aHundredThousandKeyReportIsCappedAndParsedOnce() {
    // a valid report of 100,000 keys (1.4 MB; issue #61: 125 s to plan a join): its 64
    // heaviest are used (the fact's keys 1 and 2, listed last, and 62 of the others), and
    // it is parsed once for every join over the table
    String table = "lake.db.many";
    spark.sql("CREATE TABLE " + table + " USING iceberg AS SELECT * FROM " + FACT);
    StringBuilder keys = new StringBuilder("[");
    for (int i = 0; i < 100_000; i++) {
      keys.append("[\"").append(1_000_000 + i).append("\",1],");
    }
    keys.append("[\"2\",400],[\"1\",800]]");
    String json = report(table, "k", Map.of("keys", keys.toString()));
    assertTrue(json.length() > 1_400_000, () -> Integer.toString(json.length()));
    spark.publish(table, "k", json);
    String inner = "SELECT * FROM " + table + " x JOIN " + DIM + " y ON x.k = y.k";
    String left = "SELECT * FROM " + DIM + " x LEFT JOIN " + table + " y ON x.k = y.k";
    long parses = HotKeyReport.parses();
    spark.with(
        Map.of(ISOLATE, "256m", MIN_SHARE, "0"),
        () -> {
          for (String query : List.of(inner, left)) {
            LogicalPlan on = sameAnswer(query);
            assertTrue(LocalSpark.outputs(on, "icefloe_isolate(lake.db.many.k: 64 hot keys, broadcast)"), on::toString);
          }
          for (int i = 0; i < 5; i++) {
            spark.rule(true, () -> spark.optimized(inner));
            spark.rule(true, () -> spark.optimized(left));
          }
          return null;
        });
    assertEquals(parses + 1, HotKeyReport.parses());
  }

  @Test
  void aBigStringKeyLeavesThePlanAlone() {
    // issue #61: one key of 10 MB (or 64 of 160 kB) made every join on the column fail with
    // OutOfMemoryError in explainString; such a report is ignored, with one warning
    String table = "lake.db.strs";
    String dim = "lake.db.strd";
    spark.sql("CREATE TABLE " + table + " USING iceberg AS SELECT id, concat('s', k) AS s, v FROM " + FACT);
    spark.sql("CREATE TABLE " + dim + " USING iceberg AS SELECT concat('s', k) AS s, name FROM " + DIM);
    String join = "SELECT * FROM " + table + " x JOIN " + dim + " y ON x.s = y.s";
    Map<String, String> string = Map.of("type", "\"string\"");
    spark.publish(table, "s", report(table, "s", string));
    spark.with(Map.of(ISOLATE, "-1"), () -> saltedJoin(sameAnswer(join))); // a string report works
    StringBuilder many = new StringBuilder("[");
    for (int i = 0; i < 64; i++) {
      many.append(i == 0 ? "" : ",").append("[\"s").append(i).append("x".repeat(160_000)).append("\",900]");
    }
    List<String> big = List.of("[[\"" + "x".repeat(10 << 20) + "\",900],[\"s1\",800]]", many + "]");
    long ignored = HotKeyReport.ignored();
    for (String keys : big) {
      Map<String, String> fields = new java.util.HashMap<>(string);
      fields.put("keys", keys);
      spark.publish(table, "s", report(table, "s", fields));
      for (Map<String, String> mode : List.of(Map.of(ISOLATE, "-1"), Map.of(ISOLATE, "256m", MIN_SHARE, "0"))) {
        spark.with(
            mode,
            () -> {
              unchanged(join);
              assertEquals(spark.rule(false, () -> spark.rows(join)), spark.rule(true, () -> spark.rows(join)));
              String text =
                  spark.rule(
                      true,
                      () ->
                          spark.sql(join).queryExecution().explainString(
                              org.apache.spark.sql.execution.ExtendedMode$.MODULE$));
              assertTrue(text.length() < 20_000, () -> "plan text of " + text.length() + " chars");
              return null;
            });
      }
    }
    assertEquals(ignored + 2, HotKeyReport.ignored()); // once per report, not per query
    unpublishAll(table, "s");
  }

  static void unpublishAll(String table, String column) {
    spark.sql("ALTER TABLE " + table + " UNSET TBLPROPERTIES IF EXISTS ('" + HotKeyReport.PREFIX + column + "')");
  }

  /** The optimized plan of a command, with the rule on, without running it. */
  static LogicalPlan command(String sql) {
    LogicalPlan parsed;
    try {
      parsed = spark.spark.sessionState().sqlParser().parsePlan(sql);
    } catch (org.apache.spark.sql.catalyst.parser.ParseException e) {
      throw new IllegalArgumentException(sql, e);
    }
    return spark.rule(
        true,
        () -> spark.spark.sessionState().executePlan(parsed, CommandExecutionMode.SKIP()).optimizedPlan());
  }

  static long count(String query) {
    return spark.sql(query).collectAsList().get(0).getLong(0);
  }
}
