package dev.icefloe.spark;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.CaseWhen;
import org.apache.spark.sql.catalyst.expressions.CreateArray;
import org.apache.spark.sql.catalyst.expressions.EqualTo;
import org.apache.spark.sql.catalyst.expressions.GetArrayItem;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.IsNull;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.Murmur3Hash;
import org.apache.spark.sql.catalyst.expressions.Pmod;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.VariantType;
import scala.Tuple2;

/**
 * The salt of one key column: the hot keys that get more than one salt, how many each,
 * and the expressions that salt a row of the salted side or copy a row of the other.
 */
final class Salts {
  static final String SALT = "icefloe_salt";

  final Lineage.Source source;
  final HotKeyReport report;
  final List<Literal> keys = new ArrayList<>();
  final List<Integer> counts = new ArrayList<>();
  /**
   * The salt values of each key (and of NULL), chosen so that (key, salt) hash to distinct
   * shuffle partitions: worked out only for a join or aggregation being rewritten (the rule
   * meets most candidates again on every pass of its batch).
   */
  private List<int[]> values;
  private int[] nullValues;
  private final int partitions;
  final int nullSalts;
  final long hotRows;

  Salts(Lineage.Source source, HotKeyReport report, int partitions, int maxSalts) {
    this.source = source;
    this.report = report;
    this.partitions = Math.max(partitions, 1);
    int[] n = report.salts(partitions, maxSalts);
    long rows = 0;
    for (int i = 0; i < n.length; i++) {
      if (n[i] > 1) {
        keys.add(report.keys().get(i));
        counts.add(n[i]);
        rows += report.keyRows().get(i);
      }
    }
    this.nullSalts = report.nullSalts(partitions, maxSalts);
    this.hotRows = rows;
  }

  private void spread() {
    if (values != null) {
      return;
    }
    int[] load = new int[partitions];
    // a reported key left alone keeps its rows at salt 0: its partition holds a chunk too
    for (int i = 0; i < report.keys().size(); i++) {
      Literal key = report.keys().get(i);
      if (!keys.contains(key)) {
        Object h = new Murmur3Hash(Scala.seq(key, Scala.intLit(0)), 42).eval(null);
        load[Math.floorMod((Integer) h, partitions)]++;
      }
    }
    values = new ArrayList<>();
    for (int i = 0; i < keys.size(); i++) {
      values.add(SaltValues.spread(keys.get(i), counts.get(i), load));
    }
    Literal nullKey =
        Literal.create(
            null, report.keys().isEmpty() ? DataTypes.NullType : report.keys().get(0).dataType());
    nullValues = nullSalts > 1 ? SaltValues.spread(nullKey, nullSalts, load) : new int[] {0};
  }

  /**
   * The salts of {@code key}, a column of {@code plan}: when it is a table's column (see
   * {@link Lineage#trace}) with a current report that has something to spread.
   */
  static java.util.Optional<Salts> of(
      org.apache.spark.sql.catalyst.plans.logical.LogicalPlan plan,
      AttributeReference key,
      SkewRule.Settings settings) {
    return Lineage.trace(plan, key.exprId())
        .flatMap(
            source ->
                HotKeyReport.of(
                        source.tableName(),
                        source.relation().table().properties(),
                        source.column().name(),
                        key.dataType(),
                        settings.nowMs())
                    .map(r -> new Salts(source, r, settings.partitions(), settings.maxSalts())))
        .filter(Salts::useful);
  }

  /** Whether there is anything to spread: a hot key with salts, or a pile of NULLs. */
  boolean useful() {
    return !keys.isEmpty() || nullSalts > 1;
  }

  int maxSalts() {
    int m = nullSalts;
    for (int c : counts) {
      m = Math.max(m, c);
    }
    return m;
  }

  /** What EXPLAIN shows as the salt column's name. */
  String label() {
    return SALT
        + "("
        + source.tableName()
        + "."
        + source.column().name()
        + ": "
        + keys.size()
        + " hot keys, "
        + maxSalts()
        + " salts)";
  }

  /**
   * Salt of a row of the salted side: for a hot key, one of its salts picked by the hash of
   * the whole row (a retried task salts alike); NULL keys spread the same way (they never
   * match); every other row 0.
   */
  Expression saltOf(Expression key, List<Attribute> row) {
    spread();
    Expression hash = new Murmur3Hash(Scala.seq(hashable(row)), 42);
    List<Tuple2<Expression, Expression>> branches = new ArrayList<>();
    for (int i = 0; i < keys.size(); i++) {
      branches.add(new Tuple2<>(new EqualTo(key, keys.get(i)), pick(values.get(i), hash)));
    }
    if (nullSalts > 1) {
      branches.add(new Tuple2<>(new IsNull(key), pick(nullValues, hash)));
    }
    if (branches.isEmpty()) {
      return Scala.intLit(0);
    }
    return new CaseWhen(Scala.seq(branches), Scala.some(Scala.intLit(0)));
  }

  /** Salts a row of the other side is copied to: all of its hot key's, else only 0. */
  Expression copiesOf(Expression key) {
    spread();
    List<Tuple2<Expression, Expression>> branches = new ArrayList<>();
    for (int i = 0; i < keys.size(); i++) {
      branches.add(new Tuple2<>(new EqualTo(key, keys.get(i)), array(values.get(i))));
    }
    Expression zero = array(new int[] {0});
    return branches.isEmpty() ? zero : new CaseWhen(Scala.seq(branches), Scala.some(zero));
  }

  /** The one copy of a row of the other side that may come out unmatched: its key's first salt. */
  Expression firstCopyOf(Expression key) {
    spread();
    List<Tuple2<Expression, Expression>> branches = new ArrayList<>();
    for (int i = 0; i < keys.size(); i++) {
      branches.add(new Tuple2<>(new EqualTo(key, keys.get(i)), Scala.intLit(values.get(i)[0])));
    }
    Expression zero = Scala.intLit(0);
    return branches.isEmpty() ? zero : new CaseWhen(Scala.seq(branches), Scala.some(zero));
  }

  private static Expression pick(int[] salts, Expression hash) {
    return new GetArrayItem(array(salts), new Pmod(hash, Scala.intLit(salts.length)), false);
  }

  private static Expression array(int[] salts) {
    List<Expression> items = new ArrayList<>();
    for (int s : salts) {
      items.add(Scala.intLit(s));
    }
    return new CreateArray(Scala.seq(items));
  }

  static AttributeReference saltAttribute(String name) {
    return new AttributeReference(
        name, DataTypes.IntegerType, false, Metadata.empty(), Scala.newId(), Scala.seq());
  }

  static boolean isOurs(Attribute a) {
    return a.name().startsWith("icefloe_");
  }

  private static List<Expression> hashable(List<Attribute> row) {
    List<Expression> out = new ArrayList<>();
    for (Attribute a : row) {
      boolean map = a.dataType().existsRecursively(t -> t instanceof MapType);
      boolean variant = a.dataType() instanceof VariantType;
      if (!map && !variant) {
        out.add(a);
      }
    }
    return out;
  }
}
