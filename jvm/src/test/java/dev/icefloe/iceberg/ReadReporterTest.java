package dev.icefloe.iceberg;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.ServerSocket;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.expressions.Expression;
import org.apache.iceberg.expressions.ExpressionUtil;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.metrics.DefaultMetricsContext;
import org.apache.iceberg.metrics.ImmutableScanReport;
import org.apache.iceberg.metrics.ScanMetrics;
import org.apache.iceberg.metrics.ScanMetricsResult;
import org.apache.iceberg.metrics.ScanReport;
import org.junit.jupiter.api.Test;

/** The record a scan report becomes, and a reporter whose Redis is gone (no Redis here). */
class ReadReporterTest {
  static ScanReport report(Expression filter, Map<String, String> metadata) {
    ScanMetrics m = ScanMetrics.of(new DefaultMetricsContext());
    m.resultDataFiles().increment(12L);
    m.skippedDataFiles().increment(30L);
    m.scannedDataManifests().increment(2L);
    m.totalFileSizeInBytes().increment(4096L);
    return ImmutableScanReport.builder()
        .tableName("lake.db.events")
        .snapshotId(77L)
        .schemaId(0)
        .filter(ExpressionUtil.sanitize(filter))
        .projectedFieldIds(List.of(1, 2))
        .projectedFieldNames(List.of("id", "region"))
        .scanMetrics(ScanMetricsResult.fromScanMetrics(m))
        .metadata(metadata)
        .build();
  }

  @Test
  void keepsColumnsOperatorsAndSanitizedPinsButNoLiteral() {
    Expression filter =
        Expressions.and(
            Expressions.in("region", "eu-west-secret", "us"),
            Expressions.or(Expressions.lessThan("amount", 12345), Expressions.isNull("id")));
    Map<String, String> r =
        ReadRecord.of(report(filter, Map.of("engine-name", "spark")), false, 1000L);
    assertEquals("lake.db.events", r.get("table"));
    assertEquals("77", r.get("snapshot"));
    assertEquals("12", r.get("files"));
    assertEquals("30", r.get("skipped_files"));
    assertEquals("4096", r.get("bytes"));
    assertEquals("region:in,amount:lt,id:is_null", r.get("filter_columns"));
    assertEquals("id,region", r.get("projected"));
    assertEquals("spark", r.get("engine"));
    assertFalse(r.containsKey("own"));
    // the top-level IN pins partitions by its hashed values; the OR pins nothing
    String pins = r.get("pins");
    assertTrue(pins.startsWith("[[\"region\",[\"(hash-"), pins);
    assertFalse(r.toString().contains("secret") || r.toString().contains("12345"), r.toString());
  }

  @Test
  void marksIcefloesOwnScans() {
    ScanReport own = report(Expressions.alwaysTrue(), Map.of(ReadReporter.OWN, "true"));
    assertEquals("1", ReadRecord.of(own, false, 0L).get("own"));
    ScanReport plain = report(Expressions.alwaysTrue(), Map.of());
    assertEquals("1", ReadRecord.of(plain, true, 0L).get("own"));
    assertEquals("[]", ReadRecord.of(plain, false, 0L).get("pins"));
  }

  @Test
  void anUnreachableRedisDropsAndCountsAndNeverThrows() throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort(); // closed again: nothing listens there
    }
    ReadReporter reporter = new ReadReporter();
    reporter.initialize(
        Map.of(
            ReadReporter.URL, "redis://127.0.0.1:" + port + "/0",
            ReadReporter.QUEUE_SIZE, "100",
            ReadReporter.PREFIX, "test-" + port));
    long before = ReadReporter.dropped();
    ScanReport r = report(Expressions.alwaysTrue(), Map.of());
    for (int i = 0; i < 1000; i++) {
      reporter.report(r); // the queue holds 100, the sender a batch: the rest are dropped at once
    }
    long atOnce = ReadReporter.dropped() - before;
    assertTrue(atOnce >= 1000 - 100 - ReadSink.BATCH, "dropped " + atOnce);
    assertTrue(ReadReporter.flush(20_000), "the sink let its batch go");
    assertEquals(1000, ReadReporter.dropped() - before);
  }

  @Test
  void aBadSettingReportsNothingAndFailsNothing() throws IOException {
    ReadReporter none = new ReadReporter();
    none.initialize(Map.of()); // no URL: one warning
    none.report(report(Expressions.alwaysTrue(), Map.of()));
    ReadReporter bad = new ReadReporter();
    bad.initialize(Map.of(ReadReporter.URL, "http://x", ReadReporter.QUEUE_SIZE, "-1"));
    bad.report(report(Expressions.alwaysTrue(), Map.of()));
  }
}
