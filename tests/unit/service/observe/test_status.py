"""``status`` reads every number through the adapters, so it runs on the in-memory ones
(``tests/redis/test_decider_redis.py`` runs it on Redis)."""

from __future__ import annotations

from pathlib import Path

import pytest

from icefloe.optimizer import FileBounds, stats_from_sizes
from icefloe.optimizer.layout import Depth
from icefloe.optimizer.maintenance_rules import MetadataHealth
from icefloe.service.decider.scores import Scores
from icefloe.service.observe.status import collect, recent_line
from icefloe.state.events.memory import MemoryEvents
from icefloe.state.health.memory import MemoryHealth
from icefloe.state.layout import LayoutDelta
from icefloe.state.layout.memory import MemoryLayouts
from icefloe.state.leader.memory import LeaderBoard, MemoryLeader
from icefloe.state.ledger.memory import MemoryLedger
from icefloe.state.open import State
from icefloe.state.queue import ActionItem
from icefloe.state.queue.memory import MemoryQueue
from icefloe.state.rolling.memory import MemoryStats
from icefloe.state.shards.memory import MemoryShards, ShardBoard
from tests.support.config import make_config

pytestmark = [pytest.mark.unit]

T0 = 1_790_000_000.0


def test_status_from_the_in_memory_adapters(tmp_path: Path) -> None:
    cfg = make_config(tmp_path, defaults={"target_file_size_bytes": 1000})
    ledger = MemoryLedger()
    stats, health = MemoryStats(ledger), MemoryHealth()
    parts = {
        "day=1": stats_from_sizes([10] * 10, 1000),  # ten small files: merge them
        "day=2": stats_from_sizes([10, 10], 1000),  # two: wait for min_input_files (5)
        "day=3": stats_from_sizes([10], 1000),  # one: over tolerance, nothing to merge
        "day=4": stats_from_sizes([1000, 990], 1000),  # within tolerance
    }
    stats.replace("db.t", 7, 1000, parts, T0)
    meta = MetadataHealth.of(7, [100, 50], 1000, [1, 2], 4096, 1, deletes=(100, 1, 20))
    health.save("db.t", meta)
    health.mark_hold("db.t", "remove_orphan_files", "shared location")
    queue = MemoryQueue(max_attempts=1)
    queue.enqueue(ActionItem.new("db.t", "day=1", "merge", 1, 10, 1.0, T0), T0)
    queue.dispatch("db.t")
    lease = queue.dequeue(T0, 60)
    assert lease is not None
    ledger.record_action({"id": "x", "ok": True, "bytes_rewritten": 5})
    ledger.heartbeat("a1", T0 - 3)
    ledger.count({"partitions_changed": 4, "partition_scans": 1})
    leader = MemoryLeader(LeaderBoard(), 30, "d1")
    assert leader.acquire()
    board = ShardBoard()
    MemoryShards(board, 4, 30, "d1").claim()
    shards = MemoryShards(board, 4, 30, "d2")
    src = State(queue, stats, MemoryEvents(), leader, shards, health, ledger, MemoryLayouts())

    data = collect(cfg, src, T0 + 10, detail=True)

    assert data["leader"] == "d1" and data["deciders"] == {"d1": 4}
    table = data["tables"]["db.t"]
    assert table["last_snapshot"] == 7 and table["partitions"] == 4
    over = [(p["key"], p["merge"]) for p in table["over_tolerance"]]
    assert over == [("day=1", "merge"), ("day=2", "wait"), ("day=3", None)]
    assert table["manifests"] == 2 and table["held"] == {"remove_orphan_files": "shared location"}
    assert data["inflight"][0]["id"] == lease.item.id and data["inflight"][0]["lease_age_s"] == 10
    assert data["recent"] == [{"id": "x", "ok": True, "bytes_rewritten": 5}]
    assert data["actors"] == {"a1": 13.0}
    assert data["counters"]["full_scans"] == 1 and data["scans_avoided_pct"] == 75.0
    # the documented score, as the decider computes it from the same stats and health
    scores = Scores(stats)
    policy = cfg.policy_for("db.t", {"write.target-file-size-bytes": "1000"})
    assert table["health"] == scores.update("db.t", policy, meta, T0 + 10).to_dict()
    assert table["health"]["score"] < 100 and table["health"]["penalties"]["deletes"] > 0


def layout_sources(stats: MemoryStats, layouts: MemoryLayouts) -> State:
    """In-memory adapters with ``stats`` and ``layouts``; the rest empty."""
    return State(
        MemoryQueue(),
        stats,
        MemoryEvents(),
        MemoryLeader(LeaderBoard(), 30, "d1"),
        MemoryShards(ShardBoard(), 4, 30, "d1"),
        MemoryHealth(),
        MemoryLedger(),
        layouts,
    )


def test_status_shows_the_clustering_the_decider_keeps(tmp_path: Path) -> None:
    cfg = make_config(tmp_path, defaults={"clustering_tolerance": 1.5})
    stats = MemoryStats()
    stats.replace("db.t", 7, 1000, {"day=1": stats_from_sizes([10, 20], 1000)}, T0)
    layouts = MemoryLayouts()
    sorted_files = [FileBounds("a", 1, (0,), (9,)), FileBounds("b", 1, (10,), (19,))]
    overlapping = [FileBounds("c", 1, (0,), (9,)), FileBounds("d", 1, (5,), (15,))]
    layouts.replace("db.t", "sort:ts", {"day=1": sorted_files, "day=2": overlapping})
    src = layout_sources(stats, layouts)
    c = collect(cfg, src, T0, detail=True)["tables"]["db.t"]["clustering"]
    assert c["layout"] == "sort:ts" and c["tolerance"] == 1.5
    assert c["mean_depth"] == 1.5 and c["max_depth"] == 2  # (1 + 1 + 2 + 2) / 4 files
    assert [(p["key"], p["depth"]) for p in c["over_tolerance"]] == [("day=2", 2.0)]
    # the depth the decider measured and kept is shown as kept, not measured again
    layouts.save_depths("db.t", "sort:ts", {"day=2": Depth(2, 1.25, 2)}, layouts.generation("db.t"))
    c = collect(cfg, src, T0, detail=True)["tables"]["db.t"]["clustering"]
    assert c["mean_depth"] == 1.125 and c["over_tolerance"] == []
    layouts.update("db.t", "sort:ts", {"day=2": LayoutDelta(deleted=["d"])})  # changed
    c = collect(cfg, src, T0, detail=True)["tables"]["db.t"]["clustering"]
    assert c["mean_depth"] == 1.0 and c["max_depth"] == 1  # measured from its files again
    layouts.forget("db.t")
    assert collect(cfg, src, T0, detail=True)["tables"]["db.t"]["clustering"] is None


def test_to_merge_of_a_sorted_table_counts_runs_of_neighbours(tmp_path: Path) -> None:
    # the decider merges a table with a layout only where neighbours in key order merge:
    # five small files between near-target ones hold no run, five side by side do
    cfg = make_config(tmp_path, defaults={"target_file_size_bytes": 1000})
    apart, together = [10, 995] * 4 + [10], [10] * 5 + [995] * 4
    stats = MemoryStats()
    sums = {"day=1": stats_from_sizes(apart, 1000), "day=2": stats_from_sizes(together, 1000)}
    stats.replace("db.t", 7, 1000, sums, T0)

    def in_key_order(sizes: list[int]) -> list[FileBounds[str]]:
        return [FileBounds(f"f{i:02d}", s, (10 * i,), (10 * i + 9,)) for i, s in enumerate(sizes)]

    src = layout_sources(stats, MemoryLayouts())
    table = collect(cfg, src, T0, detail=True)["tables"][
        "db.t"
    ]  # no layout kept: the sums' verdict
    assert [p["merge"] for p in table["over_tolerance"]] == ["merge", "merge"]
    assert src.layouts is not None
    layouts = {"day=1": in_key_order(apart), "day=2": in_key_order(together)}
    src.layouts.replace("db.t", "sort:ts", layouts)
    table = collect(cfg, src, T0, detail=True)["tables"]["db.t"]
    assert [(p["key"], p["merge"]) for p in table["over_tolerance"]] == [
        ("day=1", None),
        ("day=2", "merge"),
    ]


def test_a_recent_action_reads_as_one_line() -> None:
    mib = 1 << 20
    merged = {
        "ok": True,
        "action": "merge",
        "table": "db.t",
        "partitions": ["day=1", "day=2"],
        "files_rewritten": 12,
        "files_added": 2,
        "bytes_rewritten": 3 * mib,
        "mse_before": (2 * mib) ** 2,
        "mse_after": float(mib) ** 2,
        "seconds": 1.5,
        "batch": {
            "items": 2,
            "partitions_rewritten": 2,
            "commits": 1,
            "seconds_per_partition": 0.75,
        },
    }
    assert recent_line(merged) == (
        "done merge db.t day=1, day=2: 12 files -> 2, 3.00 MiB rewritten, RMSE 2.00 -> 1.00 MiB, "
        "in 1.5 s (batch of 2: 2 partitions in 1 commit(s), 0.75 s/partition)"
    )
    failed = {"ok": False, "action": "expire_snapshots", "table": "db.t", "error": "boom"}
    assert recent_line(failed) == "FAILED expire_snapshots db.t whole table: boom"
