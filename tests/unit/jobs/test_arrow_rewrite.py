"""The Arrow engine's task, on real PyIceberg tables (no Spark): it writes exactly its
input, in the planned number of files, and refuses to return anything it cannot prove."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from jobs import arrow_rewrite as ar

pytestmark = pytest.mark.unit


@pytest.fixture
def table(tmp_path: Path) -> Any:
    """Five appends (five files) of 300 rows, with nulls, NaN and -0.0."""
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog("lake", uri=f"sqlite:///{tmp_path}/c.db",
                         warehouse=f"file://{tmp_path}/wh")
    catalog.create_namespace("db")
    rng = np.random.default_rng(7)

    def batch(i: int) -> pa.Table:
        ids = np.arange(i * 300, (i + 1) * 300)
        x = rng.random(300)
        x[::17], x[1::17] = np.nan, -0.0
        return pa.table({
            "id": pa.array(ids, pa.int64()),
            "name": pa.array([None if k % 11 == 0 else f"n{k % 37}" for k in ids]),
            "x": pa.array(x),
        })

    t = catalog.create_table("db.t", schema=batch(0).schema)
    for i in range(5):
        t.append(batch(i))
    return catalog.load_table("db.t")


def _group(table: Any, outputs: int, tmp_path: Path, sort: tuple[str, ...] = ()) -> Any:
    files = [t.file for t in table.scan().plan_files()]
    return ar.ArrowGroup(
        "g", 0, tuple((f.file_path, f.record_count) for f in files),
        tuple(f"file://{tmp_path}/out-{i}.parquet" for i in range(outputs)), sort,
    )


def _arrow_table(table: Any) -> ar.ArrowTable:
    return ar.ArrowTable(ar.slim_metadata(table.metadata), dict(table.io.properties))


def _read(paths: list[str]) -> pa.Table:
    return pa.concat_tables([pq.read_table(p.removeprefix("file://")) for p in paths])


def _key(t: pa.Table) -> list[tuple[Any, ...]]:
    """Rows as comparable tuples, NaN made equal to itself, sorted."""
    rows = zip(*[t.column(c).to_pylist() for c in ("id", "name", "x")], strict=True)
    return sorted((i, n or "", repr(x)) for i, n, x in rows)


def test_merge_writes_every_row_once_in_the_planned_files(table, tmp_path):
    before = table.scan().to_arrow()
    group = _group(table, 3, tmp_path)
    result = ar.rewrite_group(_arrow_table(table), group)
    assert result.rows_in == 1500
    assert [n for _, n in result.files] == [500, 500, 500]
    written = _read([p for p, _ in result.files])
    assert _key(written) == _key(before)
    assert result.non_null == {"id": 1500, "name": 1500 - before["name"].null_count,
                               "x": 1500}
    # Iceberg field ids are in the files, so Iceberg readers project them by id
    ids = pq.read_schema(result.files[0][0].removeprefix("file://")).field("id").metadata
    assert ids[b"PARQUET:field_id"] == b"1"


def test_sort_orders_rows_nulls_first(table, tmp_path):
    result = ar.rewrite_group(_arrow_table(table), _group(table, 2, tmp_path, ("name",)))
    for path, _ in result.files:
        names = pq.read_table(path.removeprefix("file://")).column("name").to_pylist()
        assert names == sorted(names, key=lambda v: (v is not None, v or ""))
    assert _key(_read([p for p, _ in result.files])) == _key(table.scan().to_arrow())


def test_rows_are_split_evenly_and_never_into_empty_files(table, tmp_path):
    assert ar.rows_per_file(1500, 4) == 375 and ar.rows_per_file(10, 3) == 4
    assert ar.rows_per_file(0, 2) == 1
    result = ar.rewrite_group(_arrow_table(table), _group(table, 4, tmp_path))
    assert [n for _, n in result.files] == [375] * 4
    small = ar.ArrowGroup("s", 0, _group(table, 1, tmp_path).inputs[:1],
                          tuple(f"file://{tmp_path}/s-{i}.parquet" for i in range(1000)))
    done = ar.rewrite_group(_arrow_table(table), small)
    assert sum(n for _, n in done.files) == 300 and all(n > 0 for _, n in done.files)
    assert len(done.files) == math.ceil(300 / ar.rows_per_file(300, 1000))


def test_a_file_that_does_not_hold_what_was_written_is_refused(table, tmp_path, monkeypatch):
    real = ar._write

    def lossy(t: Any, io: Any, path: str, chunk: pa.Table) -> pa.Table:
        real(t, io, path, chunk.slice(1))  # the file misses the first row
        return chunk

    monkeypatch.setattr(ar, "_write", lossy)
    with pytest.raises(ar.VerificationError, match="wrote 500 rows, the file holds 499"):
        ar.rewrite_group(_arrow_table(table), _group(table, 3, tmp_path))


def test_a_changed_value_is_caught_by_the_value_comparison(table, tmp_path, monkeypatch):
    real = ar._write

    def altered(t: Any, io: Any, path: str, chunk: pa.Table) -> pa.Table:
        ids = chunk.column("id").to_numpy().copy()
        ids[-1] += 1
        real(t, io, path, chunk.set_column(0, "id", pa.array(ids)))
        return chunk

    monkeypatch.setattr(ar, "_write", altered)
    with pytest.raises(ar.VerificationError, match="values differ"):
        ar.rewrite_group(_arrow_table(table), _group(table, 3, tmp_path))


def test_input_rows_must_match_the_files_metadata(table, tmp_path):
    group = _group(table, 2, tmp_path)
    wrong = ar.ArrowGroup(group.group_id, 0,
                          ((group.inputs[0][0], group.inputs[0][1] + 1), *group.inputs[1:]),
                          group.outputs)
    with pytest.raises(ar.VerificationError, match="metadata says 1501"):
        ar.rewrite_group(_arrow_table(table), wrong)


def test_nan_equals_itself_bit_for_bit_and_negative_zero_does_not_equal_zero():
    a = pa.table({"x": pa.array([float("nan"), -0.0, 1.0])})
    assert not a.equals(a)  # why _bitwise exists
    assert ar._bitwise(a).equals(ar._bitwise(a))
    b = pa.table({"x": pa.array([float("nan"), 0.0, 1.0])})
    assert not ar._bitwise(a).equals(ar._bitwise(b))


def test_eligibility():
    assert ar.eligible("parquet", ["s3://b/x.parquet"], has_deletes=False)
    assert not ar.eligible("parquet", ["s3://b/x.parquet"], has_deletes=True)
    assert not ar.eligible("orc", ["s3://b/x.orc"], has_deletes=False)
    assert not ar.eligible("parquet", ["s3://b/x.avro"], has_deletes=False)
    assert ar.eligible("parquet", ["x.parquet"], False, in_memory_bytes=ar.MAX_IN_MEMORY_BYTES)
    assert not ar.eligible("parquet", ["x.parquet"], False, ar.MAX_IN_MEMORY_BYTES + 1)


def test_slim_metadata_keeps_what_reads_and_writes_need(table):
    slim = ar.slim_metadata(table.metadata)
    assert slim.snapshots == [] and slim.current_snapshot_id is None
    assert slim.schema() == table.metadata.schema()
    assert slim.properties == table.metadata.properties
    assert slim.location == table.metadata.location
