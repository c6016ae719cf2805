"""The planned files as the Java table sees them at the starting snapshot: whole-file
scan tasks (their position deletes attached, so reads apply them), data files, record
counts, delete files, and whether the files still exist on storage."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from icefloe.base.errors import OperationFailed
from icefloe.jobs.rewrite.java_errors import java_class_name, java_message
from icefloe.jobs.rewrite.locations import local_path

POSITION_DELETES = "POSITION_DELETES"
PUFFIN = "PUFFIN"  # the format of deletion vectors (format version 3)


class MissingDataFile(OperationFailed):
    """A planned data file is not on storage (:meth:`ScanTasks.check_exist`)."""


class ScanTasks:
    """Scan tasks of planned files of the Java ``table`` at ``snapshot_id``."""

    def __init__(
        self, jvm: Any, table: Any, table_name: str, snapshot_id: int, no_deletes: bool
    ) -> None:
        self.jvm = jvm
        self.table = table
        self.table_name = table_name
        self.snapshot_id = snapshot_id
        # most tables have no delete files: then no task needs its deletes looked at (each
        # look is several py4j round trips per file)
        self.no_deletes = no_deletes
        self.tasks: dict[str, Any] = {}
        self.files: dict[str, Any] = {}  # each task's Java DataFile (one round trip saved)
        self.records: dict[str, int] = {}
        self._deletes: dict[str, list[tuple[str, Any, str, str, str | None]]] = {}

    def load(self, paths: Iterable[str]) -> None:
        """Whole-file scan tasks at the start snapshot for exactly ``paths``."""
        wanted = set(paths) - set(self.tasks)
        if not wanted:
            return
        try:
            tasks = self._plan_files()
        except Exception as e:  # storage away: one line, not py4j's Java stack trace
            raise OperationFailed(
                f"planning the scan of {self.table_name} failed ({java_class_name(e)}: "
                f"{java_message(e)}); nothing written"
            ) from e

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

    def _plan_files(self) -> Any:
        """Every file scan task at the start snapshot, as one Java list."""
        iterable = self.table.newScan().useSnapshot(self.snapshot_id).ignoreResiduals().planFiles()
        try:  # one call: the JVM reads the manifests and lists every task
            return (
                self.jvm.org.apache.iceberg.relocated.com.google.common.collect.Lists.newArrayList(
                    iterable
                )
            )
        finally:
            iterable.close()

    def check_exist(self, paths: Iterable[str]) -> None:
        """Raise :class:`MissingDataFile` if a planned data file is missing on storage: what
        explains a failed read. A read that succeeds proves its file exists, so a rewrite
        looks only after a failure, not before every write (on object storage each look is
        a request: 36 s for 12,000 files).

        Local files are looked at directly; others through the table's FileIO, several
        at a time (each look is a py4j round trip, and on object storage a request)."""
        io = self.table.io()

        def exists(path: str) -> bool:
            local = local_path(path)
            if local is not None:
                return os.path.isfile(local)
            return bool(io.newInputFile(path).exists())

        todo = list(paths)
        try:
            with ThreadPoolExecutor(max_workers=8) as pool:
                found = list(pool.map(exists, todo))
        except Exception as e:  # storage away: one line, not py4j's Java stack trace
            raise OperationFailed(
                f"could not check that the planned files of {self.table_name} exist "
                f"({java_class_name(e)}: {java_message(e)}); nothing written"
            ) from e
        missing = [path for path, ok in zip(todo, found, strict=True) if not ok]
        if missing:
            raise MissingDataFile(
                f"data file {missing[0]} of {self.table_name} is missing on storage; "
                "nothing was rewritten"
            )

    def _delete_files(self, path: str) -> list[tuple[str, Any, str, str, str | None]]:
        """(location, delete file, content, format, referenced data file or None) of each
        delete file of ``path``'s task, looked at once. The Java list is read by index: a
        py4j iterator ends in a Java exception, which PySpark converts at ~10 ms apiece."""
        if self.no_deletes:
            return []
        if path not in self._deletes:
            util = self.jvm.org.apache.iceberg.util.ContentFileUtil
            deletes = self.tasks[path].deletes()
            found = []
            for delete in (deletes.get(i) for i in range(int(deletes.size()))):
                kind, form = str(delete.content().name()), str(delete.format().name())
                ref = util.referencedDataFileLocation(delete) if kind == POSITION_DELETES else None
                found.append(
                    (str(delete.location()), delete, kind, form, None if ref is None else str(ref))
                )
            self._deletes[path] = found
        return self._deletes[path]

    def parquet_position_deletes(self, path: str) -> tuple[str, ...] | None:
        """The locations of the delete files that apply to ``path`` when every one is a
        Parquet position delete file (what the Arrow engine applies); None when any is
        not (an equality delete, a deletion vector)."""
        found = self._delete_files(path)
        if any(kind != POSITION_DELETES or form != "PARQUET" for _, _, kind, form, _ in found):
            return None
        return tuple(location for location, *_ in found)

    def dangling_deletes(self, paths: Sequence[str]) -> list[Any]:
        """Position delete files that reference only files among ``paths``: file-scoped
        position delete files and deletion vectors (each DV names its one data file;
        several DVs share one Puffin file, told apart by their offset in it, as
        Iceberg's ``DeleteFileSet`` does)."""
        rewritten = set(paths)
        found: dict[tuple[str, int], Any] = {}
        for path in paths:
            for location, delete, kind, form, ref in self._delete_files(path):
                if kind == POSITION_DELETES and ref is not None and ref in rewritten:
                    offset = delete.contentOffset() if form == PUFFIN else None
                    found[(location, -1 if offset is None else int(offset))] = delete
        return [found[k] for k in sorted(found)]
