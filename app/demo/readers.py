"""What a reader pays on each side: the files a query plans against and opens, and the time
a fresh reader takes to plan it (PyIceberg: load the table, ``plan_files`` with the
query's filter, so partitions and the files' column bounds prune; median of ``runs``)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Mapping, Sequence
from typing import Any

from icefloe.app.demo.workload import DemoTable, Facts

ALL_ROWS = "a full scan"


def plan_query(catalog: Any, name: str, where: str | None, runs: int = 3) -> dict[str, Any]:
    """Files opened, their bytes and rows, and the median planning time of one query."""
    spent, tasks = [], []
    for _ in range(runs):
        started = time.perf_counter()
        table = catalog.load_table(tuple(name.split(".")))
        scan = table.scan() if where is None else table.scan(row_filter=where)
        tasks = list(scan.plan_files())
        spent.append((time.perf_counter() - started) * 1000)
    return {
        "files": len(tasks),
        "bytes": sum(t.file.file_size_in_bytes for t in tasks),
        "rows": sum(t.file.record_count for t in tasks),
        "plan_ms": round(statistics.median(spent), 1),
    }


def reader_figures(
    catalog: Any,
    tables: Sequence[DemoTable],
    sides: Mapping[str, Mapping[str, str]],
    facts: Facts,
) -> list[dict[str, Any]]:
    """Per table, a full scan and each of its queries, on every side (side -> table ->
    the side's table name)."""
    out = []
    for table in tables:
        for label, where in ((ALL_ROWS, None), *((q.label, q.where(facts)) for q in table.queries)):
            out.append(
                {"table": table.name, "query": label, "filter": where}
                | {
                    side: plan_query(catalog, names[table.name], where)
                    for side, names in sides.items()
                }
            )
    return out
