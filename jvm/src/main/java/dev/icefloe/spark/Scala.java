package dev.icefloe.spark;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Function;
import org.apache.spark.sql.catalyst.expressions.And;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.ExprId;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.NamedExpression$;
import org.apache.spark.sql.types.DataTypes;
import scala.Function1;
import scala.Option;
import scala.PartialFunction;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.AbstractPartialFunction;

/** Small bridges from Java to the Scala collections and options Catalyst takes. */
final class Scala {
  private Scala() {}

  static <T> scala.collection.immutable.Seq<T> seq(List<T> items) {
    return CollectionConverters.asScala(items).toList();
  }

  @SafeVarargs
  static <T> scala.collection.immutable.Seq<T> seq(T... items) {
    return seq(Arrays.asList(items));
  }

  static <T> List<T> list(scala.collection.Seq<T> items) {
    return new ArrayList<>(CollectionConverters.asJava(items));
  }

  /**
   * The Scala partial function Catalyst's transforms and {@code collect} take: defined where
   * {@code f} gives a value, not where it gives null. Catalyst calls only {@code applyOrElse}
   * (so {@code f} runs once per node); {@code isDefinedAt} runs {@code f} to answer.
   */
  static <T, R> PartialFunction<T, R> partial(Function<? super T, ? extends R> f) {
    return new AbstractPartialFunction<T, R>() {
      @Override
      public boolean isDefinedAt(T x) {
        return f.apply(x) != null;
      }

      @Override
      @SuppressWarnings("unchecked")
      public <A1 extends T, B1> B1 applyOrElse(A1 x, Function1<A1, B1> fallback) {
        R out = f.apply(x);
        return out != null ? (B1) out : fallback.apply(x);
      }
    };
  }

  static <T> Option<T> some(T value) {
    return Option.apply(value);
  }

  static <T> Option<T> none() {
    return Option.empty();
  }

  static ExprId newId() {
    return NamedExpression$.MODULE$.newExprId();
  }

  /** {@code CAST(e AS type)} with the session's evaluation mode. */
  static Expression cast(Expression e, org.apache.spark.sql.types.DataType type) {
    return new org.apache.spark.sql.catalyst.expressions.Cast(e, type, Option.empty());
  }

  static Literal intLit(int value) {
    return Literal.create(value, DataTypes.IntegerType);
  }

  /** The conjunction of {@code terms} (at least one). */
  static Expression and(List<Expression> terms) {
    Expression out = terms.get(0);
    for (int i = 1; i < terms.size(); i++) {
      out = new And(out, terms.get(i));
    }
    return out;
  }

  /** The conjuncts of {@code e}: {@code a AND (b AND c)} gives a, b, c. */
  static List<Expression> conjuncts(Expression e) {
    List<Expression> out = new ArrayList<>();
    if (e instanceof And and) {
      out.addAll(conjuncts(and.left()));
      out.addAll(conjuncts(and.right()));
    } else {
      out.add(e);
    }
    return out;
  }
}
