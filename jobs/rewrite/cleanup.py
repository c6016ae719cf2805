"""Deleting the files of a rewrite that will not commit.

Files written by a rewrite that does not commit (a failed write, check or commit, or a
partition not worth committing) are deleted at once through the table's FileIO, never
left for orphan cleanup."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from icefloe.jobs.rewrite.locations import local_path
from icefloe.jobs.rewrite.results import GroupResult


def discard(io: Any, results: Iterable[GroupResult]) -> None:
    """Delete files written for ``results`` (they were never committed) through the Java
    FileIO ``io``, and forget them."""
    for r in results:
        for path in r.new_paths:
            try:
                io.deleteFile(path)
            except Exception:  # best effort: a file that is gone is what we want
                pass
        r.new_paths.clear()
        r.new_files.clear()
        r.new_sizes.clear()


def prune(prefix: str | None) -> None:
    """Remove the empty folders under one attempt's own ``prefix`` (Spark's writer's, see
    ``icefloe.jobs.rewrite.locations.attempt_table``) on a local file system, the prefix's own
    included: a discarded attempt leaves its partition folders behind there. A folder
    that still holds a file (a committed one) stays; object stores have no folders."""
    local = local_path(prefix) if prefix else None
    if local is None or not os.path.isdir(local):
        return
    for folder, _, _ in os.walk(local, topdown=False):
        try:
            os.rmdir(folder)  # only an empty folder goes
        except OSError:
            pass
