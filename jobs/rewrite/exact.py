"""Rewrite an exact set of Iceberg data files and commit one ``replace`` snapshot.

Iceberg's ``rewrite_data_files`` chooses its own files; the planner has already chosen
ours, so this package drives, through py4j, the same machinery as Iceberg's own Spark
rewrite runners (``SparkBinPackFileRewriteRunner``: staged scan tasks, then ``RewriteFiles``).
:class:`ExactRewrite` runs the steps, each in its own module:

1. the Java table at a fixed starting snapshot; whole-file scan tasks of exactly the
   planned files, their position deletes attached (:mod:`icefloe.jobs.rewrite.tasks`);
2. write every group: plain Parquet groups with the Arrow engine
   (:mod:`icefloe.jobs.rewrite.arrow_driver`, :mod:`icefloe.jobs.rewrite.arrow_engine`; the new
   files' ``DataFile`` objects from :mod:`icefloe.jobs.rewrite.new_files`), the others, and Arrow
   groups whose job failed, with Spark's writer (:mod:`icefloe.jobs.rewrite.spark_engine`);
3. verify (``icefloe.jobs.base.verify``): the input's row count and checksum (observed on the rows
   each group's write consumes, no extra pass) equal the new files' (one Spark job over
   their plain read, which also counts each column's non-nulls); the Arrow engine
   verifies its files as it writes them, reading each back; the data checks then run on
   those measures, with no Spark job of their own;
4. commit (every partition at once; one by one after a conflict) from the starting
   snapshot (:mod:`icefloe.jobs.rewrite.commit`).

Files written by a rewrite that does not commit are deleted at once through the table's
FileIO, never left for orphan cleanup (:mod:`icefloe.jobs.rewrite.cleanup`). For a rewrite that
dies before it can, the ``guard`` (an actor's lease, :mod:`icefloe.jobs.rewrite.guard`) is told
every new file before it is written: the Arrow engine's by name, Spark's writer's by the
one prefix it writes this rewrite's files under
(:func:`icefloe.jobs.rewrite.locations.attempt_table`).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from icefloe.base.errors import OperationFailed
from icefloe.base.spark import activate
from icefloe.base.tablestats import REWRITE_ID_PROPERTY
from icefloe.jobs.base.plan import FileGroup
from icefloe.jobs.base.verify import Checksum, SuiteResult, checksums_by_key, run_suite
from icefloe.jobs.rewrite import cleanup
from icefloe.jobs.rewrite.arrow_driver import ArrowDriver
from icefloe.jobs.rewrite.arrow_engine import ArrowTable
from icefloe.jobs.rewrite.commit import CommitConflict, Committer
from icefloe.jobs.rewrite.guard import NO_GUARD, WriteGuard
from icefloe.jobs.rewrite.java_errors import (
    arrow_failure,
    java_class_name,
    java_message,
    may_be_missing,
)
from icefloe.jobs.rewrite.locations import attempt_table
from icefloe.jobs.rewrite.new_files import NewFiles
from icefloe.jobs.rewrite.partitions import partition_mismatch
from icefloe.jobs.rewrite.results import GroupResult
from icefloe.jobs.rewrite.spark_engine import ChecksumsByKey, SparkEngine
from icefloe.jobs.rewrite.tasks import MissingDataFile, ScanTasks
from icefloe.optimizer.sortorder import SortField

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["REWRITE_ID_PROPERTY", "Collaborators", "CommitConflict", "ExactRewrite", "GroupResult"]

WriteArrow = Callable[
    [ArrowDriver, Sequence[GroupResult], ArrowTable, int, Sequence[SortField], Sequence[str]], None
]
"""Writes the Arrow engine's groups: the driver, the results, the table, the target size,
the sort order and the z-order columns (:meth:`ArrowDriver.write`)."""
BeforeCommit = Callable[["ExactRewrite", Sequence[GroupResult]], None]
RunSuite = Callable[[Checksum, int, list[str]], SuiteResult]


@dataclass(frozen=True)
class Collaborators:
    """What a rewrite may be given instead of its defaults (tests inject failures here).

    ``arrow_in_driver``: where Arrow groups run, None = by the master (see
    :class:`ArrowDriver`). ``write_arrow``: writes the Arrow engine's groups.
    ``checksums``: the output's checksums per group. ``run_suite``: the data checks over
    the written files' measures (:func:`icefloe.jobs.base.verify.run_suite`; given the written rows
    and non-null counts, the input's rows and null-free columns). ``before_commit``:
    called with the rewrite and the results just before each commit. ``guard``: told the
    new files before they are written and asked before each commit (an actor's lease,
    :mod:`icefloe.jobs.rewrite.guard`)."""

    arrow_in_driver: bool | None = None
    write_arrow: WriteArrow = ArrowDriver.write
    checksums: ChecksumsByKey = checksums_by_key
    run_suite: RunSuite = run_suite
    before_commit: BeforeCommit | None = None
    guard: WriteGuard = NO_GUARD


class ExactRewrite:
    """One rewrite of planned file groups of one table, from one starting snapshot."""

    def __init__(
        self,
        spark: SparkSession,
        table_name: str,
        snapshot_id: int,
        collaborators: Collaborators | None = None,
    ) -> None:
        self.spark = spark
        self.collaborators = collaborators or Collaborators()
        self.jvm: Any = cast(Any, spark.sparkContext._jvm)
        activate(spark)  # this may run on an actor thread with no active JVM session
        spark3util = self.jvm.org.apache.iceberg.spark.Spark3Util
        self.table: Any = spark3util.loadIcebergTable(spark._jsparkSession, table_name)
        self.table.refresh()
        snapshot = self.table.snapshot(snapshot_id)
        if snapshot is None:
            raise OperationFailed(f"snapshot {snapshot_id} of {table_name} is gone (expired?)")
        self.table_name = table_name
        self.snapshot_id = snapshot_id
        self.start_sequence = int(snapshot.sequenceNumber())
        summary = snapshot.summary()
        no_deletes = summary is not None and str(summary.get("total-delete-files")) == "0"
        self.file_format = str(
            self.table.properties().getOrDefault("write.format.default", "parquet")
        ).lower()
        self.check_result: Any = None
        self.fallback: str = ""  # why Arrow-eligible groups went through Spark after all
        self.spark_only: str = ""  # why none of the table's groups may go to Arrow
        self.timings: dict[str, float] = {}
        c = self.collaborators
        self.rewrite_id = uuid.uuid4().hex
        self.scan = ScanTasks(self.jvm, self.table, table_name, snapshot_id, no_deletes)
        write_table, self.spark_prefix = attempt_table(self.jvm, self.table, self.rewrite_id)
        self.spark_engine = SparkEngine(
            spark, self.table, self.scan, self.file_format, c.checksums, write_table
        )
        self.new_files = NewFiles(spark, self.table)
        self.arrow = ArrowDriver(
            spark,
            self.table,
            table_name,
            self.file_format,
            self.scan,
            self.new_files,
            c.arrow_in_driver,
            c.guard,
        )
        self.committer = Committer(
            self.jvm,
            self.table,
            table_name,
            snapshot_id,
            self.start_sequence,
            self.discard,
            self._tick,
        )

    def _tick(self, phase: str, since: float) -> float:
        now = time.monotonic()
        self.timings[phase] = round(self.timings.get(phase, 0.0) + now - since, 3)
        return now

    # ---------------------------------------------------------------- planned files
    def load_tasks(self, paths: Iterable[str]) -> None:
        """Whole-file scan tasks at the start snapshot for exactly ``paths``."""
        self.scan.load(paths)

    def dangling_deletes(self, paths: Sequence[str]) -> list[Any]:
        """Position delete files that reference only files among ``paths``."""
        return self.scan.dangling_deletes(paths)

    def read_new(self, results: Sequence[GroupResult], like: DataFrame | None = None) -> DataFrame:
        """Every row of the groups' new files (:meth:`SparkEngine.read_new`)."""
        return self.spark_engine.read_new(results, like)[0]

    def read_files(self, paths: Sequence[str], like: DataFrame | None = None) -> DataFrame:
        """A plain read of local data files (:meth:`SparkEngine.read_files`)."""
        return self.spark_engine.read_files(paths, like)

    # ---------------------------------------------------------------- the run
    def run(
        self,
        groups: Sequence[FileGroup],
        target: int,
        sort_order: Sequence[SortField] = (),
        parallelism: int = 4,
        also_check: Callable[[list[GroupResult]], Any] | None = None,
        arrow: ArrowTable | None = None,
        zorder_columns: Sequence[str] = (),
        sort_order_id: int | None = None,
    ) -> list[GroupResult]:
        """Stage, checksum, write and verify every group; commit nothing.

        ``sort_order``: each group's rows in this order (:mod:`icefloe.jobs.rewrite.sort_rows`:
        every field's direction, null order and transform), its files stamped with
        ``sort_order_id`` (the table's order they follow; None: unsorted, 0).
        ``arrow``: the table as the Arrow engine needs it; None = Spark's writer only.
        ``zorder_columns``: each group's rows in z-order over these columns
        (:mod:`icefloe.jobs.rewrite.zorder_rows`), instead of by ``sort_order``.

        ``also_check(results)`` (the data checks) runs once every group's output is
        measured (``GroupResult.output``); its result is kept in ``self.check_result``.
        Raises :class:`OperationFailed` (after deleting whatever was written) when a write
        or a check fails or any group's output does not match its input.
        """
        results = [GroupResult(g, str(uuid.uuid4())) for g in groups]
        if not results:
            return results
        clock = time.monotonic()
        try:
            if self.spark_prefix is not None:  # Spark's writer may write under it
                self.collaborators.guard.before_write([], [self.spark_prefix])
            order = (() if zorder_columns else tuple(sort_order), tuple(zorder_columns))
            self._write_all(results, target, order, parallelism, arrow)
            if sort_order_id is not None and not zorder_columns:
                self._stamp(results, sort_order_id)
            clock = self._tick("write", clock)
            self._verify(results, also_check)
            self._tick("verify", clock)
        except OperationFailed:
            self.discard(results)
            raise
        except Exception as e:
            self.discard(results)
            self._explain(results, e)
            raise OperationFailed(
                f"rewrite of {self.table_name} failed ({java_class_name(e)}: {java_message(e)}); "
                "nothing committed"
            ) from e
        return results

    def _stamp(self, results: Sequence[GroupResult], sort_order_id: int) -> None:
        """Each new file's ``DataFile`` says it follows the table's sort order
        ``sort_order_id`` (Iceberg's ``sort_order_id``: engines may rely on it)."""
        iceberg = self.jvm.org.apache.iceberg
        order = self.table.sortOrders().get(sort_order_id)
        for r in results:  # a group's files are all of its spec: one lookup a group
            spec = self.table.specs().get(r.group.spec_id)
            r.new_files[:] = [
                iceberg.DataFiles.builder(spec).copy(f).withSortOrder(order).build()
                for f in r.new_files
            ]

    def _write_all(
        self,
        results: list[GroupResult],
        target: int,
        order: tuple[tuple[SortField, ...], tuple[str, ...]],
        parallelism: int,
        arrow: ArrowTable | None,
    ) -> None:
        """Arrow-eligible groups through the Arrow engine (one job), the rest through
        Spark's writer, at the same time; Arrow groups whose job fails go through Spark
        after all (their partial files deleted first), the reason kept in ``fallback``.
        A table whose write properties the Arrow engine does not honour goes all through
        Spark, the reason kept in ``spark_only``. ``order``: the sort order and z-order
        columns."""
        sort_order, zorder_columns = order
        self.spark_only = "" if arrow is None else self.arrow.refusal(arrow)
        sorting = bool(sort_order or zorder_columns)
        fast = (
            []
            if arrow is None or self.spark_only
            else [r for r in results if self.arrow.eligible(r.group, target, sorting)]
        )
        chosen = {id(r) for r in fast}
        slow = [r for r in results if id(r) not in chosen]

        def spark_write(r: GroupResult) -> None:
            self.spark_engine.write(r, target, sort_order, zorder_columns)

        with ThreadPoolExecutor(max_workers=max(1, parallelism)) as pool:
            write_arrow = self.collaborators.write_arrow
            arrow_job = (
                pool.submit(
                    write_arrow, self.arrow, fast, arrow, target, sort_order, zorder_columns
                )
                if fast and arrow is not None
                else None
            )
            list(pool.map(spark_write, slow))
            try:
                if arrow_job is not None:
                    arrow_job.result()
            except Exception as e:
                self.discard(fast)
                self._explain(fast, e)  # a missing file: Spark's read would fail on it too
                for r in fast:
                    r.engine, r.input, r.output = "spark", Checksum(), Checksum()
                self.fallback = arrow_failure(e)
                list(pool.map(spark_write, fast))

    def _verify(
        self,
        results: list[GroupResult],
        also_check: Callable[[list[GroupResult]], Any] | None,
    ) -> None:
        """The one verification pass: the output measures (rows, checksum, non-null counts)
        of the groups Spark wrote, in one Spark job (the Arrow engine measured its files as
        it wrote them); then ``also_check`` on every group's measures. Raises when a check
        fails or any group's output does not match its input, or any new file is not in
        the partition of the files it replaces (:mod:`icefloe.jobs.rewrite.partitions`)."""
        moved = partition_mismatch(self.jvm, self.table, self.scan.files, results)
        if moved:
            raise OperationFailed(
                f"partition check failed for {self.table_name}: {moved}; nothing committed"
            )
        checked = [r for r in results if r.engine == "spark"]
        if checked:
            like = self.spark_engine.read(checked[0])  # schema only; already staged
            out_sums = self.spark_engine.output_checksums(checked, like)
            for r in checked:
                none = Checksum(non_null={c: 0 for c in like.columns})
                r.output = out_sums.get(r.group_id, none)
        bad = [r for r in results if not r.input.matches(r.output)]
        mismatch = (
            f"verification failed for {self.table_name} partition {bad[0].group.partition!r}: "
            f"input {bad[0].input.rows} rows / checksum {bad[0].input.checksum}, written "
            f"{bad[0].output.rows} rows / checksum {bad[0].output.checksum}"
            if bad
            else ""
        )
        try:  # the data checks run on a mismatch too: the report names every failure
            self.check_result = also_check(results) if also_check else None
        except OperationFailed as e:
            if mismatch:
                raise OperationFailed(f"{mismatch}; {e}") from e
            raise
        if mismatch:
            raise OperationFailed(f"{mismatch}; nothing committed")

    # ---------------------------------------------------------------- commit and cleanup
    def commit(self, results: Sequence[GroupResult], discard_on_conflict: bool = True) -> int:
        """One ``replace`` snapshot for ``results`` (one or several partitions' groups),
        removing the position delete files that referenced only replaced files.

        Returns the snapshot id. A failed commit deletes the new files when Iceberg says
        they are unreferenced, except after a validation conflict with
        ``discard_on_conflict=False`` (the caller retries them in smaller commits).
        """
        if self.collaborators.before_commit is not None:
            self.collaborators.before_commit(self, results)
        try:
            self.collaborators.guard.before_commit()
        except Exception:
            self.discard(results)
            raise
        paths = [p for r in results for p in r.group.paths]
        deletes = self.scan.dangling_deletes(paths)
        replaced = [self.scan.files[path] for path in paths]
        return self.committer.commit(results, replaced, deletes, discard_on_conflict)

    def _explain(self, results: Sequence[GroupResult], error: BaseException) -> None:
        """After a write failed with ``error``: when it may come from a file that is gone
        (:func:`may_be_missing`), raise :class:`MissingDataFile` if one of the groups'
        input files is gone from storage, said in one line. Anything else (or storage that
        cannot be reached) leaves the failure's own message to say it."""
        if not may_be_missing(error):
            return  # a look costs a request a file: only when it can explain the failure
        try:
            self.scan.check_exist([p for r in results for p in r.group.paths])
        except MissingDataFile:
            raise
        except Exception:  # noqa: BLE001 - the failure's own message says more
            pass

    def discard(self, results: Iterable[GroupResult]) -> None:
        """Delete files written for ``results`` (they were never committed)."""
        cleanup.discard(self.table.io(), results)

    def close(self) -> None:
        """Unstage every group id, and remove the empty folders a discarded Spark write
        left under this attempt's prefix (idempotent; always call it)."""
        self.spark_engine.close()
        cleanup.prune(self.spark_prefix)
