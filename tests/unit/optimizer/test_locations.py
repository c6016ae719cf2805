"""Table locations compared (``icefloe.optimizer.locations``): when orphan removal on one table
could delete another's files, and the hold that keeps it from running."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from icefloe.optimizer.actions import table_needs
from icefloe.optimizer.locations import (
    locations_overlap,
    normalize_location,
    shared_location_hold,
    sharing_tables,
)
from icefloe.optimizer.maintenance_rules import MaintenanceRules, MetadataHealth

pytestmark = [pytest.mark.unit]


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("file:///w/db/t", "file:///w/db/t"),
        ("file:///w/db/t/", "file:/w/db/t"),  # trailing slash; file:/x is file:///x
        ("/w/db/t", "file:///w/db/t"),  # a bare path is the local file system
        ("file://localhost/w/db/t", "file:///w//db/./t"),
        ("file:///w/db/x/../t", "file:///w/db/t"),
        ("s3a://bucket/w/t", "s3://bucket/w/t"),  # Hadoop's s3a is S3
        ("S3://Bucket/w/t/", "s3://bucket/w/t"),  # scheme and bucket are case-insensitive
        ("file:///w/db/t", "file:///w/db/t/data"),  # one holds the other
        ("s3://b/w/t/metadata", "s3://b/w/t"),
        ("file:///w", "file:///w/db/t"),
        ("file:///", "file:///w/db/t"),  # the root holds everything
    ],
)
def test_overlapping_locations(a: str, b: str) -> None:
    assert locations_overlap(a, b) and locations_overlap(b, a)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("file:///w/db/t", "file:///w/db/t2"),  # a prefix, but not on a segment boundary
        ("file:///w/db/t2", "file:///w/db/t"),
        ("s3://b/w/t", "s3://b/w/t_clone/data"),
        ("s3://b/w/t", "s3://other/w/t"),  # another bucket
        ("s3://b/w/t", "gs://b/w/t"),  # another store
        ("file:///w/db/t", "s3://w/db/t"),
        ("file:///w/db/T", "file:///w/db/t"),  # paths are case-sensitive
    ],
)
def test_disjoint_locations(a: str, b: str) -> None:
    assert not locations_overlap(a, b) and not locations_overlap(b, a)


def test_normalized_spelling() -> None:
    assert normalize_location("file:/w/db/t/") == "file:///w/db/t"
    assert normalize_location("/w/db/t") == "file:///w/db/t"
    assert normalize_location("s3a://Bucket/w//t/") == "s3://bucket/w/t"


segment = st.text(alphabet="abt2_-.x", min_size=1, max_size=4).filter(
    lambda s: s not in {".", ".."}
)
paths = st.lists(segment, min_size=1, max_size=4)


@given(paths, paths)
def test_overlap_is_a_segment_prefix(a: list[str], b: list[str]) -> None:
    """Against the definition: equal, or one a prefix of the other segment by segment."""
    n = min(len(a), len(b))
    expected = a[:n] == b[:n]
    left, right = "s3://bucket/" + "/".join(a), "s3a://bucket/" + "/".join(b) + "/"
    assert locations_overlap(left, right) is expected
    assert locations_overlap(right, left) is expected


def test_sharing_tables_looks_at_every_root() -> None:
    others = {
        "acc.clone": ("file:///w/acc/q",),  # register_table of acc.q's metadata
        "acc.q2": ("file:///w/acc/q2",),
        "acc.redirected": ("file:///w/acc/z", "file:///w/acc/q/data/z"),  # write.data.path
        "acc.parent": ("file:///w/acc",),
    }
    assert sharing_tables("file:/w/acc/q/", others) == {
        "acc.clone": "file:///w/acc/q",
        "acc.parent": "file:///w/acc",
        "acc.redirected": "file:///w/acc/q/data/z",
    }


def test_the_hold_names_every_sharing_and_unknown_table_unless_allowed() -> None:
    others = {"acc.q": ("file:///w/acc/q",), "acc.t2": ("file:///w/acc/q2",)}
    assert shared_location_hold("file:///w/acc/q", {"acc.t2": others["acc.t2"]}, {}) is None
    hold = shared_location_hold("file:///w/acc/q", others, {})
    assert hold is not None and "\n" not in hold
    assert "file:///w/acc/q overlaps the location of acc.q" in hold and "acc.t2" not in hold
    assert "--allow-shared-location" in hold
    assert shared_location_hold("file:///w/acc/q", others, {}, allowed={"acc.q"}) is None

    broken = {"acc.broken": "NoSuchTableError: metadata gone"}
    hold = shared_location_hold("file:///w/acc/q", {}, broken)  # unknown: held
    assert hold is not None and "could not read acc.broken (NoSuchTableError" in hold
    assert shared_location_hold("file:///w/acc/q", {}, broken, allowed={"acc.broken"}) is None
    hold = shared_location_hold("file:///w/acc/q", others, broken, allowed={"acc.broken"})
    assert hold is not None and "acc.q" in hold and "acc.broken" not in hold


def test_a_held_action_is_never_due() -> None:
    hour = 3_600_000
    rules = MaintenanceRules(8 << 20, 8, 120 * hour, 5, hour, 24 * hour, 0.1)
    h = MetadataHealth.of(1, [1000], 8 << 20, [0], 4096, 5)
    runs = {"remove_orphan_files": 0}
    now = 1000 * hour
    (need,) = table_needs(h, rules, ["remove_orphan_files"], now, runs)
    assert need.action == "remove_orphan_files"
    held = {"remove_orphan_files": "its location overlaps acc.q"}
    assert table_needs(h, rules, ["remove_orphan_files"], now, runs, held) == []
