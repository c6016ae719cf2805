package dev.icefloe.spark;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.EvalMode$;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression;
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateFunction;
import org.apache.spark.sql.catalyst.expressions.aggregate.Complete$;
import org.apache.spark.sql.catalyst.expressions.aggregate.Count;
import org.apache.spark.sql.catalyst.expressions.aggregate.Max;
import org.apache.spark.sql.catalyst.expressions.aggregate.Min;
import org.apache.spark.sql.catalyst.expressions.aggregate.Sum;
import org.apache.spark.sql.catalyst.plans.logical.Aggregate;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.rules.UnknownRuleId$;
import org.apache.spark.sql.catalyst.trees.TreePattern;
import org.apache.spark.sql.types.IntegralType;

/**
 * A {@code GROUP BY} over a reported hot key in two stages: partial aggregates grouped by
 * (keys, salt), then combined grouped by the keys. Only functions whose partials combine
 * exactly ({@link #splittable}): count (summed), min, max, and sum of an integral number
 * (of themselves) outside TRY mode. DISTINCT aggregates, and any other function, leave the
 * aggregation as written.
 * FILTER clauses stay on the partials.
 */
final class SaltedAggregate {
  private SaltedAggregate() {}

  static Optional<SaltedJoin.Rewrite> rewrite(Aggregate agg, SkewRule.Settings settings) {
    List<Expression> grouping = Scala.list(agg.groupingExpressions());
    if (grouping.isEmpty()) {
      return Optional.empty();
    }
    Salts best = null;
    AttributeReference bestKey = null;
    for (Expression g : grouping) {
      if (!(g instanceof AttributeReference key) || Salts.isOurs(key)) {
        return Optional.empty(); // salted already, or grouped by an expression
      }
      Optional<Salts> salts = Salts.of(agg.child(), key, settings);
      if (salts.isPresent() && (best == null || salts.get().hotRows > best.hotRows)) {
        best = salts.get();
        bestKey = key;
      }
    }
    if (best == null) {
      return Optional.empty();
    }
    List<AggregateExpression> found = new ArrayList<>();
    for (NamedExpression ne : Scala.list(agg.aggregateExpressions())) {
      if (!collect((Expression) ne, found)) {
        return Optional.empty();
      }
    }
    if (found.isEmpty()) {
      return Optional.empty();
    }
    return Optional.of(build(agg, best, bestKey, grouping, found));
  }

  /** Gathers the aggregates of {@code e}; false when one cannot be split. */
  private static boolean collect(Expression e, List<AggregateExpression> out) {
    List<AggregateExpression> found =
        Scala.list(e.collect(Scala.partial(x -> x instanceof AggregateExpression a ? a : null)));
    for (AggregateExpression ae : found) {
      if (ae.isDistinct() || ae.mode() != Complete$.MODULE$ || !splittable(ae.aggregateFunction())) {
        return false;
      }
    }
    out.addAll(found);
    return true;
  }

  /**
   * Whether {@code f}'s two-stage form (a complete aggregate per (keys, salt), then one that
   * combines those per keys) gives exactly its answer, NULLs, NaNs and overflows included:
   * an allow-list by class (a subclass is not on it). {@code count} (summed), {@code min} and
   * {@code max} of any type; {@code sum} of an integral number outside TRY mode (a long:
   * exact whatever the grouping, wrapping or failing on overflow as the plain sum does).
   * Not in TRY mode ({@code try_sum}): a partial that overflowed is NULL, and combined it
   * would count as an ordinary NULL, dropped; nor a sum of decimals (NULL past its precision
   * outside ANSI mode, the same way) or intervals; nor {@code avg} or a sum of floating
   * numbers: a double sum rounds by the order of its terms, so partials per salt give
   * another last digit than the plain plan (measured: avg of a bigint, 1.6651691707687275E15
   * plain, 1.665169170768726E15 salted). Anything else leaves the aggregation alone.
   */
  static boolean splittable(AggregateFunction f) {
    Class<?> c = f.getClass();
    if (c == Count.class || c == Min.class || c == Max.class) {
      return true;
    }
    if (c == Sum.class) {
      Sum sum = (Sum) f;
      return sum.evalContext().evalMode() != EvalMode$.MODULE$.TRY()
          && sum.child().dataType() instanceof IntegralType;
    }
    return false;
  }

  private static SaltedJoin.Rewrite build(
      Aggregate agg,
      Salts salts,
      AttributeReference key,
      List<Expression> grouping,
      List<AggregateExpression> found) {
    List<Attribute> row = Scala.list(agg.child().output());
    Alias salt = alias(salts.saltOf(key, row), salts.label());
    List<NamedExpression> projected = new ArrayList<>(row);
    projected.add(salt);
    LogicalPlan child = new Project(Scala.seq(projected), agg.child());

    List<NamedExpression> partials = new ArrayList<>();
    for (Expression g : grouping) {
      partials.add((NamedExpression) g);
    }
    Map<AggregateExpression, Expression> finals = new IdentityHashMap<>();
    for (AggregateExpression ae : found) {
      finals.put(ae, split(ae, partials));
    }
    List<Expression> innerGrouping = new ArrayList<>(grouping);
    innerGrouping.add(salt.toAttribute());
    Aggregate inner =
        new Aggregate(Scala.seq(innerGrouping), Scala.seq(partials), child, Scala.none());
    List<NamedExpression> results = new ArrayList<>();
    for (NamedExpression ne : Scala.list(agg.aggregateExpressions())) {
      results.add((NamedExpression) replace((Expression) ne, finals));
    }
    Aggregate outer = new Aggregate(agg.groupingExpressions(), Scala.seq(results), inner, agg.hint());
    String message =
        "icefloe: salted GROUP BY on "
            + salts.source.tableName()
            + "."
            + salts.source.column().name()
            + " ("
            + salts.keys.size()
            + " hot keys, up to "
            + salts.maxSalts()
            + " salts)";
    return new SaltedJoin.Rewrite(outer, message);
  }

  /** Adds {@code ae}'s partial aggregates to {@code partials}; returns what combines them. */
  private static Expression split(AggregateExpression ae, List<NamedExpression> partials) {
    AggregateFunction f = ae.aggregateFunction();
    Attribute p = partial(f, ae, partials);
    AggregateFunction merge =
        f instanceof Count
            ? new Sum(p)
            : (AggregateFunction) f.withNewChildren(Scala.seq(List.<Expression>of(p)));
    Expression out = combine(merge);
    return out.dataType().equals(ae.dataType()) ? out : Scala.cast(out, ae.dataType());
  }

  private static Attribute partial(
      AggregateFunction f, AggregateExpression like, List<NamedExpression> partials) {
    AggregateExpression e =
        new AggregateExpression(f, Complete$.MODULE$, false, like.filter(), Scala.newId());
    Alias a = alias(e, "icefloe_partial_" + f.prettyName());
    partials.add(a);
    return a.toAttribute();
  }

  private static Expression combine(AggregateFunction f) {
    return new AggregateExpression(f, Complete$.MODULE$, false, Scala.none(), Scala.newId());
  }

  private static Alias alias(Expression e, String name) {
    return new Alias(e, name, Scala.newId(), Scala.seq(), Scala.none(), Scala.seq());
  }

  /**
   * {@code e} with each aggregate of {@code finals} (the very instances {@link #collect} found:
   * a top-down transform meets them before it copies anything) replaced by what combines it.
   */
  private static Expression replace(Expression e, Map<AggregateExpression, Expression> finals) {
    return e.transformDownWithPruning(
        bits -> bits.containsPattern(TreePattern.AGGREGATE_EXPRESSION()),
        UnknownRuleId$.MODULE$,
        Scala.partial(x -> x instanceof AggregateExpression ae ? finals.get(ae) : null));
  }
}
