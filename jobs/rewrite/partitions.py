"""The end-to-end partition check of a rewrite, before any commit.

Each group's new files must lie in the one partition that every file they replace shares:
a rewrite that would move rows across partitions (a planning bug, a writer that computed
another partition) is refused, whatever the checksums say (the rows are all there, in
files whose partition tuple is wrong). The comparison is Iceberg's own: a Java
``PartitionSet`` of (spec id, partition tuple), equal by the spec's partition type, so NULL
is never the string ``'null'`` and no value is compared as escaped text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from icefloe.base.partition_key import display_key
from icefloe.jobs.rewrite.results import GroupResult


def partition_mismatch(
    jvm: Any, table: Any, replaced: Mapping[str, Any], results: Sequence[GroupResult]
) -> str:
    """'' when every group's new files are in the partition all its replaced files share;
    else what is wrong. ``replaced``: path → Java ``DataFile`` of the planned files."""
    from py4j.java_gateway import get_method  # py4j wraps a Java Set as a Python set

    specs = table.specs()
    partition_set = jvm.org.apache.iceberg.util.PartitionSet
    for r in results:
        inputs = partition_set.create(specs)
        add, contains = get_method(inputs, "add"), get_method(inputs, "contains")
        for path in r.group.paths:
            f = replaced[path]
            add(f.specId(), f.partition())
        where = display_key(r.group.partition) or "(unpartitioned)"
        count = int(get_method(inputs, "size")())
        if count != 1:
            return f"a group of partition {where} replaces files of {count} partitions"
        for new in r.new_files:
            if not contains(new.specId(), new.partition()):
                return (
                    f"new file {new.location()} is not in partition {where} of the files "
                    "it replaces"
                )
    return ""
