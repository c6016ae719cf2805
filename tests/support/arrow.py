"""The Arrow engine's test table and helpers (no Spark): a real PyIceberg table of five
files (``make_table``, behind each test module's ``table`` fixture), a rewrite group
over its files, the engine's view of the table and the rows of written files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from icefloe.jobs.rewrite import arrow_engine as ar
from icefloe.optimizer.sortorder import ascending


def make_table(tmp_path: Path) -> Any:
    """A PyIceberg table under ``tmp_path``: five appends (five files) of 300 rows, with
    nulls, NaN and -0.0 (each test module's ``table`` fixture)."""
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog(
        "lake", uri=f"sqlite:///{tmp_path}/c.db", warehouse=f"file://{tmp_path}/wh"
    )
    catalog.create_namespace("db")
    rng = np.random.default_rng(7)

    def batch(i: int) -> pa.Table:
        ids = np.arange(i * 300, (i + 1) * 300)
        x = rng.random(300)
        x[::17], x[1::17] = np.nan, -0.0
        return pa.table(
            {
                "id": pa.array(ids, pa.int64()),
                "name": pa.array([None if k % 11 == 0 else f"n{k % 37}" for k in ids]),
                "x": pa.array(x),
            }
        )

    t = catalog.create_table("db.t", schema=batch(0).schema)
    for i in range(5):
        t.append(batch(i))
    return catalog.load_table("db.t")


def arrow_group(table: Any, outputs: int, tmp_path: Path, sort: tuple[str, ...] = ()) -> Any:
    files = [t.file for t in table.scan().plan_files()]
    return ar.ArrowGroup(
        "g",
        0,
        tuple((f.file_path, f.record_count) for f in files),
        tuple(f"file://{tmp_path}/out-{i}.parquet" for i in range(outputs)),
        ascending(sort),
    )


def arrow_table(table: Any) -> ar.ArrowTable:
    return ar.ArrowTable(ar.slim_metadata(table.metadata), dict(table.io.properties))


def read_files(paths: list[str]) -> pa.Table:
    return pa.concat_tables([pq.read_table(p.removeprefix("file://")) for p in paths])
