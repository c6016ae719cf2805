package dev.icefloe.spark;

import org.apache.spark.sql.SparkSessionExtensions;
import scala.Function1;
import scala.runtime.BoxedUnit;

/**
 * icefloe's Spark SQL extensions: {@code spark.sql.extensions=dev.icefloe.spark.IcefloeSparkExtensions}.
 * Adds {@link SkewRule}, which salts joins and aggregations over hot keys that
 * {@code icefloe skew detect} reported in the table's properties.
 */
public final class IcefloeSparkExtensions implements Function1<SparkSessionExtensions, BoxedUnit> {
  public IcefloeSparkExtensions() {}

  @Override
  public BoxedUnit apply(SparkSessionExtensions extensions) {
    extensions.injectPreCBORule(SkewRule::new); // once, after the operator optimizations
    return BoxedUnit.UNIT;
  }
}
