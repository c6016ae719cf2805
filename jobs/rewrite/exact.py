"""Rewrite an exact set of Iceberg data files and commit one ``replace`` snapshot.

Iceberg's ``rewrite_data_files`` chooses its own files; the planner has already chosen
ours, so this module drives the same machinery Iceberg's Spark runners use, through py4j
(see shared/reference/iceberg-exact-rewrite.md for the verified path and its gotchas):

1. the Java table at a fixed starting snapshot; whole-file scan tasks of exactly the
   planned files (their position deletes attached, so reads apply them);
2. per planned group that Spark writes (the Arrow engine reads its groups' files itself):
   stage the tasks under the group's id, read the group id as one
   Spark task (split size >= group bytes, so a group is one rolling writer and yields
   ``optimizer.predict_output_sizes`` files), optionally sorted, write with
   ``distribution-mode=none`` into the group's own partition spec;
3. verify (``jobs.verify``): the input's row count and checksum (observed on the rows
   each group's write consumes, no extra pass) equal the new files' (one job over their
   plain read);
4. commit (every partition at once; one by one after a conflict):
   ``newRewrite().validateFromSnapshot(start)
   .dataSequenceNumber(startSeq)``, delete the replaced data files and the position
   delete files that referenced only them, add the new files. Validation from the start
   snapshot is what makes a concurrent append harmless and a concurrent delete of a
   replaced file a clean :class:`CommitConflict` instead of a resurrected row.

Files written by a rewrite that does not commit are deleted at once through the table's
FileIO, never left for orphan cleanup.
"""

from __future__ import annotations

import os
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from jobs.plan import FileGroup
from jobs.rewrite.arrow_engine import ArrowTable, eligible
from jobs.verify import (
    KEY,
    Checksum,
    checksum_exprs,
    checksum_of,
    checksums_by_key,
    conform,
    quoted,
)
from service.errors import OperationFailed
from service.spark import activate, in_process_master

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from jobs.rewrite.arrow_engine import ArrowGroup, ArrowResult

REWRITE_ID_PROPERTY = "icefloe.rewrite-id"
WRITE_TARGET_FACTOR = 1.4
"""Writers roll on their *estimated* size, taken before compression, so a file rolled at
``T`` lands well under ``T`` on disk (~55% in our benchmark). Iceberg's own binpack runner
writes with ``target + (max - target) / 2`` = 1.4 x target for the default max of 1.8 x
target; we do the same for groups larger than T. A group of S <= T is planned as exactly
one file, so its writer gets a roll size it can never reach (``NO_ROLL_FACTOR`` x T): a
roll on a misestimate would leave a tiny remainder file, the very thing we remove."""
NO_ROLL_FACTOR = 8

LISTING_THRESHOLD = "spark.sql.sources.parallelPartitionDiscovery.threshold"
_LISTING = threading.Lock()  # the threshold is session-wide: one reader changes it at a time


def write_target(group_bytes: int, target: int) -> int:
    """The writer's ``target-file-size-bytes`` for a group of ``group_bytes``."""
    factor = NO_ROLL_FACTOR if group_bytes <= target else WRITE_TARGET_FACTOR
    return int(target * factor)


POSITION_DELETES = "POSITION_DELETES"
PLAIN_TYPE = re.compile(
    r"boolean|int|long|float|double|date|timestamptz|timestamp|string|binary"
    r"|fixed\[\d+\]|decimal\(\s*\d+\s*,\s*\d+\s*\)"
)


def _balanced(groups: Sequence[ArrowGroup], slots: int) -> list[list[ArrowGroup]]:
    """Groups dealt to at most ``slots`` tasks, largest first onto the lightest task (LPT):
    one Spark task per group would pay the Python worker round trip for each."""
    from optimizer.binpack import balance

    rows = [sum(n for _, n in g.inputs) for g in groups]
    shares = balance(rows, min(slots, len(groups))) if groups else []
    return [[groups[i] for i in share] for share in shares if share]


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


class CommitConflict(OperationFailed):
    """The commit failed validation (a concurrent change touched a replaced file)."""


@dataclass
class GroupResult:
    group: FileGroup
    group_id: str
    new_files: list[Any] = field(default_factory=list)  # Java DataFile objects
    new_paths: list[str] = field(default_factory=list)
    new_sizes: list[int] = field(default_factory=list)
    input: Checksum = field(default_factory=Checksum)
    output: Checksum = field(default_factory=Checksum)
    engine: str = "spark"  # "arrow" when jobs.rewrite.arrow_engine wrote (and verified) it


def local_path(location: str) -> str | None:
    """The local file system path of a ``file:`` (or scheme-less) location, else None.

    Nothing is unescaped: Iceberg escapes partition values in locations (``a%2Fb``) and
    Hadoop's local file system writes those names as they are."""
    if location.startswith("file://"):
        return location[len("file://"):]
    if location.startswith("file:"):
        return location[len("file:"):]
    if location.startswith("/"):
        return location
    return None


def java_class_name(error: BaseException) -> str:
    java = getattr(error, "java_exception", None)
    return str(java.getClass().getName()) if java is not None else type(error).__name__


def java_message(error: BaseException) -> str:
    java = getattr(error, "java_exception", None)
    text = str(java.getMessage()) if java is not None else str(error)
    return text.strip().splitlines()[0] if text.strip() else java_class_name(error)


def arrow_failure(error: BaseException) -> str:
    """Why the Arrow engine failed, in one line. A Python task's failure arrives wrapped in
    Spark's job-abort message; its traceback's last line is the cause (e.g. the executors'
    Python lacking PyIceberg), which is what the report should say."""
    java = getattr(error, "java_exception", None)
    text = str(java.getMessage()) if java is not None else str(error)
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if "Traceback (most recent call last)" in line]
    if "PythonException" in text and starts:
        # after the traceback's indented frames, the first flush-left line is the exception
        cause = next((line.strip() for line in lines[starts[-1] + 1:]
                      if line.strip() and not line[0].isspace()), "")
        if cause:
            hint = (" (on a cluster, ship the executors' Python packages: `icefloe pack`, "
                    "then spark.executor_deps)") if cause.startswith(
                        ("ModuleNotFoundError", "ImportError")) else ""
            return f"Python task failed on an executor: {cause}{hint}"
    return f"{java_class_name(error)}: {java_message(error)}"


class ExactRewrite:
    """One rewrite of planned file groups of one table, from one starting snapshot."""

    def __init__(self, spark: SparkSession, table_name: str, snapshot_id: int) -> None:
        self.spark = spark
        self.jvm: Any = cast(Any, spark.sparkContext._jvm)
        activate(spark)  # this may run on an actor thread with no active JVM session
        self.gateway: Any = cast(Any, spark.sparkContext._gateway)
        spark3util = self.jvm.org.apache.iceberg.spark.Spark3Util
        self.table: Any = spark3util.loadIcebergTable(spark._jsparkSession, table_name)
        self.table.refresh()
        snapshot = self.table.snapshot(snapshot_id)
        if snapshot is None:
            raise OperationFailed(f"snapshot {snapshot_id} of {table_name} is gone (expired?)")
        self.table_name = table_name
        self.snapshot_id = snapshot_id
        self.start_sequence = int(snapshot.sequenceNumber())
        # most tables have no delete files: then no task needs its deletes looked at (each
        # look is several py4j round trips per file)
        summary = snapshot.summary()
        self.no_deletes = summary is not None and str(summary.get("total-delete-files")) == "0"
        self._deletes: dict[str, list[tuple[str, Any, str | None]]] = {}
        self.file_format = str(
            self.table.properties().getOrDefault("write.format.default", "parquet")
        ).lower()
        self.tasks: dict[str, Any] = {}
        self.files: dict[str, Any] = {}  # each task's Java DataFile (one round trip saved)
        self.records: dict[str, int] = {}
        self.check_result: Any = None
        self.fallback: str = ""  # why Arrow-eligible groups went through Spark after all
        self._staged: set[str] = set()
        self._cache: Any = None
        self._java: _Java | None = None
        self._plain: bool | None = None  # see _plain_columns
        self._where: dict[str, tuple[Any, Any]] = {}  # Arrow groups' Java spec and partition
        self.timings: dict[str, float] = {}

    def _tick(self, phase: str, since: float) -> float:
        now = time.monotonic()
        self.timings[phase] = round(self.timings.get(phase, 0.0) + now - since, 3)
        return now

    # ---------------------------------------------------------------- planning
    def load_tasks(self, paths: Iterable[str]) -> None:
        """Whole-file scan tasks at the start snapshot for exactly ``paths``."""
        wanted = set(paths) - set(self.tasks)
        if not wanted:
            return
        iterable = (
            self.table.newScan().useSnapshot(self.snapshot_id).ignoreResiduals().planFiles()
        )
        try:  # one call: the JVM reads the manifests and lists every task
            tasks = self.jvm.org.apache.iceberg.relocated.com.google.common.collect.Lists \
                .newArrayList(iterable)
        finally:
            iterable.close()

        def look(i: int) -> tuple[str, Any, Any, int]:
            task = tasks.get(i)
            data_file = task.file()
            location = str(data_file.location())
            records = int(data_file.recordCount()) if location in wanted else -1
            return location, task, data_file, records

        # three or four round trips a task: several threads keep the JVM busy meanwhile
        with ThreadPoolExecutor(max_workers=4) as pool:
            for location, task, data_file, records in pool.map(look, range(int(tasks.size()))):
                if records >= 0:
                    self.tasks[location] = task
                    self.files[location] = data_file
                    self.records[location] = records
        missing = wanted - set(self.tasks)
        if missing:
            raise OperationFailed(
                f"{len(missing)} planned file(s) are not in snapshot {self.snapshot_id}: "
                f"{sorted(missing)[0]}"
            )

    def check_files_exist(self, paths: Iterable[str]) -> None:
        """Fail before any write if a planned data file is missing on storage.

        Local files are looked at directly; others through the table's FileIO, several
        at a time (each look is a py4j round trip, and on object storage a request)."""
        io = self.table.io()

        def exists(path: str) -> bool:
            local = local_path(path)
            if local is not None:
                return os.path.isfile(local)
            return bool(io.newInputFile(path).exists())

        todo = list(paths)
        with ThreadPoolExecutor(max_workers=8) as pool:
            found = list(pool.map(exists, todo))
        missing = [path for path, ok in zip(todo, found, strict=True) if not ok]
        if missing:
            raise OperationFailed(
                f"data file {missing[0]} of {self.table_name} is missing on storage; "
                "nothing was rewritten"
            )

    def _position_deletes(self, path: str) -> list[tuple[str, Any, str | None]]:
        """(location, delete file, referenced data file or None) of ``path``'s task."""
        if self.no_deletes:
            return []
        if path not in self._deletes:
            util = self.jvm.org.apache.iceberg.util.ContentFileUtil
            found = []
            for delete in self.tasks[path].deletes():
                if str(delete.content().name()) == POSITION_DELETES:
                    ref = util.referencedDataFileLocation(delete)
                    found.append((str(delete.location()), delete,
                                  None if ref is None else str(ref)))
            self._deletes[path] = found
        return self._deletes[path]

    def has_deletes(self, path: str) -> bool:
        """Does any delete file (position or equality) apply to ``path``?"""
        return not self.no_deletes and int(self.tasks[path].deletes().size()) > 0

    def dangling_deletes(self, paths: Sequence[str]) -> list[Any]:
        """Position delete files that reference only files among ``paths``."""
        rewritten = set(paths)
        found: dict[str, Any] = {}
        for path in paths:
            for location, delete, ref in self._position_deletes(path):
                if ref is not None and ref in rewritten:
                    found[location] = delete
        return [found[k] for k in sorted(found)]

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
            tasks.add(self.tasks[path])
        self._table_cache().add(result.group_id, self.table)
        self.jvm.org.apache.iceberg.spark.ScanTaskSetManager.get().stageTasks(
            self.table, result.group_id, tasks
        )
        self._staged.add(result.group_id)

    def read(self, result: GroupResult) -> DataFrame:
        """The group's input rows (deletes applied), as one Spark task."""
        self.stage(result)
        return (
            self.spark.read.format("iceberg")
            .option("split-size", str(result.group.bytes + (1 << 20)))
            .option("file-open-cost", "0")
            .load(result.group_id)
        )

    def write(self, result: GroupResult, target: int, sort_columns: Sequence[str]) -> None:
        """Write one group; its input checksum is observed on the rows the writer consumes."""
        from pyspark.sql import Observation

        df = self.read(result)
        columns = list(df.columns)
        seen = Observation(f"icefloe_input_{result.group_id.replace('-', '')}")
        df = df.observe(seen, *checksum_exprs(df, columns))
        if sort_columns:
            df = df.sortWithinPartitions(*[quoted(c) for c in sort_columns])
        (
            df.write.format("iceberg")
            .option("target-file-size-bytes", str(write_target(result.group.bytes, target)))
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

    # ---------------------------------------------------------------- Arrow engine
    def arrow_eligible(self, group: FileGroup, target: int, sorting: bool) -> bool:
        held = group.bytes if sorting else min(group.bytes, target)
        return eligible(self.file_format, group.paths,
                        any(self.has_deletes(p) for p in group.paths), held)

    def write_arrow(
        self, results: Sequence[GroupResult], arrow: ArrowTable, target: int,
        sort_columns: Sequence[str],
    ) -> None:
        """Write ``results`` with the Arrow engine (:meth:`_run_arrow`), each file verified
        as it is written (:mod:`jobs.rewrite.arrow_engine`), and their Java ``DataFile`` objects
        built as each group finishes (in the driver) or after the job (on a cluster)."""
        from jobs.rewrite.arrow_engine import ArrowGroup
        from optimizer import predict_output_sizes

        def place(r: GroupResult) -> tuple[Any, Any, list[str]]:
            """Spec, partition and output locations: a few py4j round trips a group."""
            spec = self.table.specs().get(r.group.spec_id)
            partition = self.files[r.group.paths[0]].partition()
            n = len(predict_output_sizes(r.group.bytes, target))
            return spec, partition, self._new_locations(spec, partition, n)

        with ThreadPoolExecutor(max_workers=4) as pool:
            placed = list(pool.map(place, results))
        groups = []
        for r, (spec, partition, outputs) in zip(results, placed, strict=True):
            self._where[r.group_id] = (spec, partition)
            r.new_paths.extend(outputs)  # known before anything is written: discard() finds them
            inputs = tuple((p, self.records[p]) for p in r.group.paths)
            groups.append(ArrowGroup(r.group_id, r.group.spec_id, inputs, tuple(outputs),
                                     tuple(sort_columns)))
        built: dict[str, list[tuple[Any, int]]] = {}
        done = self._run_arrow(arrow, groups, built)
        by_id = {d.group_id: d for d in done}
        for r in results:
            d = by_id[r.group_id]
            r.new_paths[:] = [path for path, _ in d.files]
            r.input = Checksum(d.rows_in, 0, dict(d.non_null))
            r.output = Checksum(sum(n for _, n in d.files), 0, dict(d.non_null))
            r.engine = "arrow"
        missing = [r for r in results if r.group_id not in built]
        with ThreadPoolExecutor(max_workers=4) as pool:  # py4j-bound: keep the JVM busy
            found = pool.map(lambda r: self._data_files(r.group_id, r.new_paths), missing)
            for r, files in zip(missing, found, strict=True):
                built[r.group_id] = files
        for r in results:
            for java_file, size in built[r.group_id]:
                r.new_files.append(java_file)
                r.new_sizes.append(size)

    def _data_files(self, group_id: str, paths: Sequence[str]) -> list[tuple[Any, int]]:
        """The Java ``DataFile`` (and size) of each file the Arrow engine wrote at ``paths``,
        its metrics from its footer as Iceberg's importers take them (``ParquetUtil``).

        ``ParquetUtil.fileMetrics`` opens each file with default Parquet read options, whose
        fresh Hadoop ``Configuration`` costs ~10 ms a file; local files are opened with one
        set of options and the session's configuration instead (~2 ms), others (object
        storage: the table's FileIO knows how to reach it) through ``fileMetrics``."""
        if self._java is None:  # each class lookup through a py4j package is a round trip
            iceberg = self.jvm.org.apache.iceberg
            parquet = iceberg.shaded.org.apache.parquet
            self._java = _Java(
                iceberg.DataFiles, iceberg.FileFormat.PARQUET, iceberg.parquet.ParquetUtil,
                iceberg.MetricsConfig.forTable(self.table), self.table.io(),
                parquet.hadoop.ParquetFileReader, parquet.hadoop.util.HadoopInputFile,
                parquet.ParquetReadOptions.builder().build(),
                self.spark._jsc.hadoopConfiguration(),
                self.jvm.org.apache.hadoop.fs.Path, self.jvm.java.util.stream.Stream,
            )
        j = self._java
        spec, partition = self._where[group_id]
        out = []
        for path in paths:
            local = local_path(path)
            if local is not None:
                reader = j.reader.open(j.hadoop_file.fromPath(j.path(path), j.conf), j.options)
                try:
                    metrics = j.util.footerMetrics(reader.getFooter(), j.stream.empty(),
                                                   j.metrics)
                finally:
                    reader.close()
                size = os.path.getsize(local)
            else:
                input_file = j.io.newInputFile(path)
                metrics = j.util.fileMetrics(input_file, j.metrics)
                size = int(input_file.getLength())
            built = (
                j.data_files.builder(spec).withPath(path).withFileSizeInBytes(size)
                .withFormat(j.parquet).withPartition(partition).withMetrics(metrics).build()
            )
            out.append((built, size))
        return out

    arrow_in_driver: bool | None = None
    """Where Arrow groups run: None = by the master (``local[...]``: in this process's
    threads, the same cores without a Python worker round trip per task, which costs
    ~0.1 s; any cluster: in Spark tasks on the executors)."""

    def _run_arrow(self, arrow: ArrowTable, groups: list[ArrowGroup],
                   built: dict[str, list[tuple[Any, int]]]) -> list[ArrowResult]:
        """Every group's :class:`ArrowResult`. In the driver, each finished group's
        ``DataFile`` objects are built into ``built`` on two more threads while the other
        groups are written: their py4j waits overlap Arrow work, which runs without the GIL."""
        from jobs.rewrite.arrow_engine import rewrite_group, rewrite_groups

        sc = self.spark.sparkContext
        slots = max(1, int(sc.defaultParallelism))
        in_driver = self.arrow_in_driver
        if in_driver is None:
            in_driver = in_process_master(str(sc.master))
        if in_driver:  # largest first, so that no big group starts last
            biggest_first = sorted(groups, key=lambda g: -sum(n for _, n in g.inputs))
            java: dict[str, Future[list[tuple[Any, int]]]] = {}
            with ThreadPoolExecutor(max_workers=2) as py4j:

                def one(g: ArrowGroup) -> ArrowResult:
                    done = rewrite_group(arrow, g)
                    java[g.group_id] = py4j.submit(self._data_files, g.group_id,
                                                   [path for path, _ in done.files])
                    return done

                with ThreadPoolExecutor(max_workers=min(slots, len(groups))) as pool:
                    results = list(pool.map(one, biggest_first))
                built.update({group_id: f.result() for group_id, f in java.items()})
            return results
        shares = _balanced(groups, slots)
        sc.setJobDescription(f"icefloe rewrite (arrow) {self.table_name}")
        return (
            sc.parallelize([(arrow, share) for share in shares], len(shares))
            .flatMap(lambda job: rewrite_groups(*job))
            .collect()
        )

    def _new_locations(self, spec: Any, partition: Any, n: int) -> list[str]:
        """``n`` fresh data file locations in ``partition`` of ``spec``, by the table's
        location provider (as Iceberg's own writers name them)."""
        provider = self.table.locationProvider()
        stem = uuid.uuid4()
        return [str(provider.newDataLocation(spec, partition, f"icefloe-{stem}-{i:05d}.parquet"))
                for i in range(n)]

    def _write_all(
        self, results: list[GroupResult], target: int, sort_columns: Sequence[str],
        parallelism: int, arrow: ArrowTable | None,
    ) -> None:
        """Arrow-eligible groups through the Arrow engine (one job), the rest through
        Spark's writer, at the same time; Arrow groups whose job fails go through Spark
        after all (their partial files deleted first), the reason kept in ``fallback``."""
        fast = [] if arrow is None else [
            r for r in results if self.arrow_eligible(r.group, target, bool(sort_columns))]
        chosen = {id(r) for r in fast}
        slow = [r for r in results if id(r) not in chosen]
        with ThreadPoolExecutor(max_workers=max(1, parallelism)) as pool:
            arrow_job = (pool.submit(self.write_arrow, fast, arrow, target, sort_columns)
                         if fast and arrow is not None else None)
            list(pool.map(lambda r: self.write(r, target, sort_columns), slow))
            try:
                if arrow_job is not None:
                    arrow_job.result()
            except Exception as e:
                self.discard(fast)
                for r in fast:
                    r.engine, r.input, r.output = "spark", Checksum(), Checksum()
                self.fallback = arrow_failure(e)
                list(pool.map(lambda r: self.write(r, target, sort_columns), fast))

    # ---------------------------------------------------------------- the run
    def run(
        self,
        groups: Sequence[FileGroup],
        target: int,
        sort_columns: Sequence[str] = (),
        parallelism: int = 4,
        also_check: Callable[[list[GroupResult], DataFrame], Any] | None = None,
        arrow: ArrowTable | None = None,
    ) -> list[GroupResult]:
        """Stage, checksum, write and verify every group; commit nothing.

        ``arrow``: the table as the Arrow engine needs it; None = Spark's writer only.

        ``also_check(results, like)`` (the data checks; ``like``: a DataFrame of the table,
        for its schema) runs on the written files at the same time as the output
        checksum; its result is kept in ``self.check_result``. Raises
        :class:`OperationFailed` (after deleting whatever was written) when a write or a
        check fails or any group's output does not match its input.
        """
        results = [GroupResult(g, str(uuid.uuid4())) for g in groups]
        if not results:
            return results
        clock = time.monotonic()
        try:
            self._write_all(results, target, sort_columns, parallelism, arrow)
            clock = self._tick("write", clock)
            like = self.read(results[0])  # schema only
            checked = [r for r in results if r.engine == "spark"]  # Arrow's are verified
            with ThreadPoolExecutor(max_workers=1) as side:
                checks = side.submit(also_check, results, like) if also_check else None
                try:
                    out_sums = self._output_checksums(checked, like)
                finally:  # a failed check (it deletes the files) is the failure to report
                    self.check_result = checks.result() if checks else None
            for r in checked:
                r.output = out_sums.get(r.group_id, Checksum(non_null={c: 0 for c in like.columns}))
            clock = self._tick("verify", clock)
            bad = [r for r in results if not r.input.matches(r.output)]
            if bad:
                r = bad[0]
                raise OperationFailed(
                    f"verification failed for {self.table_name} partition {r.group.partition!r}: "
                    f"input {r.input.rows} rows / checksum {r.input.checksum}, written "
                    f"{r.output.rows} rows / checksum {r.output.checksum}; nothing committed"
                )
        except OperationFailed:
            self.discard(results)
            raise
        except Exception as e:
            self.discard(results)
            raise OperationFailed(
                f"rewrite of {self.table_name} failed ({java_class_name(e)}: {java_message(e)}); "
                "nothing committed"
            ) from e
        return results

    def _output_checksums(
        self, results: Sequence[GroupResult], like: DataFrame
    ) -> dict[str, Checksum]:
        """One plain read of every new file; rows go to their group by file name (new
        files have unique, UUID-based names)."""
        from pyspark.sql import functions as F

        owner = {p.rsplit("/", 1)[-1]: r.group_id for r in results for p in r.new_paths}
        if not owner:
            return {}
        paths = [p for r in results for p in r.new_paths]
        mapping = F.create_map(*[F.lit(x) for kv in owner.items() for x in kv])
        written = self.read_files(paths, like)
        named = written.withColumn(KEY, mapping[F.col("_metadata.file_name")])
        return checksums_by_key(conform(named, like, keep=(KEY,)), like.columns)

    def read_files(self, paths: Sequence[str], like: DataFrame | None = None) -> DataFrame:
        """A plain read of new data files (no Iceberg metadata: they are not committed).

        ``like``: a DataFrame of the table (the staged read of a group). When every column
        of the table is of a primitive type that Spark's Parquet reader reads as Iceberg's
        Spark reader does, its schema is given to the reader, which then infers none (a
        Spark job that opens a file); otherwise the files' own schema is inferred (callers
        cast to ``like``'s types, :func:`jobs.verify.conform`).

        Spark lists more than ``parallelPartitionDiscovery.threshold`` (32) paths with a
        Spark job of one task per path, ~1 s for a few hundred files on two cores; local
        files are listed on the driver instead, in milliseconds. Paths on remote storage
        keep the parallel listing (there each look is a request)."""
        reader = self.spark.read.format(self.file_format)
        if like is not None and self._plain_columns():
            reader = reader.schema(like.schema)
        if not all(local_path(p) is not None for p in paths):
            return reader.load(list(paths))
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

    def _plain_columns(self) -> bool:
        """Is every column of the table of a primitive type whose Spark type a Parquet
        reader reads from our files as Iceberg does (not uuid, time, nanosecond timestamps,
        variant, geospatial or nested types)?"""
        if self._plain is None:
            import json

            schema = json.loads(str(self.jvm.org.apache.iceberg.SchemaParser.toJson(
                self.table.schema())))
            self._plain = all(isinstance(f["type"], str) and PLAIN_TYPE.fullmatch(f["type"])
                              for f in schema["fields"])
        return self._plain

    def commit(self, results: Sequence[GroupResult], discard_on_conflict: bool = True) -> int:
        """One ``replace`` snapshot for ``results`` (one or several partitions' groups),
        removing the position delete files that referenced only replaced files.

        Returns the snapshot id. A failed commit deletes the new files when Iceberg says
        they are unreferenced, except after a validation conflict with
        ``discard_on_conflict=False`` (the caller retries them in smaller commits).
        """
        paths = [p for r in results for p in r.group.paths]
        deletes = self.dangling_deletes(paths)
        rewrite_id = str(uuid.uuid4())
        op = (
            self.table.newRewrite()
            .validateFromSnapshot(self.snapshot_id)
            .dataSequenceNumber(self.start_sequence)
            .set(REWRITE_ID_PROPERTY, rewrite_id)
        )
        for path in paths:
            op.deleteFile(self.files[path])
        for delete in deletes:
            op.deleteFile(delete)
        for r in results:
            for data_file in r.new_files:
                op.addFile(data_file)
        clock = time.monotonic()
        try:
            op.commit()
        except Exception as e:
            name = java_class_name(e)
            conflict = name.endswith("ValidationException")
            if self._cleanable(e) and (discard_on_conflict or not conflict):
                self.discard(results)
            if conflict:
                raise CommitConflict(
                    f"commit of {self.table_name} conflicts: {java_message(e)}"
                ) from e
            raise OperationFailed(
                f"commit of {self.table_name} failed ({name}: {java_message(e)})"
            ) from e
        self._tick("commit", clock)
        return self._snapshot_with(rewrite_id)

    def _cleanable(self, error: BaseException) -> bool:
        java = getattr(error, "java_exception", None)
        if java is None:
            return False
        failure = self.jvm.org.apache.iceberg.exceptions.CleanableFailure._java_lang_class
        return bool(failure.isInstance(java))

    def _snapshot_with(self, rewrite_id: str) -> int:
        self.table.refresh()
        current = self.table.currentSnapshot()  # ours, unless another commit came after it
        if current is not None and str(current.summary().get(REWRITE_ID_PROPERTY)) == rewrite_id:
            return int(current.snapshotId())
        it = self.table.snapshots().iterator()
        while it.hasNext():
            snap = it.next()
            if str(snap.summary().get(REWRITE_ID_PROPERTY)) == rewrite_id:
                return int(snap.snapshotId())
        raise OperationFailed(f"committed snapshot of {self.table_name} not found")

    def discard(self, results: Iterable[GroupResult]) -> None:
        """Delete files written for ``results`` (they were never committed)."""
        io = self.table.io()
        for r in results:
            for path in r.new_paths:
                try:
                    io.deleteFile(path)
                except Exception:  # best effort: a file that is gone is what we want
                    pass
            r.new_paths.clear()
            r.new_files.clear()
            r.new_sizes.clear()

    def close(self) -> None:
        """Unstage every group id (idempotent; always call it)."""
        spark_pkg = self.jvm.org.apache.iceberg.spark
        for group_id in self._staged:
            self._table_cache().remove(group_id)
            spark_pkg.ScanTaskSetManager.get().removeTasks(self.table, group_id)
            spark_pkg.FileRewriteCoordinator.get().clearRewrite(self.table, group_id)
        self._staged.clear()
