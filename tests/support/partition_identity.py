"""The partition-identity probe (issue #28, item 1): a string identity partition ``k`` whose
values NULL, ``'null'``, ``'/'`` and ``'%2F'`` collided under the old ``col=value`` codec,
and a table of five small files in each of the four partitions (``colliding_table``), for
``tests/integration/test_partition_identity.py`` and the fault suite."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "k", StringType(), required=False),
)
SPEC = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "k"))
VALUES = [None, "null", "/", "%2F"]


def colliding_table(catalog: Any, name: str) -> Any:
    """Five appends of 400 rows, ``k`` cycling over :data:`VALUES`: five small files and
    500 rows in each of four partitions."""
    table = catalog.create_table(name, schema=SCHEMA, partition_spec=SPEC)
    for i in range(5):
        ids = range(i * 400, i * 400 + 400)
        table.append(
            pa.table(
                {
                    "id": pa.array(ids, pa.int64()),
                    "k": pa.array([VALUES[n % 4] for n in ids], pa.string()),
                }
            )
        )
    return catalog.load_table(name)
