package dev.icefloe.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.spark.sql.catalyst.FunctionIdentifier;
import org.apache.spark.sql.catalyst.analysis.FunctionRegistry;
import org.apache.spark.sql.catalyst.expressions.ExpressionInfo;
import org.apache.spark.sql.catalyst.expressions.WindowFunction;
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateFunction;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The salted {@code GROUP BY} ({@link SaltedAggregate}) against plain Spark, over every
 * aggregate function of Spark's function registry, on a table of overflows, NULLs (an
 * all-NULL group too), NaNs, infinities and decimals at their precision's edge: where the
 * rule rewrites a call, the answer is the plain one, with ANSI mode on and off; where it does
 * not, the plan is the plain one. And which functions it rewrites is exactly the list the
 * README gives.
 */
class SaltedAggregateTest {
  static final String TABLE = "lake.db.aggs";
  static final List<String> COLUMNS =
      List.of("big", "huge", "i", "d", "f", "dec", "sdec", "s", "b", "dt", "ts", "bin", "var");
  /** Call shapes tried per function ({@code %s}: a column), the first ones that analyze kept. */
  static final List<String> SHAPES =
      List.of(
          "%1$s(%2$s)",
          "%1$s(%2$s, 0.5D)",
          "%1$s(%2$s, i)",
          "%1$s(%2$s, ',')",
          "%1$s(%2$s, 5)",
          "%1$s(%2$s, 0.01D, 0.9D, 1)",
          "%1$s(0.5D) WITHIN GROUP (ORDER BY %2$s)",
          "%1$s() WITHIN GROUP (ORDER BY %2$s)",
          "%1$s(%2$s) WITHIN GROUP (ORDER BY %2$s)");
  /**
   * The functions whose calls the rule rewrites (by their registry names: the classes behind
   * them are Count, Min, Max and Sum, some replaced by Spark before the rule runs).
   */
  static final Set<String> REWRITTEN =
      Set.of(
          "count", "count_if", "regr_count", "sum", "min", "max", "bool_and", "every",
          "bool_or", "any", "some");
  /**
   * Aggregate functions a GROUP BY of plain columns cannot call: of grouping sets, or over
   * another aggregate's state (a struct no column holds).
   */
  static final Set<String> UNCALLABLE = Set.of("grouping", "grouping_id", "approx_top_k_combine");
  /** The table's rows and a variant column (a format-version 3 table would hold one). */
  static final String ROWS =
      "(SELECT *, CASE WHEN k = 9 THEN NULL ELSE parse_json(concat('{\"a\":', id % 7, '}')) END"
          + " AS var FROM " + TABLE + ")";
  static LocalSpark spark;

  @BeforeAll
  static void start() {
    spark = LocalSpark.shared();
    // 12,000 rows: key 42 on half of them (hot), 7 on a tenth, NULL on 5%, key 9 all NULLs;
    // 2^62 twice under key 42 and -2^62 twice under 7, Long.MAX 200 times under 42, Int.MAX
    // on a quarter, NaN and infinities, 9e37 in a decimal(38,0) 20 times under 42
    spark.sql(
        "CREATE TABLE " + TABLE + " USING iceberg AS SELECT id, k,"
            + " CASE WHEN k = 9 THEN NULL WHEN id IN (0, 2) THEN 4611686018427387904L"
            + "   WHEN id IN (1, 11) THEN -4611686018427387904L WHEN id % 13 = 0 THEN NULL ELSE id END AS big,"
            + " CASE WHEN k = 9 THEN NULL WHEN id % 60 = 0 THEN 9223372036854775807L"
            + "   WHEN id % 10 = 1 THEN -1L END AS huge,"
            + " CASE WHEN k = 9 THEN NULL WHEN id % 4 = 0 THEN 2147483647 WHEN id % 13 = 0 THEN NULL"
            + "   ELSE CAST(-id AS INT) END AS i,"
            + " CASE WHEN k = 9 THEN NULL WHEN id = 4 THEN double('NaN') WHEN id IN (6, 11, 15)"
            + "   THEN double('Infinity') WHEN id = 21 THEN double('-Infinity') WHEN id % 7 = 0 THEN NULL"
            + "   ELSE CAST(id AS DOUBLE) / 2 END AS d,"
            + " CAST(CASE WHEN k = 9 THEN NULL WHEN id = 8 THEN float('NaN') WHEN id % 7 = 0 THEN NULL"
            + "   ELSE CAST(id AS FLOAT) / 4 END AS FLOAT) AS f,"
            + " CAST(CASE WHEN k = 9 THEN NULL WHEN id % 600 = 0 THEN CAST('9' || repeat('0', 37) AS DECIMAL(38, 0))"
            + "   WHEN id IN (31, 41) THEN -CAST('9' || repeat('0', 37) AS DECIMAL(38, 0)) WHEN id % 11 = 0 THEN NULL ELSE id END AS DECIMAL(38, 0)) AS dec,"
            + " CASE WHEN k = 9 THEN NULL WHEN id % 5 = 0 THEN 99999999.99BD"
            + "   ELSE CAST(CAST(id AS DOUBLE) / 100 AS DECIMAL(10, 2)) END AS sdec,"
            + " CASE WHEN k = 9 OR id % 9 = 0 THEN NULL WHEN id % 11 = 0 THEN '' ELSE concat('s', id % 37) END AS s,"
            + " CASE WHEN k = 9 OR id % 17 = 0 THEN NULL ELSE id % 3 = 0 END AS b,"
            + " CASE WHEN k = 9 THEN NULL ELSE date_add(DATE'2020-01-01', CAST(id % 400 AS INT)) END AS dt,"
            + " CASE WHEN k = 9 THEN NULL ELSE timestamp_seconds(id * 3600) END AS ts,"
            + " CASE WHEN k = 9 THEN NULL ELSE CAST(concat('b', id % 5) AS BINARY) END AS bin"
            + " FROM (SELECT id, CASE WHEN id % 2 = 0 THEN 42L WHEN id % 20 = 3 THEN NULL"
            + "   WHEN id % 10 = 1 THEN 7L ELSE id % 50 END AS k FROM range(12000))");
    spark.publish(TABLE, "k", spark.report(TABLE, "k", Map.of()));
  }

  static String query(List<String> calls) {
    return "SELECT k, " + String.join(", ", calls) + " FROM " + ROWS + " GROUP BY k";
  }

  /**
   * {@code sql} analyzed (not optimized yet) where it analyzes (a call of a function with
   * these arguments exists), not through a cast of the string or binary column (a test of
   * Spark's casts, not of the function: in ANSI mode each would fail the query); else null.
   */
  static org.apache.spark.sql.classic.Dataset<org.apache.spark.sql.Row> analyzed(String sql) {
    try {
      org.apache.spark.sql.classic.Dataset<org.apache.spark.sql.Row> ds = spark.sql(sql);
      return CAST_OF_BYTES.matcher(ds.queryExecution().analyzed().toString()).find() ? null : ds;
    } catch (Exception e) {
      return null;
    }
  }

  static final java.util.regex.Pattern CAST_OF_BYTES = java.util.regex.Pattern.compile("cast\\((s|bin)#\\d+ as ");

  /**
   * The aggregate functions of the session's registry (their class is an AggregateFunction,
   * or their group {@code agg_funcs}); those that are window functions too go to {@code
   * windowOnly} (no GROUP BY calls them).
   */
  static Set<String> aggregateFunctions(Set<String> windowOnly) {
    FunctionRegistry registry = spark.spark.sessionState().functionRegistry();
    Set<String> out = new TreeSet<>();
    for (FunctionIdentifier id : Scala.list(registry.listFunction())) {
      ExpressionInfo info = registry.lookupFunction(id).get();
      try {
        Class<?> c = Class.forName(info.getClassName());
        if (AggregateFunction.class.isAssignableFrom(c) && WindowFunction.class.isAssignableFrom(c)) {
          windowOnly.add(id.funcName());
        } else if (AggregateFunction.class.isAssignableFrom(c) || "agg_funcs".equals(info.getGroup())) {
          out.add(id.funcName());
        }
      } catch (ClassNotFoundException e) {
        // not an expression class (a builder of another group)
      }
    }
    return out;
  }

  /**
   * The calls of {@code function} that analyze (of the first shape that does, every column),
   * each with its query analyzed: optimized later, with the rule on.
   */
  static Map<String, org.apache.spark.sql.classic.Dataset<org.apache.spark.sql.Row>> calls(String function) {
    Map<String, org.apache.spark.sql.classic.Dataset<org.apache.spark.sql.Row>> out = new java.util.LinkedHashMap<>();
    List<List<String>> shapes = new ArrayList<>();
    if (function.equals("count")) {
      List<String> counts = new ArrayList<>(List.of("count(*)", "count(big, s)"));
      COLUMNS.forEach(c -> counts.add("count(" + c + ")"));
      shapes.add(counts);
    } else {
      for (String shape : SHAPES) {
        shapes.add(COLUMNS.stream().map(c -> String.format(shape, function, c)).toList());
      }
    }
    for (List<String> shape : shapes) {
      for (String call : shape) {
        org.apache.spark.sql.classic.Dataset<org.apache.spark.sql.Row> ds = analyzed(query(List.of(call)));
        if (ds != null) {
          out.put(call, ds);
        }
      }
      if (!out.isEmpty()) {
        return out;
      }
    }
    return out;
  }

  /** The sorted rows of {@code sql} with the rule on or off, or the error's class. */
  static List<String> answer(String sql, boolean on) {
    try {
      return spark.rule(on, () -> rows(sql));
    } catch (Exception e) {
      Throwable t = e;
      while (t.getCause() != null && !(t instanceof org.apache.spark.SparkThrowable)) {
        t = t.getCause();
      }
      String condition =
          t instanceof org.apache.spark.SparkThrowable st ? st.getCondition() : t.getClass().getName();
      return List.of("error: " + condition);
    }
  }

  /** The sorted rows of {@code sql}, binary values by their bytes. */
  static List<String> rows(String sql) {
    List<String> out = new ArrayList<>();
    for (org.apache.spark.sql.Row row : spark.sql(sql).collectAsList()) {
      List<String> values = new ArrayList<>();
      for (int i = 0; i < row.size(); i++) {
        Object v = row.get(i);
        values.add(v instanceof byte[] bytes ? java.util.Arrays.toString(bytes) : String.valueOf(v));
      }
      out.add(values.toString());
    }
    out.sort(null);
    return out;
  }

  @Test
  void everyAggregateFunctionGivesThePlainAnswer() {
    Set<String> windowOnly = new TreeSet<>();
    Set<String> functions = aggregateFunctions(windowOnly);
    assertTrue(functions.size() > 60, functions::toString); // the registry was read
    Map<String, List<String>> rewritten = new TreeMap<>();
    Set<String> unreached = new TreeSet<>();
    Set<String> leftAlone = new TreeSet<>();
    List<String> differed = new ArrayList<>();
    long started = System.nanoTime();
    spark.with(
        Map.of(SkewRule.AGGREGATES, "true"),
        () -> {
          for (String function : functions) {
            Map<String, org.apache.spark.sql.classic.Dataset<org.apache.spark.sql.Row>> calls = calls(function);
            if (calls.isEmpty()) {
              unreached.add(function);
              continue;
            }
            List<String> fired = new ArrayList<>();
            List<String> alone = new ArrayList<>();
            for (String call : calls.keySet()) {
              long before = SkewRule.rewrites();
              LogicalPlan on = spark.rule(true, () -> calls.get(call).queryExecution().optimizedPlan());
              if (SkewRule.rewrites() > before) {
                fired.add(call);
              } else {
                assertFalse(LocalSpark.outputs(on, "icefloe_"), on::toString);
                alone.add(call);
              }
            }
            if (!alone.isEmpty()) {
              // the calls the rule leaves alone, together: the very plan Spark makes without it
              String sql = query(alone);
              LogicalPlan off = spark.rule(false, () -> spark.optimized(sql));
              LogicalPlan on = spark.rule(true, () -> spark.optimized(sql));
              assertEquals(LocalSpark.normalized(off), LocalSpark.normalized(on), sql);
              leftAlone.add(function);
            }
            if (!fired.isEmpty()) {
              rewritten.put(function, fired);
            }
          }
          long planned = System.nanoTime();
          // the answers of every call the rule rewrites, with the rule and without, in ANSI
          // mode and not (there an overflowing sum fails the query, both ways)
          List<String> all = new ArrayList<>();
          rewritten.values().forEach(all::addAll);
          for (String ansi : List.of("false", "true")) {
            spark.with(
                Map.of("spark.sql.ansi.enabled", ansi),
                () -> {
                  differ(all, ansi, differed);
                  return null;
                });
          }
          System.out.printf(
              "icefloe differential: %d aggregate functions (%d window-only), %d calls rewritten;"
                  + " planned in %.1fs, answers in %.1fs%n",
              functions.size(), windowOnly.size(), all.size(), (planned - started) / 1e9,
              (System.nanoTime() - planned) / 1e9);
          return null;
        });
    System.out.println("icefloe differential: rewritten " + rewritten);
    System.out.println("icefloe differential: left alone " + leftAlone);
    System.out.println("icefloe differential: no GROUP BY call " + unreached + ", window-only " + windowOnly);
    System.out.println("icefloe differential: differed " + differed);
    assertEquals(List.of(), differed);
    assertEquals(REWRITTEN, rewritten.keySet(), rewritten::toString);
    assertEquals(UNCALLABLE, unreached);
  }

  /**
   * Adds to {@code differed} each call whose answer with the rule is not the plain one: all
   * in one query, halved where the query fails (one failing call fails it) or differs.
   */
  static void differ(List<String> calls, String ansi, List<String> differed) {
    String sql = query(calls);
    List<String> plain = answer(sql, false);
    List<String> salted = answer(sql, true);
    boolean failed = plain.size() == 1 && plain.get(0).startsWith("error: ");
    if (calls.size() == 1) {
      if (!plain.equals(salted)) {
        differed.add(calls.get(0) + " (ansi " + ansi + "): plain " + plain + ", with the rule " + salted);
      }
    } else if (failed || !plain.equals(salted)) {
      int half = calls.size() / 2;
      differ(calls.subList(0, half), ansi, differed);
      differ(calls.subList(half, calls.size()), ansi, differed);
    }
  }

  @Test
  void trySumOfTheIssue() {
    // issue #61: a partial try_sum that overflowed to NULL was summed as an ordinary NULL
    // ((42, NULL) plain, (42, 0) with the rule). Which rows share a salt follows the hash of
    // the aggregate's input row, so of its columns: the issue's query, and each sum alone
    String where = " FROM " + TABLE + " WHERE k IN (42, 7) GROUP BY k";
    List<String> queries =
        List.of(
            "SELECT k, try_sum(big), try_sum(huge), count(*)" + where,
            "SELECT k, try_sum(big)" + where,
            "SELECT k, try_sum(huge)" + where,
            "SELECT k, try_sum(dec)" + where);
    spark.with(
        Map.of(SkewRule.AGGREGATES, "true"),
        () -> {
          List<String> plain = spark.rule(false, () -> spark.rows(queries.get(0)));
          assertEquals(2, plain.size(), plain::toString);
          assertTrue(plain.contains("[42,null,null,6000]"), plain::toString); // both overflow
          for (String ansi : List.of("false", "true")) {
            for (String sql : queries) {
              spark.with(
                  Map.of("spark.sql.ansi.enabled", ansi),
                  () -> {
                    assertEquals(
                        spark.rule(false, () -> rows(sql)), spark.rule(true, () -> rows(sql)), sql + ", ansi " + ansi);
                    return null;
                  });
            }
          }
          return null;
        });
  }
}
