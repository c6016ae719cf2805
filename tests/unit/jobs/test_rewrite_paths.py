"""Which data file locations the actors may look at on the local file system directly."""

from __future__ import annotations

import pytest

from jobs.rewrite.locations import local_path

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("location", "expected"),
    [
        ("file:///lake/db/t/data/day=1/a.parquet", "/lake/db/t/data/day=1/a.parquet"),
        ("file:/lake/db/t/data/a.parquet", "/lake/db/t/data/a.parquet"),
        ("/lake/db/t/data/a.parquet", "/lake/db/t/data/a.parquet"),
        # partition values are escaped in locations and on disk alike
        ("file:///t/data/r=eu%2Fwest/a.parquet", "/t/data/r=eu%2Fwest/a.parquet"),
        ("s3://bucket/db/t/data/a.parquet", None),
        ("hdfs://nn:8020/db/t/data/a.parquet", None),
        ("gs://bucket/a.parquet", None),
        ("relative/a.parquet", None),
    ],
)
def test_local_path(location: str, expected: str | None) -> None:
    assert local_path(location) == expected
