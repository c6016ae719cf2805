package dev.icefloe.iceberg;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.apache.iceberg.expressions.And;
import org.apache.iceberg.expressions.Expression;
import org.apache.iceberg.expressions.Expression.Operation;
import org.apache.iceberg.expressions.Literal;
import org.apache.iceberg.expressions.Not;
import org.apache.iceberg.expressions.Or;
import org.apache.iceberg.expressions.UnboundPredicate;
import org.apache.iceberg.expressions.UnboundTerm;
import org.apache.iceberg.metrics.CounterResult;
import org.apache.iceberg.metrics.ScanMetricsResult;
import org.apache.iceberg.metrics.ScanReport;
import org.apache.iceberg.metrics.TimerResult;

/**
 * One scan report as the compact record icefloe keeps (the fields of one Redis stream entry,
 * all strings; icefloe.state.reads reads them back).
 *
 * <p>The filter a {@link ScanReport} carries is sanitized by Iceberg itself ({@code
 * ExpressionUtil.sanitize}, on every engine and on the REST client's side): numbers become
 * their magnitude, strings a hash, dates and timestamps their distance from now. So no
 * literal of a reader's predicate ever reaches icefloe. The record keeps the columns and
 * operators filtered on, and for the predicates every row must pass (the top-level {@code
 * AND}), their sanitized values: icefloe matches a string's hash, or a date's distance from
 * the report's time, against the table's partition values to see which partitions a scan
 * pinned.
 */
final class ReadRecord {
  private ReadRecord() {}

  /** Columns and projected names kept at most (a 500-column table's scan stays small). */
  static final int MAX_NAMES = 64;
  /** Pinning predicates kept at most, and values per predicate. */
  static final int MAX_PINS = 16;

  static final int MAX_VALUES = 16;

  static Map<String, String> of(ScanReport report, boolean own, long atMillis) {
    Map<String, String> out = new LinkedHashMap<>();
    out.put("table", report.tableName());
    out.put("snapshot", Long.toString(report.snapshotId()));
    out.put("at", Long.toString(atMillis));
    ScanMetricsResult m = report.scanMetrics();
    if (m != null) {
      out.put("files", count(m.resultDataFiles()));
      out.put("skipped_files", count(m.skippedDataFiles()));
      out.put("delete_files", count(m.resultDeleteFiles()));
      out.put("manifests", count(m.scannedDataManifests()));
      out.put("skipped_manifests", count(m.skippedDataManifests()));
      out.put("bytes", count(m.totalFileSizeInBytes()));
      out.put("planning_ms", millis(m.totalPlanningDuration()));
    }
    Filter filter = new Filter();
    filter.walk(report.filter(), true);
    out.put("filter_columns", String.join(",", filter.columns));
    out.put("pins", Json.array(filter.pins));
    List<String> projected = report.projectedFieldNames();
    if (projected != null) {
      out.put("projected", String.join(",", first(projected, MAX_NAMES)));
    }
    Map<String, String> meta = report.metadata();
    if (meta != null && meta.get("engine-name") != null) {
      out.put("engine", meta.get("engine-name"));
    }
    if (own || (meta != null && meta.containsKey(ReadReporter.OWN))) {
      out.put("own", "1");
    }
    return out;
  }

  private static String count(CounterResult c) {
    return c == null ? "0" : Long.toString(c.value());
  }

  private static String millis(TimerResult t) {
    return t == null ? "0" : Long.toString(t.totalDuration().toMillis());
  }

  private static <T> List<T> first(List<T> values, int n) {
    return values.size() <= n ? values : values.subList(0, n);
  }

  /** The columns a filter names ({@code column:op}), and its top-level pinning predicates. */
  private static final class Filter {
    final Set<String> columns = new LinkedHashSet<>();
    final List<String> pins = new ArrayList<>();

    void walk(Expression e, boolean conjunct) {
      if (e instanceof And) {
        walk(((And) e).left(), conjunct);
        walk(((And) e).right(), conjunct);
      } else if (e instanceof Or) {
        walk(((Or) e).left(), false);
        walk(((Or) e).right(), false);
      } else if (e instanceof Not) {
        walk(((Not) e).child(), false);
      } else if (e instanceof UnboundPredicate) {
        predicate((UnboundPredicate<?>) e, conjunct);
      }
    }

    private void predicate(UnboundPredicate<?> p, boolean conjunct) {
      String column = column(p.term());
      String op = p.op().name().toLowerCase(Locale.ROOT);
      if (column == null) {
        return;
      }
      if (columns.size() < MAX_NAMES) {
        columns.add(column + ":" + op);
      }
      boolean pins = p.op() == Operation.EQ || p.op() == Operation.IN;
      if (conjunct && pins && p.literals() != null && this.pins.size() < MAX_PINS) {
        List<String> values = new ArrayList<>();
        for (Literal<?> lit : first(p.literals(), MAX_VALUES)) {
          values.add(String.valueOf(lit.value()));
        }
        this.pins.add(Json.array(List.of(Json.string(column), Json.array(Json.strings(values)))));
      }
    }

    private static String column(UnboundTerm<?> term) {
      return term.ref() == null ? null : term.ref().name();
    }
  }
}
