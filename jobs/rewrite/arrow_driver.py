"""Running the Arrow engine's groups (:mod:`icefloe.jobs.rewrite.arrow_engine`) for a rewrite.

Under a local master the groups run in this process's threads (the same cores, without a
Python worker round trip per task, which costs ~0.1 s); on any cluster they run in the
Python tasks of one Spark job, dealt to as many tasks as there are cores, largest first
(LPT). Every file is verified as it is written; the caller sends a group whose job fails
through the Spark engine after all.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from icefloe.base.spark import in_process_master
from icefloe.jobs.base.plan import FileGroup
from icefloe.jobs.base.verify import Checksum
from icefloe.jobs.rewrite.arrow_engine import (
    ArrowGroup,
    ArrowTable,
    eligible,
    rewrite_group,
    rewrite_groups,
)
from icefloe.jobs.rewrite.guard import NO_GUARD, WriteGuard
from icefloe.jobs.rewrite.locations import new_locations
from icefloe.jobs.rewrite.new_files import NewFiles
from icefloe.jobs.rewrite.results import GroupResult
from icefloe.jobs.rewrite.tasks import ScanTasks
from icefloe.jobs.rewrite.write_properties import spark_only_reason
from icefloe.optimizer import output_count
from icefloe.optimizer.binpack import balance
from icefloe.optimizer.sortorder import SortField

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from icefloe.jobs.rewrite.arrow_engine import ArrowResult

Built = dict[str, list[tuple[Any, int]]]
"""Per group id, the Java ``DataFile`` and size of each new file."""


def balanced(groups: Sequence[ArrowGroup], slots: int) -> list[list[ArrowGroup]]:
    """Groups dealt to at most ``slots`` tasks, largest first onto the lightest task (LPT):
    one Spark task per group would pay the Python worker round trip for each."""
    rows = [sum(n for _, n in g.inputs) for g in groups]
    shares = balance(rows, min(slots, len(groups))) if groups else []
    return [[groups[i] for i in share] for share in shares if share]


class ArrowDriver:
    """The Arrow engine's groups of one rewrite of the Java ``table``.

    ``in_driver``: where Arrow groups run: None = by the master (``local[...]``: in this
    process's threads; any cluster: in Spark tasks on the executors)."""

    def __init__(
        self,
        spark: SparkSession,
        table: Any,
        table_name: str,
        file_format: str,
        scan: ScanTasks,
        new_files: NewFiles,
        in_driver: bool | None = None,
        guard: WriteGuard = NO_GUARD,
    ) -> None:
        self.spark = spark
        self.table = table
        self.table_name = table_name
        self.file_format = file_format
        self.scan = scan
        self.new_files = new_files
        self.in_driver = in_driver
        self.guard = guard
        self._where: dict[str, tuple[Any, Any]] = {}  # each group's Java spec and partition

    def refusal(self, arrow: ArrowTable) -> str:
        """Why none of the table's groups may go to the Arrow engine ("" when they may): a
        write property it does not honour, or row lineage
        (:func:`icefloe.jobs.rewrite.write_properties.spark_only_reason`)."""
        metadata = arrow.metadata
        return spark_only_reason(metadata.properties, int(metadata.format_version))

    def eligible(self, group: FileGroup, target: int, sorting: bool) -> bool:
        """Can the Arrow engine write ``group`` exactly (:func:`arrow_engine.eligible`)?
        ``sorting``: the group is sorted or z-ordered, so held in memory whole."""
        held = group.bytes if sorting else min(group.bytes, target)
        unreadable = any(self.scan.parquet_position_deletes(p) is None for p in group.paths)
        return eligible(self.file_format, group.paths, unreadable, held)

    def write(
        self,
        results: Sequence[GroupResult],
        arrow: ArrowTable,
        target: int,
        sort_order: Sequence[SortField],
        zorder_columns: Sequence[str] = (),
    ) -> None:
        """Write ``results`` with the Arrow engine (:meth:`_run`), each file verified as it
        is written, and their Java ``DataFile`` objects built as each group finishes (in
        the driver) or after the job (on a cluster). ``zorder_columns``: rows in z-order,
        not in ``sort_order`` (:class:`ArrowGroup`)."""

        def place(r: GroupResult) -> tuple[Any, Any, list[str]]:
            """Spec, partition and output locations: a few py4j round trips a group."""
            spec = self.table.specs().get(r.group.spec_id)
            partition = self.scan.files[r.group.paths[0]].partition()
            # as many locations as the input bytes would fill: what the group writes is
            # rarely more, and the engine writes fewer when its rows take less
            n = output_count(max(r.group.bytes, r.group.output_bytes), target)
            return spec, partition, new_locations(self.table, spec, partition, n)

        with ThreadPoolExecutor(max_workers=4) as pool:
            placed = list(pool.map(place, results))
        groups = []
        for r, (spec, partition, outputs) in zip(results, placed, strict=True):
            self._where[r.group_id] = (spec, partition)
            r.new_paths.extend(outputs)  # known before anything is written: discard() finds them
            inputs = tuple((p, self.scan.records[p]) for p in r.group.paths)
            deletes = tuple(self.scan.parquet_position_deletes(p) or () for p in r.group.paths)
            groups.append(
                ArrowGroup(
                    r.group_id,
                    r.group.spec_id,
                    inputs,
                    tuple(outputs),
                    tuple(sort_order),
                    deletes if any(deletes) else (),
                    tuple(zorder_columns),
                    r.group.output_bytes,
                    target,
                )
            )
        # recorded before a byte is written: a killed attempt's files are found by name
        self.guard.before_write([p for g in groups for p in g.outputs], [])
        built: Built = {}
        done = self._run(arrow, groups, built)
        by_id = {d.group_id: d for d in done}
        for r in results:
            d = by_id[r.group_id]
            r.new_paths[:] = [path for path, _ in d.files]
            r.input = Checksum(d.rows_in, 0, dict(d.non_null))
            r.output = Checksum(sum(n for _, n in d.files), 0, dict(d.non_null_out))
            r.engine = "arrow"
        missing = [r for r in results if r.group_id not in built]
        with ThreadPoolExecutor(max_workers=4) as pool:  # py4j-bound: keep the JVM busy
            found = pool.map(lambda r: self._build(by_id[r.group_id]), missing)
            for r, files in zip(missing, found, strict=True):
                built[r.group_id] = files
        for r in results:
            for java_file, size in built[r.group_id]:
                r.new_files.append(java_file)
                r.new_sizes.append(size)

    def _build(self, done: ArrowResult) -> list[tuple[Any, int]]:
        """The Java ``DataFile`` of each file of a finished group, from the footers it
        read back."""
        spec, partition = self._where[done.group_id]
        paths = [path for path, _ in done.files]
        # an executor archive packed before footers came back has none: files are opened
        footers = getattr(done, "footers", None)
        return self.new_files.build(spec, partition, paths, footers)

    def _run(self, arrow: ArrowTable, groups: list[ArrowGroup], built: Built) -> list[ArrowResult]:
        """Every group's :class:`ArrowResult`. In the driver, each finished group's
        ``DataFile`` objects are built into ``built`` on two more threads while the other
        groups are written: their py4j waits overlap Arrow work, which runs without the GIL."""
        sc = self.spark.sparkContext
        slots = max(1, int(sc.defaultParallelism))
        in_driver = self.in_driver
        if in_driver is None:
            in_driver = in_process_master(str(sc.master))
        if in_driver:  # largest first, so that no big group starts last
            biggest_first = sorted(groups, key=lambda g: -sum(n for _, n in g.inputs))
            java: dict[str, Future[list[tuple[Any, int]]]] = {}
            with ThreadPoolExecutor(max_workers=2) as py4j:

                def one(g: ArrowGroup) -> ArrowResult:
                    done = rewrite_group(arrow, g)
                    java[g.group_id] = py4j.submit(self._build, done)
                    return done

                with ThreadPoolExecutor(max_workers=min(slots, len(groups))) as pool:
                    results = list(pool.map(one, biggest_first))
                built.update({group_id: f.result() for group_id, f in java.items()})
            return results
        shares = balanced(groups, slots)
        sc.setJobDescription(f"icefloe rewrite (arrow) {self.table_name}")
        return (
            sc.parallelize([(arrow, share) for share in shares], len(shares))
            .flatMap(lambda job: rewrite_groups(*job))
            .collect()
        )
