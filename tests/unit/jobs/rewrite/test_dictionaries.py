"""The Arrow engine's per-column dictionary choice (``icefloe.jobs.rewrite.dictionaries``), against
the brute force: write the column both ways and keep the smaller file."""

from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from icefloe.jobs.rewrite.dictionaries import dictionary_columns, leaf_paths


def written_bytes(table: pa.Table, dictionary: bool) -> int:
    buffer = io.BytesIO()
    pq.write_table(table, buffer, compression="none", use_dictionary=dictionary)
    return len(buffer.getvalue())


@settings(max_examples=40, deadline=None)
@given(
    rows=st.integers(200, 5000),
    distinct=st.floats(0.001, 1.0),
    kind=st.sampled_from(["int64", "int32", "double", "string"]),
    seed=st.integers(0, 2**16),
)
def test_the_choice_is_the_smaller_encoding(
    rows: int, distinct: float, kind: str, seed: int
) -> None:
    import random

    rng = random.Random(seed)
    values = [rng.randrange(max(1, int(rows * distinct))) for _ in range(rows)]
    column = {
        "int64": pa.array(values, pa.int64()),
        "int32": pa.array(values, pa.int32()),
        "double": pa.array([v / 7 for v in values], pa.float64()),
        "string": pa.array([f"value-{v:08d}" for v in values], pa.string()),
    }[kind]
    table = pa.table({"c": column})
    chosen = dictionary_columns(table) == ["c"]
    with_dict, plain = written_bytes(table, True), written_bytes(table, False)
    if abs(with_dict - plain) > 0.05 * min(with_dict, plain):  # a clear winner
        assert chosen == (with_dict < plain), (with_dict, plain)


def test_unique_columns_go_plain_repeated_ones_keep_a_dictionary() -> None:
    n = 30_000
    table = pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "hash": pa.array([f"{i * 2654435761 % 2**32:08x}" for i in range(n)]),
            "region": pa.array(["eu", "us", "apac"] * (n // 3)),
            "flag": pa.array([True, False] * (n // 2)),
            "empty": pa.array([None] * n, pa.string()),
        }
    )
    assert dictionary_columns(table) == ["region", "empty"]


def test_nested_columns_keep_pyarrows_default_on_every_leaf() -> None:
    schema = pa.schema(
        [
            ("s", pa.struct([("x", pa.int32()), ("y", pa.string())])),
            ("l", pa.list_(pa.int64())),
            ("m", pa.map_(pa.string(), pa.int32())),
            ("a.b", pa.int64()),  # a flat column whose name holds a dot
        ]
    )
    assert leaf_paths(schema) == {
        "s": ("s.x", "s.y"),
        "l": ("l.list.element",),
        "m": ("m.key_value.key", "m.key_value.value"),
        "a.b": ("a.b",),
    }
    table = pa.table(
        {
            "s": [{"x": 1, "y": "a"}] * 10,
            "l": [[1]] * 10,
            "m": [[("k", 1)]] * 10,
            "a.b": list(range(10)),
        },
        schema=schema,
    )
    assert dictionary_columns(table) == [
        "s.x",
        "s.y",
        "l.list.element",
        "m.key_value.key",
        "m.key_value.value",
    ]
