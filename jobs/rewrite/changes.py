"""What the commits since a rewrite's start snapshot changed that its ``replace`` may
conflict on, read from the Java table's history: so that after one commit of several
partitions fails validation, the partitions those commits did not touch can still be
committed together (:mod:`icefloe.jobs.data.committing`).

``RewriteFiles`` validated from the start snapshot fails when a file it removes is gone
(``Missing required files to delete``: an ad-hoc run's rewrite, a copy-on-write delete) or
when a position delete added since then applies to a data file it replaces (one that names
the file, or a partition-scoped one in its partition). Equality deletes do not conflict:
the new files keep the start's data sequence number, so they still apply.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from icefloe.jobs.rewrite.tasks import POSITION_DELETES


@dataclass(frozen=True)
class Changes:
    """Since the start snapshot: the data and delete files removed, the data files that
    added position deletes name, and the partitions (spec id, partition path) of added
    position deletes that name none."""

    removed: frozenset[str]
    referenced: frozenset[str]
    scoped: frozenset[tuple[int, str]]

    def touch(self, files: Iterable[str], partition: Callable[[], tuple[int, str]]) -> bool:
        """Do these changes touch a commit that removes ``files`` (data and delete files)
        of one partition? ``partition()``: its spec id and path, asked only when a
        partition-scoped delete was added (:func:`partition_of`)."""
        paths = set(files)
        if paths & self.removed or paths & self.referenced:
            return True
        return bool(self.scoped) and partition() in self.scoped


def since(jvm: Any, table: Any, start_snapshot_id: int) -> Changes | None:
    """The :class:`Changes` of the Java ``table``'s commits after ``start_snapshot_id``
    (refreshed first), or None when the start is no ancestor of its current snapshot."""
    table.refresh()
    snapshot, commits = table.currentSnapshot(), []
    while snapshot is not None and int(snapshot.snapshotId()) != start_snapshot_id:
        commits.append(snapshot)
        parent = snapshot.parentId()
        snapshot = None if parent is None else table.snapshot(parent)
    if snapshot is None:
        return None
    io, util = table.io(), jvm.org.apache.iceberg.util.ContentFileUtil
    listed = jvm.org.apache.iceberg.relocated.com.google.common.collect.Lists.newArrayList
    removed: set[str] = set()
    referenced: set[str] = set()
    scoped: set[tuple[int, str]] = set()
    for commit in commits:
        for files in (commit.removedDataFiles(io), commit.removedDeleteFiles(io)):
            removed.update(str(f.location()) for f in _each(listed(files)))
        for d in _each(listed(commit.addedDeleteFiles(io))):
            if str(d.content().name()) != POSITION_DELETES:
                continue
            ref = util.referencedDataFileLocation(d)
            if ref is not None:
                referenced.add(str(ref))
            else:
                scoped.add(partition_of(table, d))
    return Changes(frozenset(removed), frozenset(referenced), frozenset(scoped))


def _each(java_list: Any) -> Iterator[Any]:
    """A Java list's items read by index: a py4j iterator ends in a Java exception, which
    PySpark converts at ~10 ms apiece."""
    return (java_list.get(i) for i in range(int(java_list.size())))


def partition_of(table: Any, data_file: Any) -> tuple[int, str]:
    """The spec id and partition path (``day=d0``) of the Java ``data_file`` of ``table``."""
    spec_id = int(data_file.specId())
    return spec_id, str(table.specs().get(spec_id).partitionToPath(data_file.partition()))
