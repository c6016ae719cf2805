package dev.icefloe.spark;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.UnaryOperator;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.And;
import org.apache.spark.sql.catalyst.expressions.ArrayContains;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.Coalesce;
import org.apache.spark.sql.catalyst.expressions.EqualNullSafe;
import org.apache.spark.sql.catalyst.expressions.EqualTo;
import org.apache.spark.sql.catalyst.expressions.ExprId;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.In;
import org.apache.spark.sql.catalyst.expressions.IsNotNull;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.Or;
import org.apache.spark.sql.catalyst.expressions.ScalarSubquery;
import org.apache.spark.sql.catalyst.expressions.aggregate.CollectSet;
import org.apache.spark.sql.catalyst.plans.logical.Aggregate;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.Limit$;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.plans.logical.Subquery;

/**
 * Which of the reported hot keys one side of a join holds, asked of its rows when the query
 * runs: the report never stands for them (a key it names may be gone, filtered out, or never
 * there; a report is a table property anyone can write).
 *
 * <p>The answer is a predicate over the other side's key, made of scalar subqueries over a
 * fresh copy of the side's projections and filters (so they see the same rows). Spark runs
 * them once, before the rows that use them, as jobs of their own: one key, {@code SELECT key
 * ... WHERE key = <hot> LIMIT 1}, whose scan tasks stop at the key's first row (a hot key has
 * one in the first batch of about every file); more keys, one {@code SELECT
 * collect_set(key) ... WHERE key IN (<hot>)}, a read of the whole column.
 */
final class Presence {
  private Presence() {}

  static final String PRESENT = "icefloe_present";

  /**
   * True when {@code x} is one of {@code keys} that {@code side} holds in its column {@code
   * key}, false otherwise (for NULL too); null when the side cannot be read again ({@link
   * Lineage#freshCopy}). The keys {@code found} in the table's files ({@link DriverProbe})
   * are a constant list; the rest are asked of the rows. {@code optimize} is the session's
   * optimizer: a subquery made after Spark optimized the query's subqueries is optimized
   * here. One key is probed with a {@code LIMIT 1}; more share one set: a probe reads a
   * batch of every file, the set the whole column, so a second key's probe would cost about
   * what the set does (measured in {@code bench/skew_sql_bench.py}).
   */
  static Expression held(
      LogicalPlan side,
      AttributeReference key,
      List<Literal> keys,
      List<Literal> found,
      Expression x,
      UnaryOperator<LogicalPlan> optimize) {
    List<Literal> rest = new ArrayList<>(keys);
    rest.removeAll(found);
    Expression known =
        found.isEmpty()
            ? null
            : new Coalesce(
                Scala.seq(
                    List.<Expression>of(
                        new In(x, Scala.seq(new ArrayList<Expression>(found))),
                        Literal.FalseLiteral())));
    if (rest.isEmpty()) {
      return known;
    }
    Expression asked = asked(side, key, rest, x, optimize);
    return asked == null || known == null ? asked : new Or(known, asked);
  }

  private static Expression asked(
      LogicalPlan side,
      AttributeReference key,
      List<Literal> keys,
      Expression x,
      UnaryOperator<LogicalPlan> optimize) {
    Map<ExprId, Attribute> ids = new HashMap<>();
    Optional<LogicalPlan> copy = Lineage.freshCopy(side, ids);
    Attribute k = ids.get(key.exprId());
    if (copy.isEmpty() || k == null) {
      return null;
    }
    if (keys.size() == 1) {
      Literal hot = keys.get(0);
      LogicalPlan first =
          (LogicalPlan)
              Limit$.MODULE$.apply(
                  Scala.intLit(1), column(k, new Filter(new EqualTo(k, hot), copy.get())));
      return new And(new EqualNullSafe(x, hot), new IsNotNull(subquery(first, optimize)));
    }
    Filter hot = new Filter(new In(k, Scala.seq(new ArrayList<Expression>(keys))), copy.get());
    Alias set =
        new Alias(
            new CollectSet(k).toAggregateExpression(),
            PRESENT,
            Scala.newId(),
            Scala.seq(),
            Scala.none(),
            Scala.seq());
    LogicalPlan all =
        new Aggregate(Scala.seq(), Scala.seq(List.<NamedExpression>of(set)), hot, Scala.none());
    Expression contains = new ArrayContains(subquery(all, optimize), x);
    return new Coalesce(Scala.seq(List.<Expression>of(contains, Literal.FalseLiteral())));
  }

  /** Whether {@code side} can be read again with its column {@code key} ({@link #held}). */
  static boolean askable(LogicalPlan side, AttributeReference key) {
    Map<ExprId, Attribute> ids = new HashMap<>();
    return Lineage.freshCopy(side, ids).isPresent() && ids.get(key.exprId()) != null;
  }

  private static LogicalPlan column(Attribute k, LogicalPlan rows) {
    Alias present = new Alias(k, PRESENT, Scala.newId(), Scala.seq(), Scala.none(), Scala.seq());
    return new Project(Scala.seq(List.<NamedExpression>of(present)), rows);
  }

  private static ScalarSubquery subquery(LogicalPlan plan, UnaryOperator<LogicalPlan> optimize) {
    LogicalPlan optimized = ((Subquery) optimize.apply(new Subquery(plan, false))).child();
    return new ScalarSubquery(
        optimized, Scala.seq(), Scala.newId(), Scala.seq(), Scala.none(), Scala.none(), Scala.none());
  }
}
