"""The layout store contract suite: every :class:`icefloe.state.layout.LayoutStore` runs
these.

``LayoutContract`` is not collected by itself; ``tests/unit/state/test_layout.py`` runs it
in memory, ``tests/redis/test_layout_redis.py`` on Redis and a Redis Cluster.
"""

from __future__ import annotations

import math
from decimal import Decimal

import pytest

from icefloe.optimizer.layout import Depth, FileBounds
from icefloe.state.layout import LayoutDelta, LayoutMismatch, LayoutStore

T = "db.t"
SIG = "sort:id"
P1, P2 = "p1", "p={x}:y/2"  # a brace in a partition value never moves a key


def fb(path: str, lo: object, hi: object, size: int = 100) -> FileBounds[str]:
    return FileBounds(path, size, None if lo is None else (lo,), None if hi is None else (hi,))


class LayoutContract:
    __test__ = False

    def make_store(self) -> LayoutStore:
        raise NotImplementedError

    @pytest.fixture
    def store(self) -> LayoutStore:
        return self.make_store()

    def test_nothing_stored(self, store: LayoutStore) -> None:
        assert store.signature(T) is None
        assert store.files(T) == {} and store.files(T, [P1]) == {} and store.partitions(T) == []

    def test_update_needs_a_layout_of_its_signature(self, store: LayoutStore) -> None:
        delta = {P1: LayoutDelta(added={"a": fb("a", 1, 2)})}
        with pytest.raises(LayoutMismatch):
            store.update(T, SIG, delta)
        store.replace(T, SIG, {})
        with pytest.raises(LayoutMismatch):
            store.update(T, "zorder:a,b", delta)
        assert store.files(T) == {} and store.signature(T) == SIG

    def test_replace_then_updates_with_set_semantics(self, store: LayoutStore) -> None:
        store.replace(T, SIG, {P1: [fb("b", 5, 9), fb("a", 1, 4)], P2: [fb("c", "x", "z")]})
        assert store.partitions(T) == sorted([P1, P2])
        assert store.files(T, [P1]) == {P1: [fb("a", 1, 4), fb("b", 5, 9)]}
        delta = {
            P1: LayoutDelta(added={"d": fb("d", 2, 3, 7)}, deleted=["a"]),
            P2: LayoutDelta(deleted=["c", "never-there"]),
            "p3": LayoutDelta(added={"e": fb("e", None, 8)}),
        }
        for _ in range(2):  # re-applying changes nothing
            store.update(T, SIG, delta)
            assert store.files(T) == {
                P1: [fb("b", 5, 9), fb("d", 2, 3, 7)],
                "p3": [fb("e", None, 8)],
            }
            assert store.partitions(T) == [P1, "p3"]  # P2 has no files left
        assert store.files(T, [P2, "p3", "nope"]) == {"p3": [fb("e", None, 8)]}

    def test_replace_drops_what_was_there(self, store: LayoutStore) -> None:
        store.replace(T, SIG, {P1: [fb("a", 1, 2)], P2: [fb("b", 1, 2)]})
        store.replace(T, "zorder:a,b", {P2: [fb("c", 3, 4)], "empty": []})
        assert store.signature(T) == "zorder:a,b"
        assert store.files(T) == {P2: [fb("c", 3, 4)]} and store.partitions(T) == [P2]

    def test_tables_are_apart_and_forget(self, store: LayoutStore) -> None:
        store.replace(T, SIG, {P1: [fb("a", 1, 2)]})
        store.replace("db.u", SIG, {P1: [fb("b", 1, 2)]})
        store.forget(T)
        assert store.signature(T) is None and store.files(T) == {}
        assert store.files("db.u") == {P1: [fb("b", 1, 2)]}

    def test_bound_values_of_every_type_come_back_exactly(self, store: LayoutStore) -> None:
        lower = (-0.0, Decimal("1.50"), b"\x00\xff", True, None)
        upper = (math.inf, "zé{}", 2**100, -(2**70), 1.5)
        f = FileBounds("s3://b/ü p.parquet", 2**40, lower, upper)
        store.replace(T, SIG, {P1: [f, FileBounds("n", 0, None, None)]})
        got = store.files(T)[P1]
        assert got == [FileBounds("n", 0, None, None), f]
        assert math.copysign(1.0, got[1].lower[0]) == -1.0  # type: ignore[index,arg-type]
        assert type(got[1].lower[3]) is bool  # type: ignore[index]

    def test_an_update_that_only_adds(self, store: LayoutStore) -> None:
        store.replace(T, SIG, {})
        store.update(T, SIG, {P1: LayoutDelta(added={"a": fb("a", 1, 2)})})
        store.update(T, SIG, {P1: LayoutDelta(), P2: LayoutDelta()})  # nothing to do
        assert store.files(T) == {P1: [fb("a", 1, 2)]} and store.partitions(T) == [P1]

    def test_settled_marks_last_with_their_depth(self, store: LayoutStore) -> None:
        d1, d2 = Depth(2, 1.5, 2), Depth(1, 1.0, 1)
        store.replace(T, SIG, {P1: [fb("a", 1, 2), fb("b", 2, 3)], P2: [fb("c", 1, 2)]})
        gen = store.generation(T)
        store.save_depths(T, SIG, {P1: d1, P2: d2}, gen, settled={P1})
        assert store.saved_settled(T) == {P1} and store.saved_depths(T) == {P1: d1, P2: d2}
        store.save_depths(T, SIG, {P1: d1}, gen)  # measured again, not settled: unmarked
        assert store.saved_settled(T) == set()
        store.save_depths(T, SIG, {P1: d1}, gen, settled={P1})
        store.update(T, SIG, {P1: LayoutDelta(deleted=["b"])})  # its files changed
        assert store.saved_settled(T) == set() and P1 not in store.saved_depths(T)

    def test_kept_depths_last_until_their_partition_changes(self, store: LayoutStore) -> None:
        d1, d2 = Depth(2, 1.5, 2), Depth(1, 1.0, 1)
        store.save_depths(T, SIG, {P1: d1}, store.generation(T))  # no layout: nothing kept
        assert store.saved_depths(T) == {}
        store.replace(T, SIG, {P1: [fb("a", 1, 2), fb("b", 2, 3)], P2: [fb("c", 1, 2)]})
        gen = store.generation(T)
        store.save_depths(T, "zorder:a,b", {P1: d1}, gen)  # of another layout: not kept
        assert store.saved_depths(T) == {}
        store.save_depths(T, SIG, {P1: d1, P2: d2}, gen)
        assert store.saved_depths(T) == {P1: d1, P2: d2}
        store.update(T, SIG, {P2: LayoutDelta(), P1: LayoutDelta(deleted=["b"])})
        assert store.saved_depths(T) == {P2: d2}  # P1's files changed: measured again
        store.replace(T, SIG, {P2: [fb("c", 1, 2)]})
        assert store.saved_depths(T) == {}  # a rebuild: every depth measured again
        measured_at = store.generation(T)  # a depth measured, then the files change ...
        store.update(T, SIG, {P2: LayoutDelta(added={"e": fb("e", 0, 9)})})
        store.save_depths(T, SIG, {P2: d2}, measured_at)  # ... is not kept: it is not theirs
        assert store.saved_depths(T) == {} and store.generation(T) > measured_at
        store.save_depths(T, SIG, {P2: d2}, store.generation(T))
        store.forget(T)
        assert store.saved_depths(T) == {}
