"""One partition-key codec: tablestats builds and reads the keys, skew detection uses it."""

from __future__ import annotations

import datetime as dt
from types import SimpleNamespace
from typing import Any

import pytest

from service.tablestats import parse_partition_key, partition_key

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("value", ["a/b", "x=y", "a/b=c/=d", "plain", "2026-11-01"])
def test_values_with_slash_or_equals_round_trip(value: str) -> None:
    part = {"day": "1", "path": value}
    key = partition_key(part)
    assert key.count("/") == 1  # a slash inside a value is escaped
    assert parse_partition_key(key) == part


def test_typed_values_and_null() -> None:
    part = {"day": dt.date(2026, 11, 1), "n": 3, "r": None}
    assert partition_key(part) == "day=2026-11-01/n=3/r=null"
    assert parse_partition_key(partition_key(part)) == {"day": "2026-11-01", "n": "3", "r": "null"}
    assert partition_key(None) == partition_key({}) == "" and parse_partition_key("") == {}


def test_storage_skew_names_partitions_with_the_same_codec() -> None:
    from jobs.skew.detect import storage_skew

    rows: list[dict[str, Any]] = [
        {
            "partition": {"path": f"a/{i}=x"},
            "total_data_file_size_in_bytes": 10,
            "record_count": 1,
            "file_count": 1,
        }
        for i in range(3)
    ]
    table = SimpleNamespace(
        current_snapshot=lambda: object(),
        inspect=SimpleNamespace(partitions=lambda: SimpleNamespace(to_pylist=lambda: rows)),
    )
    parts, _, _ = storage_skew(table)
    assert [p["partition"] for p in parts] == [partition_key(r["partition"]) for r in rows]
    assert parse_partition_key(parts[0]["partition"]) == {"path": "a/0=x"}
