"""The synthetic warehouse of the scale bench (``bench/synthetic.py``) reads like a PyIceberg
table to the rolling stats: a full scan and the rolling updates of its commits agree exactly,
across the chains ``catch_up`` applies in one transaction each."""

from __future__ import annotations

import importlib.util
import random
import sys
from dataclasses import replace
from pathlib import Path
from types import ModuleType

import pytest

from icefloe.base.config import DeciderSettings
from icefloe.base.partition_key import display_key
from icefloe.optimizer import stats_from_sizes
from icefloe.service.decider.loop import Decider
from icefloe.state.open import memory_state
from icefloe.state.rolling import scan as rolling_scan
from icefloe.state.rolling.memory import MemoryStats
from icefloe.state.rolling.scan import catch_up, full_stats, snapshot_delta
from tests.support.config import REPO, make_config

pytestmark = [pytest.mark.unit]

ROOT = REPO


def _load() -> ModuleType:
    """``bench/`` is no package: load the module from its file."""
    spec = importlib.util.spec_from_file_location("bench_synthetic", ROOT / "bench/synthetic.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


synthetic = _load()


def test_base_files_are_seeded_and_need_no_work() -> None:
    w = synthetic.SyntheticWarehouse(2, 30, seed=3)
    table = w.table("bench.t000001")
    assert table.base_files() == table.base_files()
    stats = full_stats(table, w.target)
    assert sorted(stats) == sorted(synthetic.partition_key(p) for p in range(30))
    assert stats[synthetic.partition_key(0)].n >= 1
    assert all(s.undersized <= 1 for s in stats.values())
    assert display_key(synthetic.partition_key(0)) == "day=2024-10-04"


def test_rolling_updates_equal_a_full_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rolling_scan, "CHAIN_CHUNK", 3)  # chains span several transactions
    w = synthetic.SyntheticWarehouse(3, 12, seed=1)
    store, rng = MemoryStats(), random.Random(2)
    for name in w.names:
        assert catch_up(store, name, w.table(name), w.target).full_scan  # first sight
    commits = {}
    for name in w.names:
        table = w.table(name)
        snaps = [table.append_small(rng.sample(range(12), 3), rng, files=2) for _ in range(8)]
        snaps += [table.compact(p) for p in range(12)]  # None: fewer than 2 small files
        base = table.live_files(5)[0]  # a base file deleted, a big one added
        snaps.append(table.commit([(5, 2 * w.target)], [base]))
        commits[name] = len([s for s in snaps if s is not None])
        assert commits[name] > 10
    for name in w.names:
        table = w.table(name)
        result = catch_up(store, name, table, w.target)
        assert not result.full_scan and result.snapshots_applied == commits[name]
        assert store.partitions(name) == full_stats(table, w.target)
        assert store.last_applied(name) == table.current_snapshot().snapshot_id
        assert catch_up(store, name, table, w.target).snapshots_applied == 0


def test_a_commit_lists_its_files_in_its_own_manifest() -> None:
    w = synthetic.SyntheticWarehouse(1, 4)
    table = w.table("bench.t000000")
    parent = table.current_snapshot().snapshot_id
    snap = table.commit([(2, 10), (2, 20), (3, 30)])
    assert table.current_snapshot().parent_snapshot_id == parent
    delta = snapshot_delta(table, snap)
    assert {k: (d.added, d.deleted) for k, d in delta.items()} == {
        synthetic.partition_key(2): ([10, 20], []),
        synthetic.partition_key(3): ([30], []),
    }
    small = [f for f in table.live_files(2) if f.file_size_in_bytes < 30]
    gone = table.commit([], small)
    assert snapshot_delta(table, gone)[synthetic.partition_key(2)].deleted == [10, 20]
    sizes = [f.file_size_in_bytes for f in table.live_files(3)]
    assert 30 in sizes and all(f.file_size_in_bytes != 10 for f in table.live_files(2))
    rows = sum(f.record_count for f in table.live_files(3))
    assert full_stats(table, w.target)[synthetic.partition_key(3)] == stats_from_sizes(
        sizes, w.target, 0, (rows, 0, 0)
    )


def test_only_live_files_can_be_deleted_and_only_current_files_listed() -> None:
    w = synthetic.SyntheticWarehouse(1, 2)
    table = w.table("bench.t000000")
    base = table.live_files(0)[0]
    table.commit([], [base])
    with pytest.raises(ValueError, match="not a live file"):
        table.commit([], [base])
    with pytest.raises(ValueError, match="only the current snapshot"):
        table.inspect.files(snapshot_id=table.current_snapshot().parent_snapshot_id)
    catalog = w.catalog()
    assert catalog.load_table(("bench", "t000000")) is table
    assert catalog.list_tables("bench") == [("bench", "t000000")]


def test_stats_of_an_older_key_format_are_rebuilt_by_a_full_scan() -> None:
    """Stats a decider before typed partition keys wrote (``day=…`` keys, no ``keys``
    stamp) are not updated in place at the table's next commit: a full scan replaces them,
    so an old key never meets a new one."""
    w = synthetic.SyntheticWarehouse(1, 4, seed=3)
    name = w.names[0]
    table = w.table(name)
    store = MemoryStats()
    assert catch_up(store, name, table, w.target).full_scan
    old = {display_key(k): s for k, s in store.partitions(name).items()}  # 'day=…' keys
    store._stats[name] = old
    del store._state[name]["keys"]
    table.append_small([1], random.Random(4), files=2)
    result = catch_up(store, name, table, w.target)
    assert result.full_scan and "format 1" in result.reason
    assert store.partitions(name) == full_stats(table, w.target)
    assert not result.full_scan or all(k.startswith("[0,") for k in store.partitions(name))
    assert not catch_up(store, name, table, w.target).full_scan


def test_stats_of_an_older_stats_format_are_rebuilt_by_a_full_scan() -> None:
    """Stats a decider kept before they held the small files' bytes (no ``stats`` stamp)
    are not updated in place at the table's next commit: a full scan rebuilds them, so the
    fill rule is counted exactly from then on."""
    w = synthetic.SyntheticWarehouse(1, 4, seed=5)
    name = w.names[0]
    table = w.table(name)
    store = MemoryStats()
    assert catch_up(store, name, table, w.target).full_scan
    store._stats[name] = {k: replace(s, small_bytes=0) for k, s in store.partitions(name).items()}
    del store._state[name]["stats"]
    table.append_small([1], random.Random(6), files=2)
    result = catch_up(store, name, table, w.target)
    assert result.full_scan and "stats of format 1" in result.reason
    assert store.partitions(name) == full_stats(table, w.target)
    assert any(s.small_bytes for s in store.partitions(name).values())
    assert not catch_up(store, name, table, w.target).full_scan


def test_the_decider_reads_every_synthetic_table(tmp_path: Path) -> None:
    """The scale bench's decider over the synthetic warehouse: every table is applied, none
    skipped (a table the decider cannot read is skipped with a warning, and the bench then
    stops at 'the decider saw 0 of N tables': this is what keeps it running)."""
    w = synthetic.SyntheticWarehouse(3, 4, seed=1)
    cfg = make_config(tmp_path, managed={"namespaces": ["bench"]})
    settings = DeciderSettings(ready_depth=0)
    decider = Decider(cfg, w.catalog(), memory_state(settings), settings, tables=lambda: w.names)
    report = decider.step(block_ms=None)
    assert not report.failed, report.failed
    assert sorted(r.table for r in report.applied) == sorted(w.names)
    assert all(r.full_scan for r in report.applied)  # first sight
