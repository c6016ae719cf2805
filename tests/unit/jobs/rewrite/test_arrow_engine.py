"""The Arrow engine's task, on real PyIceberg tables (no Spark): it writes exactly its
input, in the planned number of files, and refuses to return anything it cannot prove."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from icefloe.jobs.rewrite import arrow_engine as ar
from icefloe.jobs.rewrite.file_bytes import plain_readable
from tests.support.arrow import arrow_group, arrow_table, make_table, read_files

pytestmark = pytest.mark.unit


@pytest.fixture
def table(tmp_path: Path) -> Any:
    """Five appends (five files) of 300 rows, with nulls, NaN and -0.0."""
    return make_table(tmp_path)


def _key(t: pa.Table) -> list[tuple[Any, ...]]:
    """Rows as comparable tuples, NaN made equal to itself, sorted."""
    rows = zip(*[t.column(c).to_pylist() for c in ("id", "name", "x")], strict=True)
    return sorted((i, n or "", repr(x)) for i, n, x in rows)


def test_merge_writes_every_row_once_in_the_planned_files(table, tmp_path):
    before = table.scan().to_arrow()
    group = arrow_group(table, 3, tmp_path)
    result = ar.rewrite_group(arrow_table(table), group)
    assert result.rows_in == 1500
    assert [n for _, n in result.files] == [500, 500, 500]
    written = read_files([p for p, _ in result.files])
    assert _key(written) == _key(before)
    assert result.non_null == {"id": 1500, "name": 1500 - before["name"].null_count, "x": 1500}
    # Iceberg field ids are in the files, so Iceberg readers project them by id
    ids = pq.read_schema(result.files[0][0].removeprefix("file://")).field("id").metadata
    assert ids[b"PARQUET:field_id"] == b"1"


def test_sort_orders_rows_nulls_first(table, tmp_path):
    result = ar.rewrite_group(arrow_table(table), arrow_group(table, 2, tmp_path, ("name",)))
    for path, _ in result.files:
        names = pq.read_table(path.removeprefix("file://")).column("name").to_pylist()
        assert names == sorted(names, key=lambda v: (v is not None, v or ""))
    assert _key(read_files([p for p, _ in result.files])) == _key(table.scan().to_arrow())


def test_rows_are_split_evenly_and_never_into_empty_files(table, tmp_path):
    result = ar.rewrite_group(arrow_table(table), arrow_group(table, 4, tmp_path))
    assert [n for _, n in result.files] == [375] * 4
    small = ar.ArrowGroup(
        "s",
        0,
        arrow_group(table, 1, tmp_path).inputs[:1],
        tuple(f"file://{tmp_path}/s-{i}.parquet" for i in range(1000)),
    )
    done = ar.rewrite_group(arrow_table(table), small)
    assert sum(n for _, n in done.files) == 300 and all(n > 0 for _, n in done.files)
    assert len(done.files) == 300  # one row each: never an empty file


def test_files_are_closed_by_the_bytes_written_not_the_locations_planned(table, tmp_path):
    """Four locations and a prediction of four targets, for rows that make one target file:
    the first file takes a quarter of the rows, and its real bytes per row say the rest
    make one file more, not three."""
    one = ar.rewrite_group(arrow_table(table), arrow_group(table, 1, tmp_path / "one"))
    target = sum(f.size for f in one.footers.values())  # the 1,500 rows as one file
    group = replace(arrow_group(table, 4, tmp_path), predicted_bytes=4 * target, target=target)
    done = ar.rewrite_group(arrow_table(table), group)
    assert [n for _, n in done.files] == [375, 1125]
    assert _key(read_files([p for p, _ in done.files])) == _key(table.scan().to_arrow())
    unknown = replace(group, predicted_bytes=0)  # no prediction: the first file's rate
    assert [n for _, n in ar.rewrite_group(arrow_table(table), unknown).files] == [375, 1125]
    even = replace(group, predicted_bytes=0, target=0)  # no target: over every location
    assert [n for _, n in ar.rewrite_group(arrow_table(table), even).files] == [375] * 4


def test_a_file_that_does_not_hold_what_was_written_is_refused(table, tmp_path, monkeypatch):
    real = ar._write

    def lossy(t: Any, io: Any, path: str, chunk: pa.Table) -> pa.Table:
        real(t, io, path, chunk.slice(1))  # the file misses the first row
        return chunk

    monkeypatch.setattr(ar, "_write", lossy)
    with pytest.raises(ar.VerificationError, match="wrote 500 rows, the file holds 499"):
        ar.rewrite_group(arrow_table(table), arrow_group(table, 3, tmp_path))


def test_a_changed_value_is_caught_by_the_value_comparison(table, tmp_path, monkeypatch):
    real = ar._write

    def altered(t: Any, io: Any, path: str, chunk: pa.Table) -> pa.Table:
        ids = chunk.column("id").to_numpy().copy()
        ids[-1] += 1
        real(t, io, path, chunk.set_column(0, "id", pa.array(ids)))
        return chunk

    monkeypatch.setattr(ar, "_write", altered)
    with pytest.raises(ar.VerificationError, match="values differ"):
        ar.rewrite_group(arrow_table(table), arrow_group(table, 3, tmp_path))


def test_input_rows_must_match_the_files_metadata(table, tmp_path):
    group = arrow_group(table, 2, tmp_path)
    wrong = ar.ArrowGroup(
        group.group_id,
        0,
        ((group.inputs[0][0], group.inputs[0][1] + 1), *group.inputs[1:]),
        group.outputs,
    )
    with pytest.raises(ar.VerificationError, match="position deletes say 1501"):
        ar.rewrite_group(arrow_table(table), wrong)


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


def _every_type_table(tmp_path: Path) -> Any:
    """Two appends of every primitive type PyIceberg writes, a struct, a list and a map."""
    import datetime
    import decimal

    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog(
        "lake", uri=f"sqlite:///{tmp_path}/t.db", warehouse=f"file://{tmp_path}/wt"
    )
    catalog.create_namespace("db")
    n = 6
    data = pa.table(
        {
            "i": pa.array(range(n), pa.int32()),
            "l": pa.array(range(n), pa.int64()),
            "s": pa.array(["a", None, "c", "d", "é", ""]),
            "b": pa.array([b"x", None] * 3),
            "d": pa.array([decimal.Decimal("1.23"), None] * 3, pa.decimal128(10, 2)),
            "ts": pa.array([datetime.datetime(2026, 1, 1, 12)] * n, pa.timestamp("us")),
            "tz": pa.array([datetime.datetime(2026, 1, 1)] * n, pa.timestamp("us", tz="UTC")),
            "dt": pa.array([datetime.date(2026, 1, 2)] * n, pa.date32()),
            "f": pa.array([1.5, float("nan"), -0.0] * 2, pa.float32()),
            "bo": pa.array([True, None] * 3),
            "st": pa.array(
                [{"x": 1, "y": "q"}, None] * 3, pa.struct([("x", pa.int64()), ("y", pa.string())])
            ),
            "li": pa.array([[1, 2], None, []] * 2, pa.list_(pa.int64())),
            "m": pa.array([[("k", 1)], None] * 3, pa.map_(pa.string(), pa.int64())),
        }
    )
    t = catalog.create_table("db.every", schema=data.schema)
    t.append(data)
    t.append(data)
    return catalog.load_table("db.every")


def test_a_file_read_as_it_is_reads_as_iceberg_reads_it(tmp_path):
    """Differential: the plain read of a file (when it holds exactly the table's columns)
    equals PyIceberg's field-id projection of it, value for value and type for type, and
    its rows need no conversion before they are written as Iceberg writes them."""
    from pyiceberg.io import load_file_io
    from pyiceberg.io.pyarrow import ParquetFormatModel, _to_requested_schema

    table = _every_type_table(tmp_path)
    at = arrow_table(table)
    io = load_file_io(at.io_properties, at.metadata.location)
    schema = at.metadata.schema()
    for task in table.scan().plan_files():
        f = task.file
        plain = pa.Table.from_batches(ar.read_data_file(at, io, 0, f.file_path, f.record_count))
        scanned = pa.Table.from_batches(list(ar._scan(at, io, 0, f.file_path, f.record_count)))
        assert plain.schema.equals(scanned.schema)
        flat = [c for c in plain.column_names if c not in ("st", "li", "m")]
        assert ar._bitwise(plain.select(flat)).equals(ar._bitwise(scanned.select(flat)))
        assert plain.drop_columns(["f"]).equals(scanned.drop_columns(["f"]))
        projected = pa.Table.from_batches(
            [
                _to_requested_schema(
                    requested_schema=schema,
                    file_schema=schema,
                    batch=b,
                    include_field_ids=True,
                    format_model=ParquetFormatModel(),
                )
                for b in scanned.to_batches()
            ]
        )
        for chunk in (plain, scanned):
            written = ar._as_written(at, chunk)
            assert written.schema.equals(projected.schema, check_metadata=True)
            assert written.drop_columns(["f"]).equals(projected.drop_columns(["f"]))


def test_which_files_are_read_as_they_are(table, tmp_path):
    """Only a file with the same names, field ids, nullability and types; 64-bit string
    offsets against 32-bit ones are the one difference allowed."""
    written = arrow_table(table).written_schema
    f = next(iter(table.scan().plan_files())).file
    assert plain_readable(pq.read_schema(f.file_path.removeprefix("file://")), written)
    assert plain_readable(
        pa.schema(
            [written.field(0), written.field(1).with_type(pa.large_string()), written.field(2)]
        ),
        written,
    )
    renamed = pa.schema([written.field(0), written.field(1).with_name("label"), written.field(2)])
    assert not plain_readable(renamed, written)
    other_id = pa.schema(
        [
            written.field(0),
            written.field(1).with_metadata({b"PARQUET:field_id": b"9"}),
            written.field(2),
        ]
    )
    assert not plain_readable(other_id, written)
    no_ids = pa.schema([fld.remove_metadata() for fld in written])
    assert not plain_readable(no_ids, written)
    wider = pa.schema([written.field(0).with_type(pa.int32()), written.field(1), written.field(2)])
    assert not plain_readable(wider, written)
    required = pa.schema(
        [
            written.field(0).with_nullable(not written.field(0).nullable),
            written.field(1),
            written.field(2),
        ]
    )
    assert not plain_readable(required, written)


def test_files_of_an_older_schema_are_projected_by_field_id(table, tmp_path):
    """After a rename and an added column, the old files go through ArrowScan: the rows
    come out under the new names, the new column null."""
    from pyiceberg.types import LongType

    before = table.scan().to_arrow()
    with table.update_schema() as update:
        update.rename_column("name", "label")
        update.add_column("extra", LongType())
    table = table.refresh()
    result = ar.rewrite_group(arrow_table(table), arrow_group(table, 2, tmp_path))
    written = read_files([p for p, _ in result.files])
    assert written.column_names == ["id", "label", "x", "extra"]
    assert written.column("extra").null_count == 1500

    def rows(t: pa.Table, name: str) -> list[tuple[Any, Any]]:
        return sorted(
            zip(t.column("id").to_pylist(), t.column(name).to_pylist(), strict=True),
            key=lambda r: r[0],
        )

    assert rows(written, "label") == rows(before, "name")


def test_each_written_file_comes_back_with_its_size_and_footer(table, tmp_path):
    """The footer handed to the commit (icefloe.jobs.rewrite.new_files) is the file's own: its
    Thrift bytes are those pyarrow reads the metadata from, its size the file's."""
    result = ar.rewrite_group(arrow_table(table), arrow_group(table, 2, tmp_path))
    assert sorted(result.footers) == sorted(p for p, _ in result.files)
    for path, rows in result.files:
        data = Path(path.removeprefix("file:")).read_bytes()
        footer = result.footers[path]
        assert footer.size == len(data)
        n = len(footer.metadata)
        assert data[-8 - n : -8] == footer.metadata and data[-8:-4] == n.to_bytes(4, "little")
        assert pq.read_metadata(pa.BufferReader(data)).num_rows == rows


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"PAR1", "not a Parquet file"),
        (b"PAR1" + b"x" * 20 + b"JUNK", "not a Parquet file"),
        (b"PAR1" + b"x" * 20 + (99).to_bytes(4, "little") + b"PAR1", "a Parquet footer of 99"),
        (b"PAR1" + b"x" * 20 + (0).to_bytes(4, "little") + b"PAR1", "a Parquet footer of 0"),
    ],
)
def test_a_footer_that_cannot_be_a_parquet_footer_is_refused(data, why):
    with pytest.raises(ar.VerificationError, match=f"^f.parquet: {why}"):
        ar.Footer.of(data, "f.parquet")


@given(st.binary(max_size=64))
def test_any_bytes_give_a_footer_inside_them_or_a_verification_error(data):
    """Property: whatever a read-back returns, ``Footer.of`` either refuses it with a
    VerificationError or returns the bytes just before the length and ``PAR1``."""
    try:
        footer = ar.Footer.of(data, "f.parquet")
    except ar.VerificationError:
        return
    n = len(footer.metadata)
    assert footer.size == len(data) and 0 < n <= len(data) - 12
    assert data[-8 - n : -8] == footer.metadata and data[-4:] == b"PAR1"


@given(st.lists(st.integers(-(2**40), 2**40), min_size=1, max_size=50))
def test_a_written_files_footer_is_the_metadata_pyarrow_reads(values):
    """Property: the footer of any file pyarrow writes parses back to that file's
    metadata (rows and schema)."""
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table({"v": values}), sink)
    data = sink.getvalue().to_pybytes()
    footer = ar.Footer.of(data, "f.parquet")
    assert footer.size == len(data)
    meta = pq.read_metadata(pa.BufferReader(data))
    assert meta.num_rows == len(values)
    rebuilt = footer.metadata + len(footer.metadata).to_bytes(4, "little") + b"PAR1"
    assert data.endswith(rebuilt)
