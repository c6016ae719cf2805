"""Java ``DataFile`` objects of the files the Arrow engine wrote, for the commit.

Their metrics come from each file's footer, as Iceberg's importers take them
(``ParquetUtil.footerMetrics``). The Arrow engine reads every file it writes back whole,
so it hands over each file's size and footer bytes (:class:`Footer`): Parquet's own
``ParquetMetadataConverter`` parses them, with no request to storage. Without them (a
file given by path only), ``ParquetUtil.fileMetrics`` opens the file through the table's
FileIO; it uses default Parquet read options, whose fresh Hadoop ``Configuration`` costs
~10 ms of parsing a file, so local files are opened with one set of options and the
session's configuration instead (~2 ms).

A footer holds no NaN counts: Iceberg's writer counts its floating-point columns as it
writes and gives ``footerMetrics`` those counts (``FieldMetrics``). The Arrow engine
counts the same from the rows it wrote (:mod:`icefloe.jobs.rewrite.float_metrics`), and they are
given to ``footerMetrics`` the same way, so its files carry ``nan_value_counts`` and the
bounds Iceberg's writer records.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from icefloe.jobs.rewrite.file_bytes import Footer
from icefloe.jobs.rewrite.float_metrics import FloatMetrics
from icefloe.jobs.rewrite.locations import local_path

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@dataclass(frozen=True)
class _Java:
    """The Java classes and objects that building new files' ``DataFile``s uses, looked
    up once (each lookup through a py4j package is a round trip)."""

    data_files: Any
    parquet: Any  # FileFormat.PARQUET
    util: Any  # ParquetUtil
    metrics: Any  # the table's MetricsConfig
    io: Any  # the table's FileIO
    reader: Any  # (shaded) ParquetFileReader
    hadoop_file: Any  # (shaded) HadoopInputFile
    options: Any  # one ParquetReadOptions
    conf: Any  # the session's Hadoop Configuration
    path: Any  # org.apache.hadoop.fs.Path
    stream: Any  # java.util.stream.Stream
    converter: Any  # (shaded) ParquetMetadataConverter, the class
    bytes_in: Any  # java.io.ByteArrayInputStream
    field_metrics: Any  # FieldMetrics' constructor (id, counts of values, nulls, NaNs, bounds)
    boxes: tuple[Any, Any]  # java.lang.Float and java.lang.Double


class NewFiles:
    """Builds the ``DataFile`` of new Parquet files of the Java ``table``.

    ``local``: the local path of a location, or None to read it through the table's FileIO
    (:func:`icefloe.jobs.rewrite.locations.local_path`)."""

    def __init__(
        self, spark: SparkSession, table: Any, local: Callable[[str], str | None] = local_path
    ) -> None:
        self.spark = spark
        self.table = table
        self.local = local
        self._java: _Java | None = None

    def _classes(self) -> _Java:
        if self._java is None:  # each class lookup through a py4j package is a round trip
            jvm: Any = cast(Any, self.spark.sparkContext._jvm)
            iceberg = jvm.org.apache.iceberg
            parquet = iceberg.shaded.org.apache.parquet
            jsc: Any = cast(Any, self.spark.sparkContext._jsc)
            lang = jvm.java.lang
            signature = self._gateway().new_array(lang.Class, 6)
            for i, kind in enumerate([lang.Integer.TYPE] + [lang.Long.TYPE] * 3):
                signature[i] = kind
            signature[4] = signature[5] = lang.Object._java_lang_class
            self._java = _Java(
                iceberg.DataFiles,
                iceberg.FileFormat.PARQUET,
                iceberg.parquet.ParquetUtil,
                iceberg.MetricsConfig.forTable(self.table),
                self.table.io(),
                parquet.hadoop.ParquetFileReader,
                parquet.hadoop.util.HadoopInputFile,
                parquet.ParquetReadOptions.builder().build(),
                jsc.hadoopConfiguration(),
                jvm.org.apache.hadoop.fs.Path,
                jvm.java.util.stream.Stream,
                parquet.format.converter.ParquetMetadataConverter,
                jvm.java.io.ByteArrayInputStream,
                iceberg.FieldMetrics._java_lang_class.getConstructor(signature),
                (lang.Float, lang.Double),
            )
        return self._java

    def _gateway(self) -> Any:
        return cast(Any, self.spark.sparkContext._gateway)

    def _field_metrics(self, floats: Sequence[FloatMetrics]) -> Any:
        """A Java stream of the ``FieldMetrics`` Iceberg's writer would give
        ``footerMetrics`` for these floating-point columns.

        py4j hands a Python float to Java as a ``Double`` and a boxed number back to
        Python as a float, where a 32-bit column's bounds must be ``Float`` objects: the
        bounds are set into an array of their box type (py4j converts each element to
        it) and copied from there into the constructor's arguments, all in the JVM."""
        j = self._classes()
        jvm: Any = cast(Any, self.spark.sparkContext._jvm)
        gateway = self._gateway()
        out = jvm.java.util.ArrayList()
        for f in floats:
            args = gateway.new_array(jvm.java.lang.Object, 6)
            for i, n in enumerate((f.field_id, f.values, f.nulls, f.nans)):
                args[i] = n
            if f.lower is not None and f.upper is not None:
                bounds = gateway.new_array(j.boxes[1] if f.double else j.boxes[0], 2)
                bounds[0], bounds[1] = f.lower, f.upper
                jvm.java.lang.System.arraycopy(bounds, 0, args, 4, 2)
            out.add(j.field_metrics.newInstance(args))
        return out.stream()

    def build(
        self,
        spec: Any,
        partition: Any,
        paths: Sequence[str],
        footers: Mapping[str, Footer] | None = None,
    ) -> list[tuple[Any, int]]:
        """The Java ``DataFile`` (and size) of each Parquet file at ``paths``, all in
        ``partition`` of the Java partition ``spec``; ``footers``: the files' sizes and
        footers as read back, where known (then nothing is read)."""
        j = self._classes()
        footers = footers or {}
        # as ParquetFileReader parses a footer: a converter of its read options, one a call
        converter: Any = j.converter(j.options) if footers else None
        out = []
        for path in paths:
            footer = footers.get(path)
            local = None if footer is not None else self.local(path)
            if footer is not None:
                stream = j.bytes_in(footer.metadata)
                parsed = converter.readParquetMetadata(stream, j.converter.NO_FILTER)
                floats = self._field_metrics(footer.floats) if footer.floats else j.stream.empty()
                metrics = j.util.footerMetrics(parsed, floats, j.metrics)
                size = footer.size
            elif local is not None:
                reader = j.reader.open(j.hadoop_file.fromPath(j.path(path), j.conf), j.options)
                try:
                    metrics = j.util.footerMetrics(reader.getFooter(), j.stream.empty(), j.metrics)
                finally:
                    reader.close()
                size = os.path.getsize(local)
            else:
                input_file = j.io.newInputFile(path)
                metrics = j.util.fileMetrics(input_file, j.metrics)
                size = int(input_file.getLength())
            built = (
                j.data_files.builder(spec)
                .withPath(path)
                .withFileSizeInBytes(size)
                .withFormat(j.parquet)
                .withPartition(partition)
                .withMetrics(metrics)
                .build()
            )
            out.append((built, size))
        return out
