package dev.icefloe.spark;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.ExprId;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.IsNotNull;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.SubqueryExpression;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.rules.UnknownRuleId$;
import org.apache.spark.sql.catalyst.trees.TreePattern;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;

/**
 * Where a column of a plan comes from: a column of a data source v2 table (an Iceberg
 * table) reached through projections and filters only, so the column holds the table's
 * values (filtered), and the table's hot keys are its hot keys.
 */
final class Lineage {
  private Lineage() {}

  /** The table column behind {@code attribute} of {@code plan}, when there is one. */
  record Source(DataSourceV2Relation relation, AttributeReference column) {
    String tableName() {
      return relation.table().name();
    }
  }

  static Optional<Source> trace(LogicalPlan plan, ExprId id) {
    return trace(plan, id, false);
  }

  /**
   * {@link #trace}, and with {@code everyRow} only through filters of {@code IS NOT NULL} on
   * the column itself: the plan then holds every row of the table whose column is not NULL.
   */
  static Optional<Source> trace(LogicalPlan plan, ExprId id, boolean everyRow) {
    if (plan instanceof DataSourceV2Relation relation) {
      for (AttributeReference a : Scala.list(relation.output())) {
        if (a.exprId().equals(id)) {
          return Optional.of(new Source(relation, a));
        }
      }
      return Optional.empty();
    }
    if (plan instanceof Filter filter) {
      for (Expression term : Scala.conjuncts(filter.condition())) {
        if (everyRow
            && !(term instanceof IsNotNull n
                && n.child() instanceof AttributeReference a
                && a.exprId().equals(id))) {
          return Optional.empty();
        }
      }
      return trace(filter.child(), id, everyRow);
    }
    if (plan instanceof Project project) {
      for (NamedExpression ne : Scala.list(project.projectList())) {
        if (!ne.exprId().equals(id)) {
          continue;
        }
        if (ne instanceof AttributeReference) {
          return trace(project.child(), id, everyRow);
        }
        if (ne instanceof Alias alias && alias.child() instanceof AttributeReference a) {
          return trace(project.child(), a.exprId(), everyRow);
        }
        return Optional.empty();
      }
    }
    return Optional.empty();
  }

  /**
   * A copy of {@code plan} (projections and filters over a relation, as {@link #trace}
   * walked) whose attributes are all new, so it can stand in the same plan as the
   * original; {@code ids} receives old id to new attribute. Empty when the chain holds a
   * subquery or anything nondeterministic (a copy would not see the same rows).
   */
  static Optional<LogicalPlan> freshCopy(LogicalPlan plan, Map<ExprId, Attribute> ids) {
    if (plan instanceof DataSourceV2Relation relation) {
      DataSourceV2Relation copy = relation.newInstance();
      List<AttributeReference> before = Scala.list(relation.output());
      List<AttributeReference> after = Scala.list(copy.output());
      for (int i = 0; i < before.size(); i++) {
        ids.put(before.get(i).exprId(), after.get(i));
      }
      return Optional.of(copy);
    }
    if (plan instanceof Filter filter) {
      if (!safe(filter.condition())) {
        return Optional.empty();
      }
      return freshCopy(filter.child(), ids).map(c -> new Filter(remap(filter.condition(), ids), c));
    }
    if (plan instanceof Project project) {
      Optional<LogicalPlan> child = freshCopy(project.child(), ids);
      if (child.isEmpty()) {
        return child;
      }
      List<NamedExpression> list = new ArrayList<>();
      for (NamedExpression ne : Scala.list(project.projectList())) {
        if (!safe((Expression) ne)) {
          return Optional.empty();
        }
        if (ne instanceof Alias alias) {
          Alias copy =
              new Alias(
                  remap(alias.child(), ids),
                  alias.name(),
                  Scala.newId(),
                  alias.qualifier(),
                  alias.explicitMetadata(),
                  alias.nonInheritableMetadataKeys());
          ids.put(alias.exprId(), copy.toAttribute());
          list.add(copy);
        } else {
          list.add((NamedExpression) remap((Expression) ne, ids));
        }
      }
      return Optional.of(new Project(Scala.seq(list), child.get()));
    }
    return Optional.empty();
  }

  private static boolean safe(Expression e) {
    return e.deterministic() && !SubqueryExpression.hasSubquery(e);
  }

  /** {@code e} with its attributes of {@code ids} replaced by theirs (the others kept). */
  static Expression remap(Expression e, Map<ExprId, Attribute> ids) {
    return e.transformDownWithPruning(
        bits -> bits.containsPattern(TreePattern.ATTRIBUTE_REFERENCE()),
        UnknownRuleId$.MODULE$,
        Scala.partial(x -> x instanceof AttributeReference a ? ids.get(a.exprId()) : null));
  }

  static Map<ExprId, Attribute> ids() {
    return new HashMap<>();
  }
}
