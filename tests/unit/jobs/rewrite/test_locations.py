"""Which data file locations the actors may look at on the local file system directly, and
the folders a discarded attempt leaves there."""

from __future__ import annotations

import pytest

from icefloe.jobs.rewrite.cleanup import prune
from icefloe.jobs.rewrite.locations import local_path

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


def test_prune_removes_an_attempts_empty_folders_and_keeps_any_with_a_file(tmp_path):
    prefix = tmp_path / "data" / "icefloe-r1"
    (prefix / "day=d1" / "region=eu").mkdir(parents=True)
    (prefix / "day=d2").mkdir(parents=True)
    (prefix / "day=d2" / "00000-1.parquet").write_bytes(b"x")  # committed: stays
    other = tmp_path / "data" / "day=d1"
    other.mkdir()  # not under the prefix: never looked at
    prune(f"file:{prefix}/")
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == [
        "data",
        "data/day=d1",
        "data/icefloe-r1",
        "data/icefloe-r1/day=d2",
        "data/icefloe-r1/day=d2/00000-1.parquet",
    ]
    (prefix / "day=d2" / "00000-1.parquet").unlink()
    prune(f"file:{prefix}/")
    prune(f"file:{prefix}/")  # gone already: nothing to do
    prune(None)
    prune("s3://bucket/data/icefloe-r1/")  # object storage: no folders
    assert not prefix.exists() and other.exists()
