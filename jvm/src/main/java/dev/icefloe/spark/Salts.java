package dev.icefloe.spark;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.CaseWhen;
import org.apache.spark.sql.catalyst.expressions.CreateArray;
import org.apache.spark.sql.catalyst.expressions.EqualTo;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.IsNull;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.Murmur3Hash;
import org.apache.spark.sql.catalyst.expressions.Pmod;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.Metadata;
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
  final int nullSalts;
  final long hotRows;

  Salts(Lineage.Source source, HotKeyReport report, int partitions, int maxSalts) {
    this.source = source;
    this.report = report;
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
    Expression hash = new Murmur3Hash(Scala.seq(hashable(row)), 42);
    List<Tuple2<Expression, Expression>> branches = new ArrayList<>();
    for (int i = 0; i < keys.size(); i++) {
      branches.add(
          new Tuple2<>(new EqualTo(key, keys.get(i)), new Pmod(hash, Scala.intLit(counts.get(i)))));
    }
    if (nullSalts > 1) {
      branches.add(new Tuple2<>(new IsNull(key), new Pmod(hash, Scala.intLit(nullSalts))));
    }
    if (branches.isEmpty()) {
      return Scala.intLit(0);
    }
    return new CaseWhen(Scala.seq(branches), Scala.some(Scala.intLit(0)));
  }

  /** Salts a row of the other side is copied to: all of its hot key's, else only 0. */
  Expression copiesOf(Expression key) {
    List<Tuple2<Expression, Expression>> branches = new ArrayList<>();
    for (int i = 0; i < keys.size(); i++) {
      List<Expression> salts = new ArrayList<>();
      for (int s = 0; s < counts.get(i); s++) {
        salts.add(Scala.intLit(s));
      }
      branches.add(new Tuple2<>(new EqualTo(key, keys.get(i)), new CreateArray(Scala.seq(salts))));
    }
    Expression zero = new CreateArray(Scala.seq(List.<Expression>of(Scala.intLit(0))));
    return branches.isEmpty() ? zero : new CaseWhen(Scala.seq(branches), Scala.some(zero));
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
      boolean variant = a.dataType().typeName().equals("variant");
      if (!map && !variant) {
        out.add(a);
      }
    }
    return out;
  }
}
