package dev.icefloe.spark;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.And;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.ExprId;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.In;
import org.apache.spark.sql.catalyst.expressions.IsNotNull;
import org.apache.spark.sql.catalyst.expressions.IsNull;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.Not;
import org.apache.spark.sql.catalyst.expressions.Or;
import org.apache.spark.sql.catalyst.plans.FullOuter$;
import org.apache.spark.sql.catalyst.plans.Inner$;
import org.apache.spark.sql.catalyst.plans.JoinType;
import org.apache.spark.sql.catalyst.plans.LeftAnti$;
import org.apache.spark.sql.catalyst.plans.LeftOuter$;
import org.apache.spark.sql.catalyst.plans.RightOuter$;
import org.apache.spark.sql.catalyst.plans.logical.BROADCAST$;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.HintInfo;
import org.apache.spark.sql.catalyst.plans.logical.Join;
import org.apache.spark.sql.catalyst.plans.logical.JoinHint;
import org.apache.spark.sql.catalyst.plans.logical.JoinStrategyHint;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.plans.logical.SHUFFLE_HASH$;
import org.apache.spark.sql.catalyst.plans.logical.Union;
import scala.Option;

/**
 * A join over reported hot keys, isolated: the reported (skewed) side's rows of the hot keys
 * never go through a shuffle. The join becomes the {@code UNION ALL} of (hot first)
 *
 * <ul>
 *   <li><b>cold</b>: the same join of both sides without the hot keys (and without the
 *       skewed side's NULL keys, which match nothing), shuffled, with no hot key left in it:
 *       a shuffled hash join that builds the other side (bounded, see below) instead of
 *       sorting both, unless the query hints otherwise. When the other side keeps its
 *       unmatched rows (FULL; LEFT or RIGHT whose preserved side is the other one;
 *       single-key equi-joins only), its rows of the hot keys the skewed side does not hold
 *       join here too, where they stay unmatched ({@link Presence#held} asks the skewed
 *       side at run time);
 *   <li><b>hot</b>: the skewed side's rows of the hot keys (and its NULL keys where its
 *       unmatched rows are kept) joined with the other side's rows of the hot keys,
 *       broadcast: a map-side join (inner, or outer on the skewed side when that side keeps
 *       its unmatched rows; semi and anti as they are).
 * </ul>
 *
 * Every row of the plain join comes out of exactly one part: a pair of rows matches only on
 * equal keys, and a key is hot or cold on both sides alike (the other side's rows of a hot
 * key the skewed side lacks are in both parts' inputs, but match in neither, and only the
 * cold join keeps them unmatched). Applies when the other side is
 * small enough that its hot keys' rows can be broadcast whatever they are: Spark's estimate
 * of the whole side is at most {@code spark.icefloe.skew.isolateMaxBytes}.
 */
final class IsolatedJoin {
  private IsolatedJoin() {}

  static final String LABEL = "icefloe_isolate";

  /**
   * Whether the join of {@code candidate} can be isolated under {@code settings}: the other
   * side small enough, a hot key to isolate.
   */
  static boolean applies(Join join, boolean skewedLeft, Salts salts, SkewRule.Settings settings) {
    return !salts.report.keys().isEmpty()
        && otherFits(join, skewedLeft, settings)
        && spared(join, skewedLeft, salts.report) >= settings.isolateMinShare();
  }

  /** Whether the side opposite the skewed one is at most {@code isolateMaxBytes}. */
  static boolean otherFits(Join join, boolean skewedLeft, SkewRule.Settings settings) {
    if (settings.isolateBytes() < 0) {
      return false;
    }
    LogicalPlan other = skewedLeft ? join.right() : join.left();
    return other.stats().sizeInBytes().compare(scala.math.BigInt.apply(settings.isolateBytes()))
        <= 0;
  }

  /**
   * The share of the skewed side's rows (as reported) that isolating keeps out of the
   * shuffle: its hot keys' rows, and its NULL keys' when the join keeps them. The hot part
   * reads the whole skewed side a second time to spare those rows the shuffle; below about
   * 60% of the rows the second read costs more than the shuffle it saves (bench/README.md,
   * session 31), and the salted form, one read, is the cheaper.
   */
  static double spared(Join join, boolean skewedLeft, HotKeyReport report) {
    if (report.rows() <= 0) {
      return 1.0;
    }
    JoinType type = join.joinType();
    boolean keepsNulls =
        type == FullOuter$.MODULE$
            || type == LeftAnti$.MODULE$
            || type == LeftOuter$.MODULE$ && skewedLeft
            || type == RightOuter$.MODULE$ && !skewedLeft;
    long rows = keepsNulls ? report.nullRows() : 0;
    for (long n : report.keyRows()) {
      rows += n;
    }
    return (double) rows / report.rows();
  }

  /**
   * The isolated form of {@code join}, whose {@code skewedKey} (a column of the side {@code
   * skewedLeft} says) has the hot keys of {@code salts}; {@code held} is true for the hot keys
   * of {@code otherKey} the skewed side holds (null when the other side keeps no unmatched
   * rows).
   */
  static SaltedJoin.Rewrite build(
      Join join,
      boolean skewedLeft,
      AttributeReference skewedKey,
      AttributeReference otherKey,
      Salts salts,
      Expression held) {
    JoinType type = join.joinType();
    LogicalPlan skewed = skewedLeft ? join.left() : join.right();
    LogicalPlan other = skewedLeft ? join.right() : join.left();
    boolean anti = type == LeftAnti$.MODULE$;
    boolean keepsSkewed =
        type == FullOuter$.MODULE$
            || type == LeftOuter$.MODULE$ && skewedLeft
            || type == RightOuter$.MODULE$ && !skewedLeft;

    List<Expression> keys = new ArrayList<>(salts.report.keys()); // every reported key
    Expression hotSkewed = new In(skewedKey, Scala.seq(keys));
    Expression hotOther = new In(otherKey, Scala.seq(keys));
    LogicalPlan skewedCold = new Filter(new And(new IsNotNull(skewedKey), new Not(hotSkewed)), skewed);
    Expression coldOther = new Or(new Not(hotOther), new IsNull(otherKey));
    if (held != null) {
      // the other side's rows of a hot key the skewed side lacks join nothing: they go to the
      // cold join, which keeps them unmatched (its filter, below its shuffle, runs the
      // presence subqueries at the query's start, beside the skewed side's scan)
      coldOther = new Or(coldOther, new Not(held));
    }
    LogicalPlan otherCold = new Filter(coldOther, other);
    Expression skewedHotRows = keepsSkewed || anti ? new Or(hotSkewed, new IsNull(skewedKey)) : hotSkewed;
    // the hot part joins on the skewed key renamed for EXPLAIN (a union drops the name)
    Alias label =
        new Alias(skewedKey, label(salts), Scala.newId(), Scala.seq(), Scala.none(), Scala.seq());
    List<NamedExpression> hotColumns = new ArrayList<>(Scala.list(skewed.output()));
    hotColumns.add(label);
    LogicalPlan skewedHot = new Project(Scala.seq(hotColumns), new Filter(skewedHotRows, skewed));
    LogicalPlan otherHot = new Filter(hotOther, other);

    // the cold part: a shuffled hash join building the other side (at most isolateMaxBytes,
    // spread over the shuffle's partitions), not a sort of both; a user's hint stays
    HintInfo hashed = HintInfo.apply(Scala.<JoinStrategyHint>some(SHUFFLE_HASH$.MODULE$));
    JoinHint coldHint = join.hint();
    if (coldHint.leftHint().isEmpty() && coldHint.rightHint().isEmpty()) {
      coldHint =
          skewedLeft
              ? JoinHint.apply(Scala.none(), Scala.some(hashed))
              : JoinHint.apply(Scala.some(hashed), Scala.none());
    }
    List<LogicalPlan> parts = new ArrayList<>();
    parts.add(
        new Join(
            skewedLeft ? skewedCold : otherCold,
            skewedLeft ? otherCold : skewedCold,
            type,
            join.condition(),
            coldHint));

    JoinType hotType = type;
    if (type == FullOuter$.MODULE$ || type == LeftOuter$.MODULE$ || type == RightOuter$.MODULE$) {
      hotType = !keepsSkewed ? Inner$.MODULE$ : skewedLeft ? LeftOuter$.MODULE$ : RightOuter$.MODULE$;
    }
    HintInfo broadcast = HintInfo.apply(Scala.<JoinStrategyHint>some(BROADCAST$.MODULE$));
    Option<HintInfo> none = Scala.none();
    JoinHint hint =
        skewedLeft ? JoinHint.apply(none, Scala.some(broadcast)) : JoinHint.apply(Scala.some(broadcast), none);
    Map<ExprId, Attribute> renamed = new HashMap<>();
    renamed.put(skewedKey.exprId(), label.toAttribute());
    Join hot =
        new Join(
            skewedLeft ? skewedHot : otherHot,
            skewedLeft ? otherHot : skewedHot,
            hotType,
            Scala.some(Lineage.remap(join.condition().get(), renamed)),
            hint);
    List<NamedExpression> columns = new ArrayList<>(Scala.list(join.output()));
    // the hot part first: its tasks (a map-side join over the reported side's splits) are
    // the stage's longest, and the stage starts its tasks in the union's order, so the short
    // shuffled ones fill in after them (longest first; against cold first, measured:
    // 0.76-0.98x the wall at 1 M rows, 0.85-1.05x at 4 M)
    parts.add(0, new Project(Scala.seq(columns), hot));

    String message =
        "icefloe: isolated "
            + type.sql()
            + " join on "
            + salts.source.tableName()
            + "."
            + salts.source.column().name()
            + " ("
            + salts.report.keys().size()
            + " hot keys broadcast from the "
            + (skewedLeft ? "right" : "left")
            + " side)";
    return new SaltedJoin.Rewrite(new Union(Scala.seq(parts), false, false), message);
  }

  /** What EXPLAIN shows: {@code icefloe_isolate(<table>.<column>: <k> hot keys, broadcast)}. */
  private static String label(Salts salts) {
    return LABEL
        + "("
        + salts.source.tableName()
        + "."
        + salts.source.column().name()
        + ": "
        + salts.report.keys().size()
        + " hot keys, broadcast)";
  }
}
