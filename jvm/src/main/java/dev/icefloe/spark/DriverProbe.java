package dev.icefloe.spark;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.TableScan;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.mapping.NameMapping;
import org.apache.iceberg.mapping.NameMappingParser;
import org.apache.iceberg.parquet.Parquet;
import org.apache.iceberg.spark.SparkSchemaUtil;
import org.apache.iceberg.spark.SparkUtil;
import org.apache.iceberg.spark.data.SparkParquetReaders;
import org.apache.iceberg.spark.source.SparkTable;
import org.apache.iceberg.spark.source.StagedSparkTable;
import org.apache.iceberg.types.TypeUtil;
import org.apache.iceberg.types.Types;
import org.apache.iceberg.util.PartitionUtil;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Which reported hot keys a side of a join holds, proven on the driver without a Spark job,
 * when the side is a whole Iceberg table (its projections, at most without its NULL keys)
 * read at its current snapshot: a live data file of that snapshot (no delete file applies
 * to it) holds a row of the key. The files to read are those Iceberg's column statistics
 * leave for {@code key = <hot>}, at most {@code files} per key, and of each only the key
 * column until its first row of the key (a hot key has one in the first rows of about
 * every file). A snapshot's files never change, so what was found at a snapshot is kept.
 *
 * <p>A key not found here is not taken as absent: {@link Presence} asks the side's rows
 * for it when the query runs. Nothing is taken from the report either: it only names the
 * keys to look for.
 */
final class DriverProbe {
  private DriverProbe() {}

  private static final Logger LOG = LoggerFactory.getLogger(DriverProbe.class);
  private static final int CACHED = 4096;
  /** (table uuid, snapshot, field id, name mapping, key) to whether the files hold the key. */
  private static final Map<List<Object>, Boolean> SEEN =
      Collections.synchronizedMap(
          new LinkedHashMap<>(64, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<List<Object>, Boolean> eldest) {
              return size() > CACHED;
            }
          });

  /** The keys of {@code keys} proven held by {@code side}'s column {@code key}. */
  static List<Literal> held(
      LogicalPlan side, AttributeReference key, List<Literal> keys, int files) {
    if (files <= 0 || keys.isEmpty()) {
      return List.of();
    }
    Optional<Lineage.Source> source = Lineage.trace(side, key.exprId(), true);
    if (source.isEmpty()) {
      return List.of();
    }
    DataSourceV2Relation relation = source.get().relation();
    // options could pick another snapshot, branch or an incremental read
    if (!relation.options().isEmpty()) {
      return List.of();
    }
    try {
      // Iceberg's classes are loaded here only: without them (a LinkageError) nothing is probed
      if (!Files.iceberg(relation.table())) {
        return List.of();
      }
      return Files.held(relation.table(), source.get().column(), keys, files);
    } catch (RuntimeException | LinkageError e) {
      LOG.debug("icefloe: no driver probe of {}: {}", relation.table().name(), e.toString());
      return List.of();
    }
  }

  /** The Iceberg side, loaded only once {@link #held} has a side to probe. */
  private static final class Files {
    private Files() {}

    /**
     * Whether {@code table} is an Iceberg table read as Spark loaded it: a {@link SparkTable}
     * (not a staged CTAS/RTAS target, which no read relation holds: its files are not
     * committed).
     */
    static boolean iceberg(org.apache.spark.sql.connector.catalog.Table table) {
      return table instanceof SparkTable && !(table instanceof StagedSparkTable);
    }

    static List<Literal> held(
        org.apache.spark.sql.connector.catalog.Table sparkTable,
        AttributeReference column,
        List<Literal> keys,
        int files) {
      SparkTable spark = (SparkTable) sparkTable;
      Long snapshot = spark.snapshotId();
      if (snapshot == null) {
        return List.of(); // an empty table holds nothing; the rows say so quickly
      }
      Table table = spark.table();
      TableScan scan = table.newScan().useSnapshot(snapshot).caseSensitive(true);
      // the column by name in the snapshot's schema and in the table's current one (Spark
      // reads the current one unless it travels in time): the same field in both, or no probe
      Types.NestedField field = scan.schema().findField(column.name());
      Types.NestedField now = table.schema().findField(column.name());
      if (field == null
          || now == null
          || field.fieldId() != now.fieldId()
          || !SparkSchemaUtil.convert(field.type()).sameType(column.dataType())
          || column.dataType().sameType(DataTypes.BinaryType) // byte[] never equals
          || !SparkSchemaUtil.convert(table.schema()).equals(sparkTable.schema())) {
        return List.of(); // the last: the table object changed schema since Spark loaded it
      }
      // a name mapping (files without field ids) can change without a snapshot: part of the key
      String mapping = table.properties().getOrDefault(TableProperties.DEFAULT_NAME_MAPPING, "");
      NameMapping names = mapping.isEmpty() ? null : NameMappingParser.fromJson(mapping);
      List<Literal> out = new ArrayList<>();
      for (Literal key : keys) {
        List<Object> id = List.of(table.uuid().toString(), snapshot, field.fieldId(), mapping, key);
        Boolean found = SEEN.get(id);
        if (found == null) {
          found = key.value() != null && holds(table, scan, field, names, key, files);
          SEEN.put(id, found);
        }
        if (found) {
          out.add(key);
        }
      }
      return out;
    }

    private static boolean holds(
        Table table,
        TableScan scan,
        Types.NestedField field,
        NameMapping names,
        Literal key,
        int files) {
      Schema projected = TypeUtil.select(scan.schema(), Set.of(field.fieldId()));
      Object value = icebergValue(key);
      org.apache.iceberg.expressions.Expression filter =
          value == null ? Expressions.alwaysTrue() : Expressions.equal(field.name(), value);
      int read = 0;
      int seen = 0;
      try (CloseableIterable<FileScanTask> tasks = scan.filter(filter).planFiles()) {
        for (FileScanTask task : tasks) {
          if (++seen > 16L * files || read >= files) {
            break;
          }
          DataFile file = task.file();
          if (!task.deletes().isEmpty()
              || file.format() != FileFormat.PARQUET
              || file.keyMetadata() != null) {
            continue; // rows a delete may remove, another format, or encrypted: not read
          }
          read++;
          if (contains(table, task, projected, names, key)) {
            return true;
          }
        }
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      return false;
    }

    /**
     * Whether the split of {@code task} holds a row of {@code key}, read as Iceberg's Spark
     * readers read it: an identity partition's value from the file's partition, not from
     * the file, and row groups pruned by the task's residual only.
     */
    private static boolean contains(
        Table table, FileScanTask task, Schema projected, NameMapping names, Literal key) {
      Map<Integer, ?> constants = PartitionUtil.constantsMap(task, SparkUtil::internalToSpark);
      Parquet.ReadBuilder read =
          Parquet.read(
                  table.io().newInputFile(task.file().location(), task.file().fileSizeInBytes()))
              .project(projected)
              .split(task.start(), task.length())
              .filter(task.residual())
              .caseSensitive(true)
              .createReaderFunc(
                  schema -> SparkParquetReaders.buildReader(projected, schema, constants));
      if (names != null) {
        read = read.withNameMapping(names);
      }
      DataType type = key.dataType();
      try (CloseableIterable<InternalRow> rows = read.build()) {
        for (InternalRow row : rows) {
          if (!row.isNullAt(0) && key.value().equals(row.get(0, type))) {
            return true;
          }
        }
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      return false;
    }

    /** {@code key} as an Iceberg literal's value, or null when it is read unfiltered. */
    private static Object icebergValue(Literal key) {
      DataType type = key.dataType();
      if (type.sameType(DataTypes.LongType)
          || type.sameType(DataTypes.IntegerType)
          || type.sameType(DataTypes.DateType)) {
        return key.value(); // Long, Integer, Integer days
      }
      if (type.sameType(DataTypes.StringType)) {
        return key.value().toString();
      }
      return null;
    }
  }
}
