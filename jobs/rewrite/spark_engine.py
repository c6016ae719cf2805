"""The Spark engine: groups written by Spark's Iceberg writer, through the machinery of
Iceberg's own Spark rewrite runners (``ScanTaskSetManager``, ``FileRewriteCoordinator``).

Per group that Spark writes: stage the group's scan tasks under its id, read the id as one
Spark task (split size >= group bytes, so a group is one writer: one file when
``icefloe.optimizer.output_count`` says one, else rolled at 1.4 x T as Iceberg's runner rolls),
optionally sorted (by the sort columns, or by a z-order key that an Arrow UDF computes
as the Arrow engine does, :mod:`icefloe.jobs.rewrite.zorder_rows`, and drops before the write),
and write with
``distribution-mode=none`` into the group's own partition spec. The input's checksum is
observed on the rows the writer consumes (no extra pass); the output's comes from one
plain read of every new file (:meth:`SparkEngine.output_checksums`).
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from collections.abc import Callable, Sequence
from functools import reduce
from typing import TYPE_CHECKING, Any, cast

from icefloe.jobs.base.verify import (
    KEY,
    Checksum,
    checksum_exprs,
    checksum_of,
    checksums_by_key,
    conform,
    quoted,
)
from icefloe.jobs.rewrite.locations import local_path
from icefloe.jobs.rewrite.results import GroupResult
from icefloe.jobs.rewrite.tasks import ScanTasks
from icefloe.optimizer import output_count

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

    from icefloe.optimizer.sortorder import SortField

ChecksumsByKey = Callable[["DataFrame", list[str]], dict[str, Checksum]]
"""How the output's checksums are taken (:func:`icefloe.jobs.base.verify.checksums_by_key`)."""

WRITE_TARGET_FACTOR = 1.4
"""Writers roll on their *estimated* size, taken before compression, so a file rolled at
``T`` lands well under ``T`` on disk (~55% in our benchmark). Iceberg's own binpack runner
writes with ``target + (max - target) / 2`` = 1.4 x target for the default max of 1.8 x
target; we do the same for groups larger than T. A group of S <= T is planned as exactly
one file (and so is one of up to 1.1 x T, its remainder folded in:
``icefloe.optimizer.output_count``), so its writer gets a roll size it can never reach
(``NO_ROLL_FACTOR`` x T): a roll on a misestimate would leave a tiny remainder file, the
very thing we remove."""
NO_ROLL_FACTOR = 8

LISTING_THRESHOLD = "spark.sql.sources.parallelPartitionDiscovery.threshold"
_LISTING = threading.Lock()  # the threshold is session-wide: one reader changes it at a time

PLAIN_TYPE = re.compile(
    r"boolean|int|long|float|double|date|timestamptz|timestamp|string|binary"
    r"|fixed\[\d+\]|decimal\(\s*\d+\s*,\s*\d+\s*\)"
)


def _plain_schema(schema: Any) -> Any:
    """``schema`` (a Spark ``StructType``) with no field metadata."""
    # pyspark: only where Spark runs (the module loads without it)
    from pyspark.sql.types import StructField, StructType

    return StructType([StructField(f.name, f.dataType, f.nullable) for f in schema.fields])


ZORDER_KEY = "__icefloe_zorder_key"
"""The temporary column a z-order write sorts by (dropped before the write)."""


def zordered(df: DataFrame, columns: Sequence[str]) -> DataFrame:
    """``df``'s rows sorted within each Spark partition by their z-order key over
    ``columns``: the key a vectorized Arrow UDF computes with the Arrow engine's code
    (:func:`icefloe.jobs.rewrite.zorder_rows.spark_keys`), a temporary column, dropped again."""
    # pyspark: only where Spark runs (the module loads without it)
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.functions import arrow_udf
    from pyspark.sql.types import BinaryType

    # pyarrow and numpy at its top: loaded only where Spark z-orders
    from icefloe.jobs.rewrite.zorder_rows import spark_keys

    # a scalar Arrow UDF by its type hints (PySpark's stubs know only the functionType form)
    key = arrow_udf(spark_keys, BinaryType())  # type: ignore[call-overload]
    keyed = df.withColumn(ZORDER_KEY, key(*[F.col(quoted(c)) for c in columns]))
    return keyed.sortWithinPartitions(ZORDER_KEY).drop(ZORDER_KEY)


LINEAGE_COLUMNS = ("_row_id", "_last_updated_sequence_number")
"""The row lineage a staged read of a format version 3 table outputs."""
UNASSIGNED = -(1 << 63)
"""The first row id and data sequence number given to a staged read of uncommitted files
(:meth:`SparkEngine._lineage_unassigned`): row ids and sequence numbers are never
negative, and neither is this + a row's position."""


def as_written(df: DataFrame) -> DataFrame:
    """``df``'s row lineage with every negative value (a null in the file, read with
    :data:`UNASSIGNED`) null again: what the file holds, as a plain Parquet read sees it."""
    # pyspark: only where Spark runs (the module loads without it)
    from pyspark.sql import functions as F

    return df.withColumns({c: F.when(F.col(c) >= 0, F.col(c)) for c in LINEAGE_COLUMNS})


def write_target(group_bytes: int, target: int) -> int:
    """The writer's ``target-file-size-bytes`` for a group of ``group_bytes``."""
    factor = NO_ROLL_FACTOR if output_count(group_bytes, target) == 1 else WRITE_TARGET_FACTOR
    return int(target * factor)


class SparkEngine:
    """Staged reads and Spark writes of groups of one Java ``table``."""

    def __init__(
        self,
        spark: SparkSession,
        table: Any,
        scan: ScanTasks,
        file_format: str,
        checksums: ChecksumsByKey = checksums_by_key,
        write_table: Any = None,
    ) -> None:
        self.spark = spark
        self.jvm: Any = cast(Any, spark.sparkContext._jvm)
        self.gateway: Any = cast(Any, spark.sparkContext._gateway)
        self.table = table
        # what the writer sees: the same table, its data files under one attempt's prefix
        # (icefloe.jobs.rewrite.locations.attempt_table); the staged read sees the same object
        self.write_table = table if write_table is None else write_table
        self.scan = scan
        self.file_format = file_format
        self.checksums = checksums
        self._staged: set[str] = set()
        self._cache: Any = None
        self._plain: bool | None = None  # see plain_columns
        self._lineage: bool | None = None  # see row_lineage

    # ---------------------------------------------------------------- staging
    def _table_cache(self) -> Any:
        if self._cache is None:
            # py4j resolves the instance method get(String) first; call the static get().
            cls = self.jvm.org.apache.iceberg.spark.SparkTableCache._java_lang_class
            no_types = self.gateway.new_array(self.jvm.java.lang.Class, 0)
            no_args = self.gateway.new_array(self.jvm.java.lang.Object, 0)
            self._cache = cls.getMethod("get", no_types).invoke(None, no_args)
        return self._cache

    def stage(self, result: GroupResult) -> None:
        """Stage the group's scan tasks under its group id (once), for a Spark read.

        Only groups that Spark reads are staged: staging costs several py4j round trips a
        file, and the Arrow engine reads its groups' files itself."""
        if result.group_id in self._staged:
            return
        tasks = self.jvm.java.util.ArrayList()
        for path in result.group.paths:
            tasks.add(self.scan.tasks[path])
        self._table_cache().add(result.group_id, self.write_table)
        self.jvm.org.apache.iceberg.spark.ScanTaskSetManager.get().stageTasks(
            self.table, result.group_id, tasks
        )
        self._staged.add(result.group_id)

    def close(self) -> None:
        """Unstage every group id (idempotent)."""
        spark_pkg = self.jvm.org.apache.iceberg.spark
        for group_id in self._staged:
            self._table_cache().remove(group_id)
            spark_pkg.ScanTaskSetManager.get().removeTasks(self.table, group_id)
            spark_pkg.FileRewriteCoordinator.get().clearRewrite(self.table, group_id)
        self._staged.clear()

    # ---------------------------------------------------------------- reads and writes
    def read(self, result: GroupResult) -> DataFrame:
        """The group's input rows (deletes applied), as one Spark task."""
        self.stage(result)
        return (
            self.spark.read.format("iceberg")
            .option("split-size", str(result.group.bytes + (1 << 20)))
            .option("file-open-cost", "0")
            .load(result.group_id)
        )

    def write(
        self,
        result: GroupResult,
        target: int,
        sort_order: Sequence[SortField],
        zorder_columns: Sequence[str] = (),
    ) -> None:
        """Write one group; its input checksum is observed on the rows the writer consumes
        (the table's columns only). ``zorder_columns``: rows in z-order (:func:`zordered`),
        not in ``sort_order`` (:func:`icefloe.jobs.rewrite.sort_rows.spark_order`)."""
        # pyspark: only where Spark runs (the module loads without it)
        from pyspark.sql import Observation

        df = self.read(result)
        columns = list(df.columns)
        seen = Observation(f"icefloe_input_{result.group_id.replace('-', '')}")
        df = df.observe(seen, *checksum_exprs(df, columns))
        if zorder_columns:
            df = zordered(df, zorder_columns)
        elif sort_order:
            from icefloe.jobs.rewrite.sort_rows import spark_order  # pyarrow: where Spark sorts

            df, exprs, keys = spark_order(df, sort_order, quoted)
            df = df.sortWithinPartitions(*exprs).drop(*keys)
        (
            df.write.format("iceberg")
            .option("target-file-size-bytes", str(write_target(result.group.output_bytes, target)))
            .option("distribution-mode", "none")
            .option("output-spec-id", str(result.group.spec_id))
            .mode("append")
            .save(result.group_id)
        )
        result.input = checksum_of(seen.get, columns)
        coordinator = self.jvm.org.apache.iceberg.spark.FileRewriteCoordinator.get()
        for data_file in coordinator.fetchNewFiles(self.table, result.group_id):
            result.new_files.append(data_file)
            result.new_paths.append(str(data_file.location()))
            result.new_sizes.append(int(data_file.fileSizeInBytes()))

    def output_checksums(
        self, results: Sequence[GroupResult], like: DataFrame
    ) -> dict[str, Checksum]:
        """One plain read of every new file; rows go to their group by file name (new
        files have unique, UUID-based names)."""
        # pyspark: only where Spark runs (the module loads without it)
        from pyspark.sql import functions as F

        owner = {p.rsplit("/", 1)[-1]: r.group_id for r in results for p in r.new_paths}
        if not owner:
            return {}
        mapping = F.create_map(*[F.lit(x) for kv in owner.items() for x in kv])
        written, file_name = self.read_new(results, like)
        named = written.withColumn(KEY, mapping[file_name])
        return self.checksums(conform(named, like, keep=(KEY,)), like.columns)

    def read_new(
        self,
        results: Sequence[GroupResult],
        like: DataFrame | None = None,
        through_table: bool | None = None,
    ) -> tuple[DataFrame, Column]:
        """Every row of the groups' new (uncommitted) files, and the column that names each
        row's file (its last path segment).

        Local Parquet files get a plain Parquet read (:meth:`read_files`). Files on object
        storage are read by Iceberg's Spark reader, through the table's FileIO, as a staged
        scan of the new ``DataFile`` objects: Spark's own file sources know only Hadoop
        file systems, which need not reach the table's storage. So are files of any other
        format (``write.format.default`` Avro or ORC): Iceberg's reader reads every format
        the table writes, where Spark's Avro source is not on the classpath.
        ``through_table`` forces either way (None: by the paths and the format)."""
        # pyspark: only where Spark runs (the module loads without it)
        from pyspark.sql import functions as F

        paths = [p for r in results for p in r.new_paths]
        if through_table is None:
            through_table = self.file_format != "parquet" or not all(
                local_path(p) is not None for p in paths
            )
        if not through_table:
            return self.read_files(paths, like), F.col("_metadata.file_name")
        files = [f for r in results for f in r.new_files]
        if not self.row_lineage():
            read = self._read_staged(files)
            return read.select("*", "_file"), F.substring_index(F.col("_file"), "/", -1)
        # row lineage (format version 3): the staged read's output holds the lineage
        # metadata columns, so Spark adds no other (``_file`` cannot be resolved); each
        # file is read on its own instead, its name a literal; the lineage as the file
        # holds it, nulls included (:meth:`_lineage_unassigned`)
        name = "__icefloe_file"
        parts = [
            self._read_staged([f]).withColumn(name, F.lit(str(f.location()).rsplit("/", 1)[-1]))
            for f in files
        ]
        return as_written(reduce(lambda a, b: a.unionByName(b), parts)), F.col(name)

    def _read_staged(self, files: Sequence[Any]) -> DataFrame:
        """A staged Iceberg read of uncommitted Java ``DataFile``s (no deletes)."""
        set_id = self._stage_new(files)
        return self.spark.read.format("iceberg").option("file-open-cost", "0").load(set_id)

    def _stage_new(self, files: Sequence[Any]) -> str:
        """Stage a scan of uncommitted Java ``DataFile``s (no deletes); its set id."""
        iceberg = self.jvm.org.apache.iceberg
        schema = str(iceberg.SchemaParser.toJson(self.table.schema()))
        no_deletes = self.gateway.new_array(iceberg.DeleteFile, 0)
        always = iceberg.expressions.Expressions.alwaysTrue()
        tasks = self.jvm.java.util.ArrayList()
        for data_file in files:
            if self.row_lineage():
                data_file = self._lineage_unassigned(data_file)
            spec = self.table.specs().get(data_file.specId())
            residual = iceberg.expressions.ResidualEvaluator.of(spec, always, True)
            spec_json = str(iceberg.PartitionSpecParser.toJson(spec))
            tasks.add(iceberg.BaseFileScanTask(data_file, no_deletes, schema, spec_json, residual))
        set_id = f"icefloe-new-{uuid.uuid4()}"
        self._table_cache().add(set_id, self.table)
        iceberg.spark.ScanTaskSetManager.get().stageTasks(self.table, set_id, tasks)
        self._staged.add(set_id)
        return set_id

    def _lineage_unassigned(self, data_file: Any) -> Any:
        """A copy of an uncommitted ``DataFile`` whose staged read yields its row lineage as
        written. Iceberg's readers return a file's ``_row_id`` and
        ``_last_updated_sequence_number`` only when it has a first row id and a data
        sequence number (a commit assigns them), else all nulls, whatever the file holds;
        with them, the value written, or for a null the first row id + the row's position
        and the sequence number. The copy's are :data:`UNASSIGNED`, so a null reads as a
        negative value, which :func:`as_written` turns back into null."""
        copy = data_file.copy()
        unassigned = self.jvm.java.lang.Long.valueOf(UNASSIGNED)
        copy.setFirstRowId(unassigned)
        copy.setDataSequenceNumber(unassigned)
        return copy

    def read_files(self, paths: Sequence[str], like: DataFrame | None = None) -> DataFrame:
        """A plain read of new local data files (no Iceberg metadata: they are not committed).

        ``like``: a DataFrame of the table (the staged read of a group). When every column
        of the table is of a primitive type that Spark's Parquet reader reads as Iceberg's
        Spark reader does, its schema is given to the reader, which then infers none (a
        Spark job that opens a file); otherwise the files' own schema is inferred (callers
        cast to ``like``'s types, :func:`icefloe.jobs.base.verify.conform`).

        Spark lists more than ``parallelPartitionDiscovery.threshold`` (32) paths with a
        Spark job of one task per path, ~1 s for a few hundred files on two cores; they are
        listed on the driver instead, in milliseconds. Files on object storage:
        :meth:`read_new`."""
        reader = self.spark.read.format(self.file_format)
        if like is not None and self.plain_columns():
            # without the fields' metadata: a field Iceberg marks as a metadata column (the
            # row lineage of a format version 3 table) would keep Spark from adding
            # ``_metadata``
            reader = reader.schema(_plain_schema(like.schema))
        with _LISTING:
            conf = self.spark.conf
            before = conf.get(LISTING_THRESHOLD, None)
            conf.set(LISTING_THRESHOLD, str(max(len(paths) + 1, 32)))
            try:
                return reader.load(list(paths))
            finally:
                if before is None:
                    conf.unset(LISTING_THRESHOLD)
                else:
                    conf.set(LISTING_THRESHOLD, before)

    def row_lineage(self) -> bool:
        """Does the table keep row lineage (format version 3 and later)? Then a staged
        read outputs ``_row_id`` and ``_last_updated_sequence_number`` too, and Spark's
        writer keeps them in the new files, as Iceberg's own rewrite does."""
        if self._lineage is None:
            util = self.jvm.org.apache.iceberg.TableUtil
            self._lineage = bool(util.supportsRowLineage(self.table))
        return self._lineage

    def plain_columns(self) -> bool:
        """Is every column of the table of a primitive type whose Spark type a Parquet
        reader reads from our files as Iceberg does (not uuid, time, nanosecond timestamps,
        variant, geospatial or nested types)?"""
        if self._plain is None:
            schema = json.loads(
                str(self.jvm.org.apache.iceberg.SchemaParser.toJson(self.table.schema()))
            )
            self._plain = all(
                isinstance(f["type"], str) and PLAIN_TYPE.fullmatch(f["type"])
                for f in schema["fields"]
            )
        return self._plain
