package dev.icefloe.spark;

/**
 * Every setting the skew rule reads (Spark conf, per session) and its fixed limits: the one
 * list of them (jvm/README.md documents each).
 */
final class SkewConf {
  private SkewConf() {}

  /** The rule's switch: {@code true}. */
  static final String ENABLED = "spark.icefloe.skew.enabled";
  /** Most copies of a hot key's partner rows: {@code 32}. */
  static final String MAX_SALTS = "spark.icefloe.skew.maxSalts";
  /** Salt {@code GROUP BY}s too: {@code false}. */
  static final String AGGREGATES = "spark.icefloe.skew.aggregates";
  /** Isolate a join whose other side is at most this big: {@code 256m} ({@code -1}: never). */
  static final String ISOLATE_MAX_BYTES = "spark.icefloe.skew.isolateMaxBytes";
  /** Data files per hot key the rule may read on the driver: {@code 2}. */
  static final String PROBE_FILES = "spark.icefloe.skew.probeFiles";
  /** Isolate only where the hot keys hold at least this share of the rows: {@code 0.6}. */
  static final String ISOLATE_MIN_SHARE = "spark.icefloe.skew.isolateMinShare";

  /** Hot keys used from one report at most: the heaviest, the rest are left cold. */
  static final int MAX_KEYS = 64;
  /** Bytes (UTF-8 of its text) of one key at most: a report with a bigger key is ignored. */
  static final int MAX_KEY_BYTES = 1024;
  /** Bytes of all the keys used from one report at most: past it the report is ignored. */
  static final int MAX_KEYS_BYTES = 16 * 1024;
  /** Parsed reports kept (JVM-wide, least recently used dropped first). */
  static final int CACHED_REPORTS = 256;
}
