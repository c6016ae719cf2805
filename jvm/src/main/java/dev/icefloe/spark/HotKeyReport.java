package dev.icefloe.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.spark.sql.catalyst.expressions.Cast;
import org.apache.spark.sql.catalyst.expressions.EvalMode$;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * A hot-key report of one column, as {@code icefloe skew detect} stores it in the table
 * property {@code icefloe.skew.hot-keys.<column>} (see jvm/README.md for the format).
 *
 * <p>A report is used while the table is still at the snapshot it was computed at, or
 * until {@code max_age_ms} after it was computed; a report of another type than the
 * column's, or that does not parse, is ignored (the query runs as written).
 */
record HotKeyReport(
    String column,
    long snapshotId,
    long computedAtMs,
    long maxAgeMs,
    long rows,
    long nullRows,
    List<Literal> keys,
    List<Long> keyRows) {

  static final String PREFIX = "icefloe.skew.hot-keys.";
  private static final ObjectMapper JSON = new ObjectMapper();

  /** The current report of {@code column} (of type {@code type}) in {@code properties}. */
  static Optional<HotKeyReport> of(
      Map<String, String> properties, String column, DataType type, long nowMs) {
    String raw = properties.get(PREFIX + column);
    if (raw == null) {
      return Optional.empty();
    }
    try {
      HotKeyReport report = parse(JSON.readTree(raw), column, type);
      if (report == null || report.keys.isEmpty() && report.nullRows == 0) {
        return Optional.empty();
      }
      String current = properties.getOrDefault("current-snapshot-id", "none");
      boolean sameSnapshot = current.equals(Long.toString(report.snapshotId));
      boolean young = nowMs - report.computedAtMs <= report.maxAgeMs;
      return sameSnapshot || young ? Optional.of(report) : Optional.empty();
    } catch (Exception e) {
      return Optional.empty(); // a report we cannot read is no report: the plain plan runs
    }
  }

  private static HotKeyReport parse(JsonNode node, String column, DataType type) {
    if (node.path("v").asInt() != 1
        || !column.equals(node.path("column").asText())
        || !type.catalogString().equals(node.path("type").asText())) {
      return null;
    }
    List<Literal> keys = new ArrayList<>();
    List<Long> keyRows = new ArrayList<>();
    for (JsonNode pair : node.path("keys")) {
      Literal key = literal(pair.path(0).asText(), type);
      long n = pair.path(1).asLong();
      if (key != null && n > 0 && !keys.contains(key)) {
        keys.add(key);
        keyRows.add(n);
      }
    }
    return new HotKeyReport(
        column,
        node.path("snapshot_id").asLong(),
        node.path("computed_at_ms").asLong(),
        node.path("max_age_ms").asLong(),
        node.path("rows").asLong(),
        node.path("null_rows").asLong(),
        keys,
        keyRows);
  }

  /** {@code CAST(text AS type)} folded now; null when it does not read as that type. */
  private static Literal literal(String text, DataType type) {
    Literal raw = Literal.create(UTF8String.fromString(text), DataTypes.StringType);
    Cast cast = new Cast(raw, type, Scala.some("UTC"), EvalMode$.MODULE$.TRY());
    Object value = cast.eval(null);
    return value == null ? null : Literal.create(value, type);
  }

  /**
   * Salts per hot key. A key (or the NULL pile) with more rows than the table's average
   * partition ({@code rows / partitions}) is spread; the others are left alone. The rows of
   * the spread ones are cut into chunks of {@code spread rows / partitions}, at least 2
   * chunks a key, at most {@code maxSalts}: one chunk per partition beside its share of the
   * rest, so no partition holds a chunk where another holds none (chunks of a whole average
   * partition each would fill a few partitions to twice the others' rows when the hot rows
   * are half the table's).
   */
  int[] salts(int partitions, int maxSalts) {
    int[] out = new int[keys.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = saltsFor(keyRows.get(i), partitions, maxSalts);
    }
    return out;
  }

  int nullSalts(int partitions, int maxSalts) {
    return saltsFor(nullRows, partitions, maxSalts);
  }

  private double average(int partitions) {
    return Math.max(1.0, (double) Math.max(rows, 1) / Math.max(partitions, 1));
  }

  private int saltsFor(long keyRows, int partitions, int maxSalts) {
    double average = average(partitions);
    if (keyRows <= average) {
      return 1;
    }
    long spread = nullRows > average ? nullRows : 0;
    for (long n : this.keyRows) {
      spread += n > average ? n : 0;
    }
    double chunk = Math.max(1.0, (double) spread / Math.max(partitions, 1));
    long n = (long) Math.ceil(keyRows / chunk);
    return (int) Math.min(maxSalts, Math.max(2, n));
  }
}
