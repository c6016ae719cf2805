"""The commit of a rewrite: one ``replace`` snapshot through Iceberg's ``RewriteFiles``.

``newRewrite().validateFromSnapshot(start).dataSequenceNumber(startSeq)``, delete the
replaced data files and the position delete files that referenced only them, add the new
files, and merge the table's small manifests in the same snapshot when that is cheap
(:mod:`icefloe.jobs.rewrite.manifest_merge`). Validation from the start snapshot is what makes a
concurrent append harmless and a concurrent delete of a replaced file a clean
:class:`CommitConflict` instead of a resurrected row.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from icefloe.base.errors import OperationFailed
from icefloe.base.tablestats import REWRITE_ID_PROPERTY
from icefloe.jobs.rewrite.java_errors import java_class_name, java_message
from icefloe.jobs.rewrite.manifest_merge import merge_small_manifests
from icefloe.jobs.rewrite.results import GroupResult

STATUS_CHECK_PAUSES = (0.5, 1.0, 2.0)
"""Pauses between reads of the table after a commit failed with an unclear outcome."""
NOT_LANDED, UNKNOWN = "not-landed", "unknown"
"""What reading the table after an unclear commit failure shows (else the snapshot id)."""


class CommitConflict(OperationFailed):
    """The commit failed validation (a concurrent change touched a replaced file)."""


class CommitUnknown(OperationFailed):
    """The commit may or may not have landed, and the table could not be read to tell.

    Its new files are kept (they may be live): nothing may delete them until the table has
    been read and shows they were not committed. ``paths`` are those files."""

    def __init__(self, message: str, paths: Sequence[str]) -> None:
        super().__init__(message)
        self.paths = tuple(paths)


class Committer:
    """Commits rewrites of the Java ``table`` started at ``snapshot_id``.

    ``discard(results)`` deletes the new files of a commit that failed cleanly; ``tick``
    (phase, since) adds the time since ``since`` to the phase's timing."""

    def __init__(
        self,
        jvm: Any,
        table: Any,
        table_name: str,
        snapshot_id: int,
        start_sequence: int,
        discard: Callable[[Iterable[GroupResult]], None],
        tick: Callable[[str, float], float],
    ) -> None:
        self.jvm = jvm
        self.table = table
        self.table_name = table_name
        self.snapshot_id = snapshot_id
        self.start_sequence = start_sequence
        self.discard = discard
        self.tick = tick

    def commit(
        self,
        results: Sequence[GroupResult],
        replaced: Sequence[Any],
        deletes: Sequence[Any],
        discard_on_conflict: bool = True,
    ) -> int:
        """One ``replace`` snapshot: ``replaced`` (Java data files) and ``deletes`` (Java
        delete files) out, ``results``' new files in. Returns the snapshot id.

        A failed commit deletes the new files when Iceberg says they are unreferenced,
        except after a validation conflict with ``discard_on_conflict=False`` (the caller
        retries them in smaller commits). Any other failure may or may not have committed
        (a catalog that failed mid-request): the table is read again, as Iceberg's own
        commit-status check does; a commit found there is a success, one not found has its
        files deleted, and when the table cannot be read the files are kept (they may be
        live) and the error says so."""
        rewrite_id = str(uuid.uuid4())
        op = (
            self.table.newRewrite()
            .validateFromSnapshot(self.snapshot_id)
            .dataSequenceNumber(self.start_sequence)
            .set(REWRITE_ID_PROPERTY, rewrite_id)
        )
        for data_file in replaced:
            op.deleteFile(data_file)
        for delete in deletes:
            op.deleteFile(delete)
        for r in results:
            for data_file in r.new_files:
                op.addFile(data_file)
        merge_small_manifests(self.table, op)
        clock = time.monotonic()
        try:
            op.commit()
        except Exception as e:
            name = java_class_name(e)
            conflict = name.endswith("ValidationException")
            if self._cleanable(e):
                if discard_on_conflict or not conflict:
                    self.discard(results)
            elif not conflict:
                landed = self._landed(rewrite_id)
                if landed == NOT_LANDED:
                    self.discard(results)  # the table was read: the commit is not there
                elif landed is not UNKNOWN:
                    self.tick("commit", clock)
                    return int(landed)  # the commit went through after all
                else:
                    paths = [p for r in results for p in r.new_paths]
                    raise CommitUnknown(
                        f"commit of {self.table_name} failed ({name}: {java_message(e)}); "
                        f"the outcome is unknown, so its {len(paths)} new file(s) were kept "
                        "until the table can be read",
                        paths,
                    ) from e
            if conflict:
                raise CommitConflict(
                    f"commit of {self.table_name} conflicts: {java_message(e)}"
                ) from e
            raise OperationFailed(
                f"commit of {self.table_name} failed ({name}: {java_message(e)})"
            ) from e
        self.tick("commit", clock)
        return self._snapshot_with(rewrite_id)

    def _cleanable(self, error: BaseException) -> bool:
        java = getattr(error, "java_exception", None)
        if java is None:
            return False
        failure = self.jvm.org.apache.iceberg.exceptions.CleanableFailure._java_lang_class
        return bool(failure.isInstance(java))

    def _landed(self, rewrite_id: str) -> int | str:
        """The snapshot of ``rewrite_id`` if the table (read again, a few tries) has it,
        :data:`NOT_LANDED` when it was read and has not, :data:`UNKNOWN` when it could not
        be read."""
        for pause in STATUS_CHECK_PAUSES:
            try:
                return self._snapshot_with(rewrite_id)
            except OperationFailed:
                return NOT_LANDED  # read, and not there
            except Exception:  # the catalog is still failing: wait a moment
                time.sleep(pause)
        return UNKNOWN

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
