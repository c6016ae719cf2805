"""The hot-key report's table property (``icefloe.optimizer.skew_report``, format:
``jvm/README.md``): values written as Spark's CAST reads them back, reports that round-trip through
the property's JSON, the 64-key cap, and when a report is current."""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe.optimizer.skew_report import (
    MAX_KEY_BYTES,
    MAX_KEYS,
    MAX_KEYS_BYTES,
    HotKeyReport,
    build,
    decode,
    encode,
    is_current,
    parse_value,
    property_name,
    reports_in,
    supported,
    value_string,
)

pytestmark = pytest.mark.unit

SETTINGS = settings(max_examples=200, deadline=None)


def _ints(bits: int) -> st.SearchStrategy[int]:
    return st.integers(-(1 << (bits - 1)), (1 << (bits - 1)) - 1)


VALUES: dict[str, st.SearchStrategy[Any]] = {
    "tinyint": _ints(8),
    "smallint": _ints(16),
    "int": _ints(32),
    "bigint": _ints(64),
    "boolean": st.booleans(),
    "float": st.floats(width=32),
    "double": st.floats(),
    "decimal(10,2)": st.decimals(
        min_value=Decimal("-99999999.99"),
        max_value=Decimal("99999999.99"),
        places=2,
        allow_nan=False,
        allow_infinity=False,
    ),
    "date": st.dates(),
    "timestamp": st.datetimes(),
    "timestamp_ntz": st.datetimes(),
    "string": st.text(),
    "varchar(20)": st.text(max_size=20),
}
typed_values = st.sampled_from(sorted(VALUES)).flatmap(
    lambda t: st.tuples(st.just(t), st.lists(VALUES[t], max_size=80))
)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, float) and isinstance(b, float) and a == 0:
        return b == 0 and math.copysign(1, a) == math.copysign(1, b)
    return type(a) is type(b) and a == b


@SETTINGS
@given(typed_values)
def test_every_written_value_reads_back_as_itself(typed: tuple[str, list[Any]]) -> None:
    spark_type, values = typed
    for value in values:
        text = value_string(value, spark_type)
        assert text is not None
        assert _same(parse_value(text, spark_type), value)


@SETTINGS
@given(
    typed_values,
    st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1),
    st.integers(min_value=0, max_value=1 << 50),
    st.data(),
)
def test_a_report_round_trips_through_its_property(
    typed: tuple[str, list[Any]], snapshot: int, now: int, data: st.DataObject
) -> None:
    spark_type, values = typed
    rows = data.draw(st.lists(st.integers(1, 10**12), min_size=len(values), max_size=len(values)))
    report = build(
        "c", spark_type, snapshot, now, 86_400_000, 10**13, 5, zip(values, rows, strict=True)
    )
    text = encode(report)
    assert decode(text) == report
    assert reports_in({property_name("c"): text, "other": "x"}) == {"c": report}
    assert text == json.dumps(json.loads(text), separators=(",", ":"), ensure_ascii=False)
    assert len(report.keys) <= MAX_KEYS
    counts = [n for _, n in report.keys]
    assert counts == sorted(counts, reverse=True)
    assert len({v for v, _ in report.keys}) == len(report.keys)
    for text_value, n in report.keys:  # each written key is one of the values, with its rows
        value = parse_value(text_value, spark_type)
        assert any(_same(value, v) and n <= r for v, r in zip(values, rows, strict=True))


def test_the_property_is_compact_json_in_the_documented_order() -> None:
    report = build(
        "cust_id",
        "bigint",
        123,
        1764390000000,
        86400000,
        1000000,
        500,
        [(7, 100000), (None, 999), (42, 300000)],
    )
    assert report.name == "icefloe.skew.hot-keys.cust_id"
    assert encode(report) == (
        '{"v":1,"column":"cust_id","type":"bigint","snapshot_id":123,'
        '"computed_at_ms":1764390000000,"max_age_ms":86400000,"rows":1000000,'
        '"null_rows":500,"keys":[["42",300000],["7",100000]]}'
    )


def test_at_most_64_keys_the_most_rows_first() -> None:
    report = build("k", "int", 1, 0, 1, 10**6, 0, [(i, 1000 + i) for i in range(100)])
    assert len(report.keys) == MAX_KEYS
    assert report.keys[0] == ("99", 1099) and report.keys[-1] == ("36", 1036)


def test_no_key_past_the_rules_size_limits() -> None:
    # the JVM rule ignores a report with a key over 1 KiB or keys over 16 KiB together
    huge = [("x" * (10 << 20), 10**6), ("é" * 512, 900), ("a", 800)]
    report = build("s", "string", 1, 0, 1, 10**7, 0, huge)
    assert [v for v, _ in report.keys] == ["é" * 512, "a"]  # 1,024 bytes is the most
    wide = build(
        "s", "string", 1, 0, 1, 10**7, 0, [(f"{i:03d}" + "y" * 297, 1000 - i) for i in range(64)]
    )
    assert len(wide.keys) == (16 * 1024) // 300  # 54 keys of 300 bytes, the heaviest
    assert sum(len(v.encode()) for v, _ in wide.keys) <= MAX_KEYS_BYTES


@pytest.mark.parametrize(
    ("value", "spark_type", "text"),
    [
        (7, "int", "7"),
        (-(1 << 63), "bigint", "-9223372036854775808"),
        (True, "boolean", "true"),
        (False, "boolean", "false"),
        (Decimal("12.50"), "decimal(10,2)", "12.50"),
        (dt.date(2024, 2, 29), "date", "2024-02-29"),
        (dt.datetime(2024, 1, 2, 3, 4, 5), "timestamp", "2024-01-02 03:04:05"),
        (dt.datetime(2024, 1, 2, 3, 4, 5, 60), "timestamp_ntz", "2024-01-02 03:04:05.000060"),
        (0.1, "double", "0.1"),
        (float("inf"), "double", "inf"),
        ("a b, é", "string", "a b, é"),
        ("", "string", ""),
    ],
)
def test_values_are_what_cast_reads(value: Any, spark_type: str, text: str) -> None:
    assert value_string(value, spark_type) == text


@pytest.mark.parametrize(
    ("value", "spark_type"),
    [
        (b"\x00", "binary"),
        ({"a": 1}, "struct<a:int>"),
        ([1], "array<int>"),
        ({1: 2}, "map<int,int>"),
        (None, "int"),
        (True, "int"),  # not a value of the type
        ("7", "int"),
        (dt.datetime(2024, 1, 1), "date"),
        (dt.datetime(2024, 1, 1, tzinfo=dt.UTC), "timestamp"),
        (Decimal("NaN"), "decimal(10,2)"),
    ],
)
def test_keys_that_cast_cannot_read_are_not_written(value: Any, spark_type: str) -> None:
    assert value_string(value, spark_type) is None
    assert build("c", spark_type, 1, 0, 1, 10, 0, [(value, 5)]).keys == ()


def test_supported_types() -> None:
    assert all(supported(t) for t in VALUES)
    assert not any(supported(t) for t in ("binary", "struct<a:int>", "array<int>", "void"))


@pytest.mark.parametrize(
    "text",
    [
        "",
        "[]",
        '{"v":2}',
        '{"v":1,"column":"c","type":"int","snapshot_id":1,"computed_at_ms":0,"max_age_ms":1,'
        '"rows":1,"null_rows":0,"keys":[[7,1]]}',
        '{"v":1,"column":"c","type":"int","snapshot_id":"1","computed_at_ms":0,"max_age_ms":1,'
        '"rows":1,"null_rows":0,"keys":[]}',
        '{"v":1,"column":"c","type":"int","snapshot_id":1,"computed_at_ms":0,"max_age_ms":true,'
        '"rows":1,"null_rows":0,"keys":[]}',
    ],
)
def test_a_damaged_property_is_not_a_report(text: str) -> None:
    with pytest.raises(ValueError):
        decode(text)
    assert reports_in({property_name("c"): text}) == {}


def test_a_property_naming_another_column_is_not_that_columns_report() -> None:
    text = encode(build("a", "int", 1, 0, 1, 1, 0, []))
    assert reports_in({property_name("b"): text}) == {}


@given(
    st.integers(0, 10**6),
    st.integers(0, 10**6),
    st.integers(0, 10**6),
    st.booleans(),
)
def test_a_report_is_current_at_its_snapshot_or_while_young(
    computed: int, max_age: int, later: int, same_snapshot: bool
) -> None:
    report = HotKeyReport("c", "int", 5, computed, max_age, 1, 0, ())
    now = computed + later
    expected = same_snapshot or later <= max_age
    assert is_current(report, 5 if same_snapshot else 6, now) is expected


def test_the_limits_are_the_rules_own() -> None:
    """The writer's limits are the ones the JVM rule reads reports by (SkewConf.java): a
    report written past the rule's limits would be ignored whole."""
    java = (
        Path(__file__).resolve().parents[3] / "jvm/src/main/java/dev/icefloe/spark/SkewConf.java"
    ).read_text()
    found = re.findall(r"static final int (MAX_KEYS|MAX_KEY_BYTES|MAX_KEYS_BYTES) = ([^;]+);", java)
    limits = {k: math.prod(int(f) for f in v.split("*")) for k, v in found}  # 16 * 1024
    assert limits == {
        "MAX_KEYS": MAX_KEYS,
        "MAX_KEY_BYTES": MAX_KEY_BYTES,
        "MAX_KEYS_BYTES": MAX_KEYS_BYTES,
    }
