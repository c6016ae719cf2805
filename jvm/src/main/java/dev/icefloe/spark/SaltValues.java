package dev.icefloe.spark;

import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.Murmur3Hash;

/**
 * Salt values whose {@code (key, salt)} land on distinct shuffle partitions. A join on
 * {@code key = key AND salt = salt} shuffles by Spark's {@code pmod(murmur3(key, salt), P)};
 * salts {@code 0..n-1} would put two chunks of a hot key on one partition as often as not
 * (a birthday problem), leaving that task twice as long. Candidates are tried in order and
 * the least loaded partitions taken, over all the hot keys of one report.
 */
final class SaltValues {
  private SaltValues() {}

  private static final int CANDIDATES_PER_PARTITION = 4;

  /** {@code n} salt values for {@code key}; {@code load} counts chunks per partition so far. */
  static int[] spread(Literal key, int n, int[] load) {
    int partitions = load.length;
    int candidates = Math.max(64, Math.min(4096, CANDIDATES_PER_PARTITION * partitions + n));
    int[] partitionOf = new int[candidates];
    for (int s = 0; s < candidates; s++) {
      Object h = new Murmur3Hash(Scala.seq(key, Scala.intLit(s)), 42).eval(null);
      partitionOf[s] = Math.floorMod((Integer) h, partitions);
    }
    int[] out = new int[n];
    boolean[] taken = new boolean[candidates];
    for (int i = 0; i < n; i++) {
      int best = -1;
      for (int s = 0; s < candidates; s++) {
        if (!taken[s] && (best < 0 || load[partitionOf[s]] < load[partitionOf[best]])) {
          best = s;
        }
      }
      taken[best] = true;
      load[partitionOf[best]]++;
      out[i] = best;
    }
    return out;
  }
}
