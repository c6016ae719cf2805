package dev.icefloe.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.spark.sql.catalyst.expressions.Cast;
import org.apache.spark.sql.catalyst.expressions.EvalMode$;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.unsafe.types.UTF8String;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A hot-key report of one column, as {@code icefloe skew detect} stores it in the table
 * property {@code icefloe.skew.hot-keys.<column>} (see jvm/README.md for the format).
 *
 * <p>A report is used while the table is still at the snapshot it was computed at, or
 * until {@code max_age_ms} after it was computed; a report of another type than the
 * column's, or that does not parse, is ignored (the query runs as written).
 *
 * <p>Of its keys, the {@link SkewConf#MAX_KEYS} heaviest are used (ties in the report's
 * order), each once; a report whose used keys are bigger than {@link SkewConf#MAX_KEY_BYTES}
 * each or {@link SkewConf#MAX_KEYS_BYTES} together is ignored, with one warning (the keys
 * become literals of the plan, and of its text). A report is parsed once per (table,
 * column, type, property value): the parse is kept ({@link SkewConf#CACHED_REPORTS}), the
 * snapshot and age are checked on every use.
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
  private static final Logger LOG = LoggerFactory.getLogger(HotKeyReport.class);
  private static final AtomicLong PARSES = new AtomicLong();
  private static final AtomicLong IGNORED = new AtomicLong();
  /** A property value longer than this is keyed by its digest, not held by the cache. */
  private static final int HELD_CHARS = 64 * 1024;

  /** What a property value parsed to: {@code report} null when it is no report to use. */
  private record Parsed(HotKeyReport report) {}

  /** {@code value}: the property value, or its SHA-256 in hex (a String: equal by content). */
  private record CacheKey(String table, String column, String type, int length, String value) {}

  private static final Map<CacheKey, Parsed> PARSED =
      Collections.synchronizedMap(
          new LinkedHashMap<>(64, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<CacheKey, Parsed> eldest) {
              return size() > SkewConf.CACHED_REPORTS;
            }
          });

  HotKeyReport {
    keys = List.copyOf(keys);
    keyRows = List.copyOf(keyRows);
  }

  /** Property values parsed so far in this JVM (tests read it: a report is parsed once). */
  static long parses() {
    return PARSES.get();
  }

  /** Reports ignored so far for a key past the size limits (each warned of once). */
  static long ignored() {
    return IGNORED.get();
  }

  /** {@link #of(String, Map, String, DataType, long)} of an unnamed table. */
  static Optional<HotKeyReport> of(
      Map<String, String> properties, String column, DataType type, long nowMs) {
    return of("", properties, column, type, nowMs);
  }

  /**
   * The current report of {@code column} (of type {@code type}) in {@code properties} of
   * {@code table} (its name: a warning names it).
   */
  static Optional<HotKeyReport> of(
      String table, Map<String, String> properties, String column, DataType type, long nowMs) {
    String raw = properties.get(PREFIX + column);
    if (raw == null) {
      return Optional.empty();
    }
    String typeName = type.catalogString();
    CacheKey key =
        new CacheKey(
            table, column, typeName, raw.length(), raw.length() <= HELD_CHARS ? raw : HexFormat.of().formatHex(digest(raw)));
    Parsed parsed = PARSED.get(key);
    if (parsed == null) {
      parsed = new Parsed(parse(table, raw, column, type));
      PARSED.put(key, parsed);
    }
    HotKeyReport report = parsed.report();
    if (report == null || report.keys.isEmpty() && report.nullRows == 0) {
      return Optional.empty();
    }
    String current = properties.getOrDefault("current-snapshot-id", "none");
    boolean sameSnapshot = current.equals(Long.toString(report.snapshotId));
    boolean young = nowMs - report.computedAtMs <= report.maxAgeMs;
    return sameSnapshot || young ? Optional.of(report) : Optional.empty();
  }

  private static byte[] digest(String raw) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(raw.getBytes(StandardCharsets.UTF_8));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e); // every JVM has SHA-256
    }
  }

  private static HotKeyReport parse(String table, String raw, String column, DataType type) {
    PARSES.incrementAndGet();
    try {
      return parse(table, JSON.readTree(raw), column, type);
    } catch (Exception e) {
      return null; // a report we cannot read is no report: the plain plan runs
    }
  }

  private static HotKeyReport parse(String table, JsonNode node, String column, DataType type) {
    if (node.path("v").asInt() != 1
        || !column.equals(node.path("column").asText())
        || !type.catalogString().equals(node.path("type").asText())) {
      return null;
    }
    // the heaviest keys first (a sort keeps the report's order among equals), each once
    JsonNode pairs = node.path("keys");
    List<JsonNode> ranked = new ArrayList<>();
    for (JsonNode pair : pairs) {
      if (pair.path(1).asLong() > 0) {
        ranked.add(pair);
      }
    }
    ranked.sort(Comparator.comparingLong((JsonNode pair) -> pair.path(1).asLong()).reversed());
    Map<Literal, Long> kept = new LinkedHashMap<>();
    long bytes = 0;
    for (JsonNode pair : ranked) {
      if (kept.size() >= SkewConf.MAX_KEYS) {
        break;
      }
      String text = pair.path(0).asText();
      int size = utf8Bytes(text);
      if (size > SkewConf.MAX_KEY_BYTES) {
        return ignore(table, column, "a key of " + size + " bytes (at most " + SkewConf.MAX_KEY_BYTES + ")");
      }
      Literal key = literal(text, type);
      if (key != null && kept.putIfAbsent(key, pair.path(1).asLong()) == null) {
        bytes += size;
      }
    }
    if (bytes > SkewConf.MAX_KEYS_BYTES) {
      return ignore(table, column, "keys of " + bytes + " bytes (at most " + SkewConf.MAX_KEYS_BYTES + ")");
    }
    return new HotKeyReport(
        column,
        node.path("snapshot_id").asLong(),
        node.path("computed_at_ms").asLong(),
        node.path("max_age_ms").asLong(),
        node.path("rows").asLong(),
        node.path("null_rows").asLong(),
        new ArrayList<>(kept.keySet()),
        new ArrayList<>(kept.values()));
  }

  /** No report: logged once per parse, which is once per (table, column, property value). */
  private static HotKeyReport ignore(String table, String column, String why) {
    IGNORED.incrementAndGet();
    LOG.warn(
        "icefloe: ignoring the hot-key report {}{} of {}: {}; its joins and GROUP BYs run as"
            + " written",
        PREFIX,
        column,
        table.isEmpty() ? "a table" : table,
        why);
    return null;
  }

  /** The UTF-8 length of {@code text} (a surrogate pair: 4 bytes, 2 chars of 2 each). */
  private static int utf8Bytes(String text) {
    long n = 0;
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      n += c < 0x80 ? 1 : c < 0x800 || Character.isSurrogate(c) ? 2 : 3;
    }
    return (int) Math.min(Integer.MAX_VALUE, n);
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
