"""The decider's layout decision on an in-memory layout store: one sort (or z-order) item
per partition clustered deeper than the tolerance, none for one in order."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyiceberg.types import LongType

from icefloe.base.layoutspec import LayoutSpec
from icefloe.optimizer.layout import FileBounds
from icefloe.optimizer.verdict import Rules
from icefloe.service.decider.layout import enqueue_layout, layout_items, new_layout
from icefloe.state.layout import depths, signature
from icefloe.state.layout.memory import MemoryLayouts
from icefloe.state.queue.memory import MemoryQueue
from tests.support.config import make_config

pytestmark = [pytest.mark.unit]

T0 = 1_790_000_000.0
TARGET = 1000
SORT = LayoutSpec("sort", ("id",), (1,), (LongType(),), 1.5)


def rules(spec: LayoutSpec) -> Rules:
    """The verdict's rules of a table keeping ``spec`` (its action among the policy's)."""
    actions = frozenset({"merge", spec.action})
    return Rules(True, actions, TARGET, TARGET // 3, 5, clustering_tolerance=spec.tolerance)


def span(path: str, lo: int, hi: int, size: int = 400) -> FileBounds[str]:
    return FileBounds(path, size, (lo,), (hi,))


IN_ORDER = [span("a1", 0, 99), span("a2", 100, 199), span("a3", 200, 299)]
OUT_OF_ORDER = [span("b1", 0, 99), span("b2", 100, 199), span("b3", 200, 299), span("b4", 5, 290)]


def store() -> MemoryLayouts:
    s = MemoryLayouts()
    s.replace("db.t", signature(SORT), {"p=a": IN_ORDER, "p=b": OUT_OF_ORDER, "p=c": []})
    return s


def test_only_the_partition_clustered_too_deep_gets_an_item(tmp_path: Path) -> None:
    policy = make_config(tmp_path).policy_for("db.t")
    files = store().files("db.t")
    assert depths(files)["p=a"].mean == 1.0 and depths(files)["p=b"].mean == 2.0
    (item,) = layout_items("db.t", rules(SORT), policy.priority, SORT, files, T0)
    assert item.id == "sort:db.t:p=b" and item.action == "sort" and item.partition == "p=b"
    assert item.cost_bytes == 1600  # every file overlaps the out-of-order one
    assert item.benefit == pytest.approx((2.0 - 1.0) * 4)
    assert item.reason == "depth 2 > 1.5 (max 2) over 4 files"
    # within tolerance: nothing
    loose = LayoutSpec("sort", ("id",), (1,), (LongType(),), 2.0)
    assert layout_items("db.t", rules(loose), policy.priority, loose, files, T0) == []


def test_enqueued_once_on_the_action_s_lane(tmp_path: Path) -> None:
    queue, layouts = MemoryQueue(), store()
    zorder = LayoutSpec("zorder", ("a", "b"), (1, 2), (LongType(), LongType()), 1.5)
    assert enqueue_layout(queue, layouts, "db.t", rules(SORT), 1, SORT, ["p=a"], T0) == []
    assert layouts.saved_depths("db.t") == {"p=a": depths(layouts.files("db.t"))["p=a"]}
    assert enqueue_layout(queue, layouts, "db.t", rules(SORT), 1, SORT, [], T0) == []
    assert enqueue_layout(queue, layouts, "db.t", rules(SORT), 1, SORT, None, T0) == [1]
    assert layouts.saved_depths("db.t") == depths(layouts.files("db.t"))  # kept for status
    assert enqueue_layout(queue, layouts, "db.t", rules(SORT), 1, SORT, ["p=b"], T0) == [0]
    boxes = MemoryLayouts()  # four files over the same square: twice an ideal z-order
    square = [FileBounds(f"z{i}", 400, (0, 0), (99, 99)) for i in range(4)]
    boxes.replace("db.t", signature(zorder), {"p=b": square})
    assert depths(boxes.files("db.t"), zorder=2)["p=b"].mean == 2.0
    assert enqueue_layout(queue, boxes, "db.t", rules(zorder), 1, zorder, ["p=b"], T0) == [1]
    assert boxes.saved_depths("db.t") == depths(boxes.files("db.t"), zorder=2)
    assert queue.get("zorder:db.t:p=b") is not None and queue.get("sort:db.t:p=b") is not None


def test_a_layout_without_kept_depths_is_measured_once_when_first_seen(tmp_path: Path) -> None:
    """A layout an older icefloe built keeps no depths: the first pass of a decider that
    sees it measures and keeps them (no item enqueued for it), so status need not."""
    policy = make_config(tmp_path).policy_for("db.t")
    queue, layouts, seen = MemoryQueue(), store(), {"db.u": "sort:id"}
    assert layouts.saved_depths("db.t") == {}
    fresh = (queue, layouts, "db.t", None, rules(SORT), policy.priority, SORT, T0, seen)
    assert new_layout(*fresh) == [] and queue.depth()["pending"] == 0
    assert layouts.saved_depths("db.t") == depths(layouts.files("db.t"))
    assert seen["db.t"] == signature(SORT)
