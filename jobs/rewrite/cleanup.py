"""Deleting the files of a rewrite that will not commit.

Files written by a rewrite that does not commit (a failed write, check or commit, or a
partition not worth committing) are deleted at once through the table's FileIO, never
left for orphan cleanup."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from jobs.rewrite.results import GroupResult


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
