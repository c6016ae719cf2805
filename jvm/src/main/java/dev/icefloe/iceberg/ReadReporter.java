package dev.icefloe.iceberg;

import java.util.Map;
import org.apache.iceberg.metrics.MetricsReport;
import org.apache.iceberg.metrics.MetricsReporter;
import org.apache.iceberg.metrics.ScanReport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Iceberg's scan reports to icefloe, never at a reader's expense: name it in a catalog's
 * {@code metrics-reporter-impl} (Spark: {@code spark.sql.catalog.<name>.metrics-reporter-impl
 * =dev.icefloe.iceberg.ReadReporter}) with {@code icefloe.reads.redis-url}.
 *
 * <p>{@link #report} only puts the report on a bounded in-memory queue (a full one drops it
 * and counts it): a background thread per Redis ({@link ReadSink}) appends each as a compact
 * record ({@link ReadRecord}) to a capped Redis stream. A slow, full or unreachable Redis
 * drops reports; nothing here blocks, slows or fails a query. Commit reports are ignored.
 *
 * <p>Catalog properties (all optional but the URL): {@code icefloe.reads.redis-url} (redis://
 * or rediss://, user and password in it), {@code icefloe.reads.key-prefix} ({@code icefloe}:
 * icefloe's {@code redis.key_prefix}), {@code icefloe.reads.cluster} ({@code false}), {@code
 * icefloe.reads.queue-size} ({@code 10000} reports), {@code icefloe.reads.max-len} (the
 * stream's cap, {@code 100000}) and {@code icefloe.reads.own} ({@code true} on icefloe's own
 * sessions: their reads are its rewrites, not readers'). A scan whose report's metadata holds
 * {@link #OWN} (Iceberg's {@code EnvironmentContext}, which REST clients send too) is marked
 * the same way.
 */
public final class ReadReporter implements MetricsReporter {
  private static final Logger LOG = LoggerFactory.getLogger(ReadReporter.class);

  /** The {@code EnvironmentContext} key icefloe's own JVMs set: their scans are rewrites. */
  public static final String OWN = "icefloe-own";

  static final String URL = "icefloe.reads.redis-url";
  static final String PREFIX = "icefloe.reads.key-prefix";
  static final String CLUSTER = "icefloe.reads.cluster";
  static final String QUEUE_SIZE = "icefloe.reads.queue-size";
  static final String MAX_LEN = "icefloe.reads.max-len";
  static final String OWN_PROPERTY = "icefloe.reads.own";

  private volatile ReadSink sink;
  private boolean own;

  @Override
  public void initialize(Map<String, String> properties) {
    try {
      String url = properties.get(URL);
      if (url == null || url.isBlank()) {
        LOG.warn("icefloe ReadReporter: no {} in the catalog's properties: reads not reported", URL);
        return;
      }
      ReadSink.Settings settings =
          new ReadSink.Settings(
              url.strip(),
              properties.getOrDefault(PREFIX, "icefloe"),
              Boolean.parseBoolean(properties.getOrDefault(CLUSTER, "false")),
              positive(properties, QUEUE_SIZE, 10_000),
              positive(properties, MAX_LEN, 100_000));
      this.own = Boolean.parseBoolean(properties.getOrDefault(OWN_PROPERTY, "false"));
      this.sink = ReadSink.shared(settings);
    } catch (RuntimeException e) { // a bad setting must not fail the catalog's reads either
      LOG.warn("icefloe ReadReporter: reads not reported: {}", e.getMessage());
    }
  }

  @Override
  public void report(MetricsReport report) {
    ReadSink s = sink;
    if (s == null || !(report instanceof ScanReport)) {
      return;
    }
    try {
      s.offer((ScanReport) report, own);
    } catch (Throwable t) { // never a reader's problem
      s.countDropped(1);
    }
  }

  /** Reports dropped by this JVM's sinks so far (a full queue or an unreachable Redis). */
  public static long dropped() {
    return ReadSink.totals()[1];
  }

  /** Reports this JVM's sinks appended to Redis so far. */
  public static long sent() {
    return ReadSink.totals()[0];
  }

  /** Wait (tests, benches) until every queued report was sent or dropped: false on timeout. */
  public static boolean flush(long timeoutMillis) throws InterruptedException {
    return ReadSink.flushAll(timeoutMillis);
  }

  private static int positive(Map<String, String> p, String key, int fallback) {
    String v = p.get(key);
    if (v == null) {
      return fallback;
    }
    int n = Integer.parseInt(v.strip());
    if (n <= 0) {
      throw new IllegalArgumentException(key + " must be positive, got " + v);
    }
    return n;
  }
}
