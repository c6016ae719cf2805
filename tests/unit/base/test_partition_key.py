"""The partition identity (icefloe.base.partition_key): typed, injective, one encoding.

Property-based: every Iceberg partition transform and result type, values with ``%``,
``/``, ``=``, NULL, empty strings and unicode; round trips; distinct tuples never share a
key; the Python objects ``inspect.files()`` gives and the internal values manifests hold
give one key."""

from __future__ import annotations

import datetime as dt
import math
import uuid
from decimal import Decimal
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from pyiceberg.io.pyarrow import schema_to_pyarrow
from pyiceberg.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    TruncateTransform,
    YearTransform,
)
from pyiceberg.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

from icefloe.base.partition_key import BadPartitionKey, PartitionKey, display_key

pytestmark = pytest.mark.unit

TEXT = st.one_of(
    st.sampled_from(["", "null", "NULL", "/", "%2F", "%", "=", "a=b/c", "%25", "\\", '"']),
    st.text(max_size=12),
)
FLOATS = st.floats(allow_nan=False, width=32).filter(lambda x: x != 0 or math.copysign(1, x) > 0)
DOUBLES = st.floats(allow_nan=False).filter(lambda x: x != 0 or math.copysign(1, x) > 0)

# Iceberg result type -> internal values (what a manifest's partition Record holds)
INTERNAL: list[tuple[IcebergType, st.SearchStrategy[Any]]] = [
    (StringType(), TEXT),
    (IntegerType(), st.integers(-(2**31), 2**31 - 1)),
    (LongType(), st.integers(-(2**63), 2**63 - 1)),
    (BooleanType(), st.booleans()),
    (FloatType(), FLOATS),
    (DoubleType(), DOUBLES),
    (DateType(), st.integers(-700_000, 2_900_000)),
    (TimeType(), st.integers(0, 86_400 * 10**6 - 1)),
    (TimestampType(), st.integers(-(2**50), 2**50)),
    (TimestamptzType(), st.integers(-(2**50), 2**50)),
    (DecimalType(9, 2), st.decimals(places=2, min_value=-(10**6), max_value=10**6)),
    (BinaryType(), st.binary(max_size=8)),
    (FixedType(4), st.binary(min_size=4, max_size=4)),
    (UUIDType(), st.uuids()),
]


def _specs(types: list[IcebergType]) -> list[tuple[str, str]]:
    return [(f"f{i}", str(t)) for i, t in enumerate(types)]


@st.composite
def tuples(draw: Any) -> tuple[list[IcebergType], list[Any]]:
    chosen = draw(st.lists(st.sampled_from(range(len(INTERNAL))), min_size=1, max_size=3))
    types = [INTERNAL[i][0] for i in chosen]
    values = [draw(st.one_of(st.none(), INTERNAL[i][1])) for i in chosen]
    return types, values


@settings(max_examples=300)
@given(tuples(), st.integers(0, 3))
def test_keys_round_trip(t: tuple[list[IcebergType], list[Any]], spec_id: int) -> None:
    types, values = t
    key = PartitionKey.of(spec_id, _specs(types), values)
    text = key.encode()
    assert PartitionKey.decode(text) == key
    assert PartitionKey.decode(text).encode() == text
    assert key.display().count("=") >= len(types)


@settings(max_examples=300)
@given(st.data())
def test_distinct_tuples_never_share_a_key(data: Any) -> None:
    types, first = data.draw(tuples())
    second = [
        data.draw(st.one_of(st.none(), dict((str(k), s) for k, s in INTERNAL)[str(t)]))
        for t in types
    ]
    specs = _specs(types)
    same = PartitionKey.of(0, specs, first) == PartitionKey.of(0, specs, second)
    assert same == (first == second)
    assert (
        PartitionKey.of(0, specs, first).encode() == PartitionKey.of(0, specs, second).encode()
    ) == same


def test_the_probes_collisions_are_apart() -> None:
    """NULL and 'null', '/' and '%2F' (the issue's probe), '' and NULL, a type, a spec."""
    spec = [("k", "string")]
    keys = {PartitionKey.of(0, spec, [v]).encode() for v in (None, "null", "/", "%2F", "", "%")}
    assert len(keys) == 6
    assert PartitionKey.of(0, [("k", "int")], [1]) != PartitionKey.of(0, [("k", "string")], ["1"])
    assert PartitionKey.of(0, spec, ["a"]) != PartitionKey.of(1, spec, ["a"])
    assert PartitionKey.of(0, spec, [None]).display() == "k=null"


@settings(max_examples=200)
@given(tuples())
def test_python_objects_and_internal_values_give_one_key(
    t: tuple[list[IcebergType], list[Any]],
) -> None:
    """What ``inspect.files()`` gives (internal values through Arrow, as PyIceberg builds
    it) and what a manifest's Record holds (internal values) are one key."""
    types, values = t
    assume(not any(isinstance(ty, UUIDType) for ty in types))  # Arrow's extension type:
    # no Python-object array; a UUID arrives as UUID or bytes (the test below)
    struct = StructType(
        *(NestedField(i + 1, f"f{i}", ty, required=False) for i, ty in enumerate(types))
    )
    arrow = pa.struct(list(schema_to_pyarrow(struct)))
    row = pa.array(
        [dict(zip([f"f{i}" for i in range(len(types))], values, strict=True))], type=arrow
    )
    python = row.to_pylist()[0]
    specs = _specs(types)
    assert PartitionKey.from_mapping(0, specs, python) == PartitionKey.of(0, specs, values)


def test_a_uuid_as_object_text_or_bytes_is_one_key() -> None:
    u = uuid.uuid4()
    spec = [("u", "uuid")]
    keys = {PartitionKey.of(0, spec, [v]) for v in (u, str(u), u.bytes)}
    assert len(keys) == 1


SOURCES: list[tuple[IcebergType, st.SearchStrategy[Any], list[Any]]] = [
    (
        IntegerType(),
        st.integers(-(2**31), 2**31 - 1),
        [IdentityTransform(), BucketTransform(16), TruncateTransform(10)],
    ),
    (LongType(), st.integers(-(2**40), 2**40), [BucketTransform(7), TruncateTransform(100)]),
    (StringType(), TEXT, [IdentityTransform(), BucketTransform(16), TruncateTransform(2)]),
    (DateType(), st.integers(-30_000, 30_000), [DayTransform(), MonthTransform(), YearTransform()]),
    (
        TimestampType(),
        st.integers(-(2**45), 2**45),
        [HourTransform(), DayTransform(), MonthTransform(), YearTransform(), IdentityTransform()],
    ),
    (
        DecimalType(9, 2),
        st.decimals(places=2, min_value=-(10**5), max_value=10**5),
        [TruncateTransform(50), IdentityTransform()],
    ),
    (
        BinaryType(),
        st.binary(max_size=6),
        [TruncateTransform(2), IdentityTransform(), BucketTransform(4)],
    ),
]


@settings(max_examples=200)
@given(st.data())
def test_every_transform_keys_its_results_injectively(data: Any) -> None:
    """Partition values as Iceberg's transforms make them: distinct results, distinct
    keys; equal results, equal keys; and the key's type is the transform's result type."""
    source, values, transforms = data.draw(st.sampled_from(SOURCES))
    transform = data.draw(st.sampled_from(transforms))
    result = transform.result_type(source)
    apply = transform.transform(source)
    a, b = data.draw(st.one_of(st.none(), values)), data.draw(st.one_of(st.none(), values))
    ra, rb = apply(a), apply(b)
    spec = [("p", str(result))]
    ka, kb = PartitionKey.of(0, spec, [ra]), PartitionKey.of(0, spec, [rb])
    assert (ka == kb) == (ra == rb)
    assert PartitionKey.decode(ka.encode()) == ka


def test_display_reads_like_iceberg_paths() -> None:
    key = PartitionKey.of(
        2,
        [
            ("day", "date"),
            ("n", "int"),
            ("r", "string"),
            ("ts", "timestamptz"),
            ("d", "decimal(9, 2)"),
        ],
        [
            dt.date(2026, 11, 1),
            3,
            None,
            dt.datetime(2026, 11, 1, 10, tzinfo=dt.UTC),
            Decimal("1.50"),
        ],
    )
    assert key.display() == "day=2026-11-01/n=3/r=null/ts=2026-11-01 10:00:00+00:00/d=1.50"
    assert display_key(key.encode()) == key.display()
    assert display_key("day=1") == "day=1"  # an older item's text, as it is
    assert key.matches([("day", "2026-11-01"), ("r", "null")])
    assert not key.matches([("day", "2026-11-02")])
    assert PartitionKey(0).encode() == "[0,[]]" and PartitionKey(0).display() == ""


@pytest.mark.parametrize(
    "text", ["day=1", "", "[0]", '[0,[["a","string"]]]', "[true,[]]", "[0, []]"]
)
def test_anything_else_is_not_a_key(text: str) -> None:
    with pytest.raises(BadPartitionKey):
        PartitionKey.decode(text)


def test_storage_skew_names_partitions_by_their_keys() -> None:
    from icefloe.jobs.skew.detect import storage_skew

    rows: list[dict[str, Any]] = [
        {
            "partition": {"path": v},
            "spec_id": 0,
            "total_data_file_size_in_bytes": 10,
            "record_count": 1,
            "file_count": 1,
        }
        for v in ("null", None, "a/0=x")
    ]
    schema_field = SimpleNamespace(name="path", field_type="string")
    spec = SimpleNamespace(partition_type=lambda schema: SimpleNamespace(fields=[schema_field]))
    table = SimpleNamespace(
        current_snapshot=lambda: object(),
        metadata=SimpleNamespace(specs=lambda: {0: spec}, schema=lambda: None),
        inspect=SimpleNamespace(partitions=lambda: SimpleNamespace(to_pylist=lambda: rows)),
    )
    parts, _, _ = storage_skew(table)
    assert len({p["key"] for p in parts}) == 3  # NULL and 'null' stay two partitions
    assert sorted(p["partition"] for p in parts) == ["path=a/0=x", "path=null", "path=null"]
