"""What a z-order rewrite must leave, checked on the files it wrote (both engines' tests):
each file's rows in ascending z-order key, and no two files overlapping in the key."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from icefloe.jobs.rewrite.zorder_rows import zorder_keys


def assert_zordered(files: Sequence[pa.Table], columns: Sequence[str]) -> None:
    """Every file's keys ascend; ordered by their smallest key, file ``i``'s largest key
    is at most file ``i + 1``'s smallest (files of one group split the key range)."""
    spans = []
    for i, table in enumerate(files):
        keys = zorder_keys(table, columns).to_pylist()
        assert keys == sorted(keys), f"file {i}: rows are not in z-order"
        if keys:
            spans.append((keys[0], keys[-1]))
    spans.sort()
    for (_, high), (low, _) in zip(spans, spans[1:], strict=False):
        assert high <= low, f"files overlap in the z-order key: {high.hex()} > {low.hex()}"
