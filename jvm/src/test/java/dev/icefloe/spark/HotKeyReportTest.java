package dev.icefloe.spark;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.types.DataTypes;
import org.junit.jupiter.api.Test;

/** How {@link SkewRule} reads a hot-key report from a table's properties (no session). */
class HotKeyReportTest {
  static final long NOW = 1_764_390_000_000L;
  static final String GOOD =
      "{\"v\":1,\"column\":\"cust_id\",\"type\":\"bigint\",\"snapshot_id\":123,"
          + "\"computed_at_ms\":" + NOW + ",\"max_age_ms\":86400000,\"rows\":1000000,"
          + "\"null_rows\":500,\"keys\":[[\"42\",300000],[\"7\",100000]]}";

  static Optional<HotKeyReport> read(String json, String snapshot, long now) {
    return HotKeyReport.of(
        Map.of(HotKeyReport.PREFIX + "cust_id", json, "current-snapshot-id", snapshot),
        "cust_id",
        DataTypes.LongType,
        now);
  }

  @Test
  void readsTheDocumentedFormat() {
    HotKeyReport r = read(GOOD, "123", NOW).orElseThrow();
    assertEquals(
        List.of(Literal.create(42L, DataTypes.LongType), Literal.create(7L, DataTypes.LongType)),
        r.keys());
    assertEquals(List.of(300_000L, 100_000L), r.keyRows());
    assertEquals(1_000_000L, r.rows());
    assertEquals(500L, r.nullRows());
    // 16 partitions, 62,500 rows each: both keys over it, their 400,000 rows in 25,000-row chunks
    assertArrayEquals(new int[] {12, 4}, r.salts(16, 32));
    assertArrayEquals(new int[] {8, 4}, r.salts(16, 8)); // at most maxSalts
    assertEquals(1, r.nullSalts(16, 32)); // 500 NULLs: under a partition's share
    // 8 partitions, 125,000 rows each: key 7 under it, left alone; key 42's rows in 8 chunks
    assertArrayEquals(new int[] {8, 1}, r.salts(8, 32));
  }

  @Test
  void usedAtItsSnapshotOrWhileYoung() {
    long old = NOW + 86_400_001L;
    assertTrue(read(GOOD, "123", old).isPresent()); // the table has not changed
    assertTrue(read(GOOD, "124", NOW + 1000).isPresent()); // changed, but the report is young
    assertTrue(read(GOOD, "124", old).isEmpty());
    assertTrue(read(GOOD, "none", old).isEmpty());
  }

  @Test
  void aBadReportIsNoReport() {
    for (String bad :
        List.of(
            "",
            "{",
            "[]",
            "null",
            GOOD.replace("\"v\":1", "\"v\":2"),
            GOOD.replace("bigint", "int"),
            GOOD.replace("\"column\":\"cust_id\"", "\"column\":\"id\""),
            GOOD.replace("[[\"42\",300000],[\"7\",100000]]", "[[\"x\",300000]]")
                .replace("\"null_rows\":500", "\"null_rows\":0"),
            GOOD.replace("[[\"42\",300000],[\"7\",100000]]", "[]").replace("\"null_rows\":500", "\"null_rows\":0"))) {
      assertTrue(read(bad, "123", NOW).isEmpty(), bad);
    }
    assertTrue(HotKeyReport.of(Map.of(), "cust_id", DataTypes.LongType, NOW).isEmpty());
  }

  @Test
  void keysThatDoNotReadAsTheTypeOrRepeatAreDropped() {
    String json = GOOD.replace("[[\"42\",300000],[\"7\",100000]]", "[[\"42\",300000],[\"x\",5],[\"42\",9],[\"8\",0]]");
    HotKeyReport r = read(json, "123", NOW).orElseThrow();
    assertEquals(List.of(Literal.create(42L, DataTypes.LongType)), r.keys());
    assertEquals(List.of(300_000L), r.keyRows());
  }

  /** {@link #GOOD} with {@code keys} (JSON) as its keys. */
  static String withKeys(String keys) {
    return GOOD.replace("[[\"42\",300000],[\"7\",100000]]", keys);
  }

  @Test
  void aHundredThousandKeysAreReadAsTheHeaviest64() {
    // issue #61: 100,000 keys were de-duplicated in O(n^2) and all used; the heaviest 64 are
    // kept, whatever the report's order (ties in its order), each once
    StringBuilder keys = new StringBuilder("[");
    for (int i = 0; i < 100_000; i++) {
      long rows = 1 + (i * 7919L) % 100_000; // every count from 1 to 100,000 once, shuffled
      keys.append(i == 0 ? "" : ",").append("[\"").append(i).append("\",").append(rows).append("]");
    }
    keys.append(",[\"5\",999999]]"); // a repeat: its first (heaviest) count is kept
    HotKeyReport r = read(withKeys(keys.toString()), "123", NOW).orElseThrow();
    assertEquals(SkewConf.MAX_KEYS, r.keys().size());
    assertEquals(64, r.keys().size());
    assertEquals(999_999L, r.keyRows().get(0));
    assertEquals(Literal.create(5L, DataTypes.LongType), r.keys().get(0));
    for (int i = 1; i < 64; i++) {
      assertEquals(100_001L - i, r.keyRows().get(i)); // the heaviest, heaviest first
    }
  }

  @Test
  void aReportIsParsedOncePerValue() {
    String json = withKeys("[[\"42\",300000],[\"7\",100001]]"); // a value no other test reads
    long parses = HotKeyReport.parses();
    for (int i = 0; i < 100; i++) {
      assertTrue(read(json, "123", NOW).isPresent());
    }
    assertTrue(read(json, "124", NOW + 86_400_001L).isEmpty()); // the age checked on each use
    assertEquals(parses + 1, HotKeyReport.parses());
    read(json.replace("100001", "100002"), "123", NOW);
    assertEquals(parses + 2, HotKeyReport.parses());
  }

  static Optional<HotKeyReport> readString(String json) {
    return HotKeyReport.of(
        "lake.db.t",
        Map.of(HotKeyReport.PREFIX + "s", json, "current-snapshot-id", "123"),
        "s",
        DataTypes.StringType,
        NOW);
  }

  @Test
  void aReportWithABigKeyIsIgnoredWithOneWarning() {
    String base = GOOD.replace("\"cust_id\"", "\"s\"").replace("bigint", "string");
    String small = "[[\"a\",300000],[\"" + "é".repeat(512) + "\",100000]]"; // 1,024 bytes
    assertEquals(2, readString(base.replace("[[\"42\",300000],[\"7\",100000]]", small)).orElseThrow().keys().size());
    StringBuilder many = new StringBuilder("[");
    for (int i = 0; i < 64; i++) {
      many.append(i == 0 ? "" : ",").append("[\"").append(i).append("x".repeat(300)).append("\",5]");
    }
    List<String> big =
        List.of(
            "[[\"" + "x".repeat(10 << 20) + "\",300000],[\"7\",100000]]", // one of 10 MB
            "[[\"a\",300000],[\"" + "é".repeat(513) + "\",100000]]", // 1,026 bytes
            many + "]"); // 64 of 302 bytes: 19 kB together
    long ignored = HotKeyReport.ignored();
    for (String keys : big) {
      String json = base.replace("[[\"42\",300000],[\"7\",100000]]", keys);
      for (int i = 0; i < 3; i++) {
        assertTrue(readString(json).isEmpty(), () -> keys.substring(0, 40));
      }
    }
    assertEquals(ignored + big.size(), HotKeyReport.ignored()); // once a report
    // a big key past the 64 heaviest is never used: the report is
    String past = many.toString().replace("x".repeat(300), "") + ",[\"" + "y".repeat(5000) + "\",1]]";
    assertEquals(64, readString(base.replace("[[\"42\",300000],[\"7\",100000]]", past)).orElseThrow().keys().size());
  }
}
