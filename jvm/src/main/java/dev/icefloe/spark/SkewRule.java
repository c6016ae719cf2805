package dev.icefloe.spark;

import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.UnaryOperator;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.plans.logical.Aggregate;
import org.apache.spark.sql.catalyst.plans.logical.Join;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.MergeRows;
import org.apache.spark.sql.catalyst.plans.logical.ReplaceData;
import org.apache.spark.sql.catalyst.plans.logical.WriteDelta;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.catalyst.rules.UnknownRuleId$;
import org.apache.spark.sql.catalyst.trees.TreePattern;
import org.apache.spark.sql.catalyst.trees.TreePatternBits;
import org.apache.spark.sql.connector.write.RowLevelOperationTable;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.Function1;

/**
 * Salts joins and {@code GROUP BY}s over the hot keys {@code icefloe skew detect} stored in
 * an Iceberg table's properties ({@link HotKeyReport}); see {@link SaltedJoin} and {@link
 * SaltedAggregate}. The result is always the plain plan's: the report only chooses which
 * keys are spread. Off with {@code SET spark.icefloe.skew.enabled=false}.
 */
public final class SkewRule extends Rule<LogicalPlan> {
  // the settings: one list, in SkewConf
  static final String ENABLED = SkewConf.ENABLED;
  static final String MAX_SALTS = SkewConf.MAX_SALTS;
  static final String AGGREGATES = SkewConf.AGGREGATES;
  static final String ISOLATE_MAX_BYTES = SkewConf.ISOLATE_MAX_BYTES;
  static final String PROBE_FILES = SkewConf.PROBE_FILES;
  static final String ISOLATE_MIN_SHARE = SkewConf.ISOLATE_MIN_SHARE;
  private static final Logger LOG = LoggerFactory.getLogger(SkewRule.class);
  private static final AtomicLong REWRITES = new AtomicLong();

  private final SparkSession session;

  public SkewRule(SparkSession session) {
    this.session = session;
  }

  /** Joins and aggregations this JVM rewrote so far (tests and benchmarks read it). */
  public static long rewrites() {
    return REWRITES.get();
  }

  record Settings(
      int partitions,
      int maxSalts,
      long nowMs,
      boolean aggregates,
      long broadcastBytes,
      long isolateBytes,
      double isolateMinShare,
      int probeFiles,
      UnaryOperator<LogicalPlan> optimize) {}

  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    if (!Boolean.parseBoolean(conf().getConfString(ENABLED, "true").trim())
        || plan.isStreaming()
        || rowLevelWrite(plan)) {
      return plan;
    }
    Settings settings =
        new Settings(
            conf().numShufflePartitions(),
            Math.max(2, intConf(MAX_SALTS, "32")),
            System.currentTimeMillis(),
            Boolean.parseBoolean(conf().getConfString(AGGREGATES, "false").trim()),
            conf().autoBroadcastJoinThreshold(),
            isolateBytes(conf().getConfString(ISOLATE_MAX_BYTES, "256m")),
            share(conf().getConfString(ISOLATE_MIN_SHARE, "0.6")),
            Math.max(0, intConf(PROBE_FILES, "2")),
            p -> session.sessionState().optimizer().execute(p));
    // Catalyst's traversal, bottom-up: each join (aggregation) is offered to the rewrite after
    // its children were, the rewritten plan is not visited again, and a subtree without a
    // join (aggregation) is skipped on its tree-pattern bits. UnknownRuleId: no node is ever
    // marked as one this rule leaves alone, since whether it rewrites a node depends on the
    // session's settings, the table's properties and the clock, not on the node alone
    // (Spark's RuleIdCollection only knows its own rules: this.ruleId() would throw)
    boolean aggregates = settings.aggregates();
    Function1<TreePatternBits, Object> candidates =
        bits ->
            bits.containsPattern(TreePattern.JOIN())
                || aggregates && bits.containsPattern(TreePattern.AGGREGATE());
    return plan.transformUpWithPruning(
        candidates, UnknownRuleId$.MODULE$, Scala.partial(p -> rewrite(p, settings)));
  }

  /** {@code isolateMaxBytes} as bytes ({@code 256m}, {@code 1g}...); negative: never isolate. */
  static long isolateBytes(String value) {
    String v = value.trim();
    try {
      return v.startsWith("-") ? -1 : org.apache.spark.network.util.JavaUtils.byteStringAsBytes(v);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(
          ISOLATE_MAX_BYTES + " must be a size such as 256m or -1, got '" + v + "'");
    }
  }

  /** {@code isolateMinShare}: a fraction of the rows, 0 (always isolate) or more. */
  static double share(String value) {
    String v = value.trim();
    try {
      double d = Double.parseDouble(v);
      if (d >= 0 && Double.isFinite(d)) {
        return d;
      }
    } catch (NumberFormatException e) {
      // named below
    }
    throw new IllegalArgumentException(
        ISOLATE_MIN_SHARE + " must be a share of the rows such as 0.6, got '" + v + "'");
  }

  /** The setting {@code name} as an int: a bad value fails the query, naming the setting. */
  private int intConf(String name, String fallback) {
    String v = conf().getConfString(name, fallback).trim();
    try {
      return Integer.parseInt(v);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(name + " must be an integer, got '" + v + "'");
    }
  }

  /**
   * Whether {@code plan} is (or holds) a row-level write: Iceberg's MERGE, UPDATE and
   * DELETE read their target through one shared scan that also decides which files the
   * commit replaces; a second read of it (the presence query) must never exist. The whole
   * plan is then left as written: checked on every node before the traversal starts (no
   * tree pattern marks these nodes, so nothing is pruned here).
   */
  static boolean rowLevelWrite(LogicalPlan plan) {
    return plan.exists(SkewRule::rowLevelNode);
  }

  /**
   * A row-level write's own node: Spark's {@code ReplaceData} (copy-on-write), {@code
   * WriteDelta} (merge-on-read) or {@code MergeRows} (a MERGE's actions), or a read of the
   * target through the operation's {@code RowLevelOperationTable}.
   */
  private static boolean rowLevelNode(LogicalPlan node) {
    return node instanceof ReplaceData
        || node instanceof WriteDelta
        || node instanceof MergeRows
        || node instanceof DataSourceV2Relation relation
            && relation.table() instanceof RowLevelOperationTable;
  }

  /** The rewritten {@code node} (a join or aggregation), or null where it is left alone. */
  private static LogicalPlan rewrite(LogicalPlan node, Settings settings) {
    Optional<SaltedJoin.Rewrite> done = Optional.empty();
    if (node instanceof Join join) {
      done = SaltedJoin.rewrite(join, settings);
    } else if (node instanceof Aggregate agg && settings.aggregates()) {
      done = SaltedAggregate.rewrite(agg, settings);
    }
    if (done.isEmpty()) {
      return null;
    }
    REWRITES.incrementAndGet();
    LOG.info(done.get().message());
    return done.get().plan();
  }
}
