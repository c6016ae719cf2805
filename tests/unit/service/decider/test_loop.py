"""The decider without Redis: actor sizing, benefit estimate, backoff, CLI argument checks,
and its behaviour (fair dispatch, leadership, events, failures) on the in-memory adapters.
The Redis adapters are proven equal to those by the contract suites."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from icefloe.app.cli.decide import partition_selector
from icefloe.base.config import DeciderSettings
from icefloe.base.errors import ServiceUnavailable, UsageError
from icefloe.optimizer import PartitionStats, estimate, stats_from_sizes
from icefloe.service.decider.loop import Decider
from icefloe.service.decider.pool import desired_actors
from icefloe.service.decider.wiring import open_decider
from icefloe.state.leader.memory import LeaderBoard
from icefloe.state.open import memory_state
from icefloe.state.queue import ActionItem
from icefloe.state.queue.memory import MemoryQueue
from icefloe.state.rolling.memory import MemoryStats
from tests.support.config import make_config

pytestmark = [pytest.mark.unit]


@pytest.mark.parametrize(
    ("backlog", "lo", "hi", "per", "want"),
    [
        (0, 0, 4, 8, 0),
        (0, 1, 4, 8, 1),
        (1, 0, 4, 8, 1),
        (8, 0, 4, 8, 1),
        (9, 0, 4, 8, 2),
        (1000, 0, 4, 8, 4),
        (-3, 2, 4, 8, 2),
        (5, 3, 3, 1, 3),
    ],
)
def test_desired_actors(backlog: int, lo: int, hi: int, per: int, want: int) -> None:
    assert desired_actors(backlog, lo, hi, per) == want


@pytest.mark.parametrize(("lo", "hi", "per"), [(-1, 4, 1), (5, 4, 1), (0, 4, 0)])
def test_desired_actors_rejects_bad_bounds(lo: int, hi: int, per: int) -> None:
    with pytest.raises(ValueError, match="bad actor bounds"):
        desired_actors(3, lo, hi, per)


def test_estimate_is_exact_for_equal_small_files() -> None:
    target = 1000
    stats = stats_from_sizes([100] * 5 + [1500], target)
    cost, benefit = estimate(stats, target)
    assert cost == 500  # the five small files
    # after: 1500-byte file + one 500-byte file: SSE 500² over 2 files
    assert benefit == pytest.approx(stats.mse - 500**2 / 2)


def test_estimate_needs_two_small_files() -> None:
    assert estimate(stats_from_sizes([10, 5000], 1000), 1000) == (0, 0.0)
    assert estimate(PartitionStats(), 1000) == (0, 0.0)


def test_estimate_orders_tiny_files_first() -> None:
    target = 1 << 20
    tiny = estimate(stats_from_sizes([1000] * 50, target), target)
    half = estimate(stats_from_sizes([target // 2] * 2, target), target)
    assert tiny[1] / tiny[0] > half[1] / half[0]


def test_partition_selector_orders_by_spec_and_rejects_bad_input() -> None:
    fields = ["day", "region"]
    assert partition_selector(fields, ()) is None
    assert partition_selector(fields, ("region=eu", "day=2026-11-01")) == "day=2026-11-01/region=eu"
    assert partition_selector(fields, ("region=eu",)) == "region=eu"
    with pytest.raises(UsageError, match="not a partition field"):
        partition_selector(fields, ("colour=red",))
    with pytest.raises(UsageError, match="COL=VALUE"):
        partition_selector(fields, ("day",))
    with pytest.raises(UsageError, match="twice"):
        partition_selector(fields, ("day=1", "day=2"))


def test_selectors_take_a_slash_in_a_value_as_it_is() -> None:
    from icefloe.base.tablestats import split_selector

    assert split_selector("day=1/path=a/b/c") == [("day", "1"), ("path", "a/b/c")]
    assert split_selector("path=a%2Fb") == [("path", "a%2Fb")]
    assert split_selector("nope/day=1") == [("", "nope"), ("day", "1")]
    assert partition_selector(["path"], ("path=a/b",)) == "path=a/b"


def test_unreachable_redis_backs_off_exponentially_without_leaking_the_password(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import redis

    cfg = make_config(tmp_path, redis={"url": "redis://:s3cret@127.0.0.1:1/0"})
    client = redis.Redis.from_url(cfg.redis.url, socket_connect_timeout=0.5)
    sleeps: list[float] = []
    settings = DeciderSettings(backoff_initial_seconds=1, backoff_max_seconds=8)
    decider = open_decider(
        cfg, None, client, settings=settings, sleep=sleeps.append, tables=lambda: []
    )
    with caplog.at_level(logging.ERROR, logger="icefloe.decider"):
        decider.run(max_steps=6)
    assert sleeps == [1, 2, 4, 8, 8]  # no busy spin, capped
    assert len(caplog.records) == 6
    assert all("redis unreachable" in r.getMessage() for r in caplog.records)
    assert "s3cret" not in caplog.text and ":***@" in caplog.text
    with pytest.raises(ServiceUnavailable, match="redis unreachable"):
        decider.run(once=True)


def test_connect_supports_tls_urls_and_never_shows_the_password(tmp_path: Path) -> None:
    import redis

    from icefloe.base.redis_client import connect

    tls = redis.Redis.from_url("rediss://:pw@redis.example:6380/0")
    assert tls.connection_pool.connection_class is redis.SSLConnection
    cfg = make_config(tmp_path, redis={"url": "redis://:s3cret@127.0.0.1:1/0"})
    with pytest.raises(ServiceUnavailable) as info:
        connect(cfg)
    assert "s3cret" not in str(info.value) and ":***@127.0.0.1:1" in str(info.value)


def test_submit_launcher_runs_the_actor_job_argv_from_jobs_submit(tmp_path: Path) -> None:
    from icefloe.base.submit import submit_command_for
    from icefloe.service.decider.pool import SubmitLauncher

    cfg = make_config(tmp_path)
    started: list[list[str]] = []
    SubmitLauncher(cfg, idle_exit=30, popen=started.append).launch(2)
    expected = submit_command_for(cfg, "actor", args=["--idle-exit", "30"])
    assert started == [expected, expected]
    assert expected[0] == "spark-submit" and expected[-4:-2] == ["--idle-exit", "30"]
    assert any(a.endswith("app/scripts/actor.py") for a in expected)


def test_settings_from_a_decider_config_section() -> None:
    from icefloe.base.errors import ConfigError

    s = DeciderSettings.from_mapping({"poll_seconds": 2, "actors_max": 6, "actors_min": 0})
    assert s.poll_seconds == 2 and s.actors_max == 6 and s.lease_seconds == 300
    assert DeciderSettings.from_mapping(None) == DeciderSettings()
    for raw, message in [
        ({"pol_seconds": 1}, "unknown config key 'decider.pol_seconds'"),
        ({"max_attempts": 2.5}, "'decider.max_attempts' must be an integer"),
        ({"lease_seconds": "10"}, "'decider.lease_seconds' must be a number"),
        ({"lease_seconds": 0}, "must be positive"),
        ({"actors_min": 5, "actors_max": 2}, "actors_max"),
        ({"poll_seconds": 60}, "leader_ttl_seconds"),
    ]:
        with pytest.raises(ConfigError, match=message):
            DeciderSettings.from_mapping(raw)


# ---- decider behaviour on the in-memory adapters (no Redis) -----------------------------
T0 = 1_790_000_000.0


def _decider(
    tmp_path: Path,
    stream: Any = None,
    board: Any = None,
    token: str = "d1",
    batch: int = 1,
    launcher: Any = None,
    **settings: Any,
) -> Decider:
    """A decider on in-memory adapters; ``batch``: every table's ``batch_max_items`` (1:
    one item per dispatch, the scheduler's own unit)."""

    cfg = make_config(
        tmp_path,
        defaults={"batch_max_items": batch},
        tables={"db.vip": {"priority": 0}, "db.big": {"weight": 3}},
    )
    s = DeciderSettings(**settings)
    adapters = memory_state(s, token, stream, board)
    return Decider(cfg, None, adapters, s, launcher=launcher, tables=lambda: [], clock=lambda: T0)


def _item(table: str, partition: str, priority: int = 1) -> ActionItem:
    return ActionItem.new(table, partition, "merge", priority, 1000, 1.0, T0)


def test_a_noisy_table_cannot_starve_the_others(tmp_path: Path) -> None:
    d = _decider(tmp_path, ready_depth=4, quantum_bytes=1000)
    q = d.queue
    for i in range(40):
        q.enqueue(_item("db.noisy", f"p={i}"), T0)
    q.enqueue(_item("db.quiet", "p=0"), T0)
    assert d.duties.dispatch(T0) == 4
    tables = []
    while lease := q.dequeue(T0, 60):
        tables.append(lease.item.table)
    assert tables.count("db.quiet") == 1 and tables.count("db.noisy") == 3
    # higher class first: a class-0 item goes before every waiting class-1 one
    q.enqueue(_item("db.vip", "p=0", priority=0), T0)
    assert d.duties.dispatch(T0) == 4
    first = q.dequeue(T0, 60)
    assert first is not None and first.item.table == "db.vip"
    assert d.ledger.counters()["dispatches"] == 8
    assert d.ledger.scheduler_state()  # the DWRR state survives the process


def test_a_one_shot_pass_dispatches_the_whole_backlog_in_fair_order(tmp_path: Path) -> None:
    """``decide --once`` (the Airflow DAG): no later pass tops the ready set up."""
    d = _decider(tmp_path, ready_depth=4, quantum_bytes=1000)
    for i in range(12):
        d.queue.enqueue(_item("db.noisy", f"p={i}"), T0)
    d.queue.enqueue(_item("db.quiet", "p=0"), T0)
    assert d.duties.dispatch(T0, everything=True) == 13
    order = []
    while lease := d.queue.dequeue(T0, 60):
        order.append(lease.item.table)
    assert len(order) == 13 and "db.quiet" in order[:2]  # fair order kept in the ready FIFO


def test_weights_share_bytes(tmp_path: Path) -> None:
    d = _decider(tmp_path, ready_depth=40, quantum_bytes=1000)
    for table in ("db.big", "db.small"):
        for i in range(30):
            d.queue.enqueue(_item(table, f"p={i}"), T0)
    d.duties.dispatch(T0)
    tables = []
    while lease := d.queue.dequeue(T0, 60):
        tables.append(lease.item.table)
    assert tables.count("db.big") == 3 * tables.count("db.small")


def test_a_table_s_batch_is_dispatched_as_one_unit_and_charged_its_bytes(
    tmp_path: Path,
) -> None:
    """Batches of 10: the noisy table's first batch moves whole (past ``ready_depth``, next
    to each other in the ready set) after the quiet table's one item, whose head costs
    less; the scheduler charged the batch's bytes, so the quiet table's next item goes
    before the noisy table's second batch."""
    d = _decider(tmp_path, batch=10, ready_depth=4, quantum_bytes=1000)
    q = d.queue
    for i in range(25):
        q.enqueue(_item("db.noisy", f"p={i:02d}"), T0)
    q.enqueue(_item("db.quiet", "p=0"), T0)
    assert d.duties.dispatch(T0) == 11
    order = [x.item.table for x in iter(lambda: q.dequeue(T0, 60), None)]
    assert order == ["db.quiet"] + ["db.noisy"] * 10
    q.enqueue(_item("db.quiet", "p=1"), T0)
    assert d.duties.dispatch(T0) == 11  # the quiet item first again, then the noisy batch
    order = [x.item.table for x in iter(lambda: q.dequeue(T0, 60), None)]
    assert order == ["db.quiet"] + ["db.noisy"] * 10
    assert d.duties.dispatch(T0) == 5  # what is left of the noisy table: one batch


def test_weights_share_bytes_with_batches(tmp_path: Path) -> None:
    """Weights 3 and 1, batches of 5 items: the byte shares stay 3:1, a batch at a time."""
    d = _decider(tmp_path, batch=5, ready_depth=80, quantum_bytes=1000)
    for table in ("db.big", "db.small"):
        for i in range(60):
            d.queue.enqueue(_item(table, f"p={i:02d}"), T0)
    d.duties.dispatch(T0)
    tables = [x.item.table for x in iter(lambda: d.queue.dequeue(T0, 60), None)]
    assert len(tables) == 80
    assert tables.count("db.big") == 3 * tables.count("db.small")


def test_decider_rejects_bad_events_and_acks_them(tmp_path: Path) -> None:
    d = _decider(tmp_path)
    for table, snap in [("not an identifier", 1), ("db.unknown", 2)]:
        d.events.publish(table, snap)
    report = d.step()
    assert report.leader and len(report.rejected) == 2
    assert d.events.lag() == 0  # acked: no poison loop


def test_a_claim_that_came_back_late_observes_nothing_and_keeps_the_events(
    tmp_path: Path,
) -> None:
    """A renewal that took more than a third of the TTL to return (a starved thread, a slow
    link) may hold shards another decider owns by then: the decider observes none of its
    tables with it, and their events stay pending for the next claim (they failed before:
    observed, and acked)."""
    d = _decider(tmp_path, leader_ttl_seconds=0.3, poll_seconds=0.1)
    d._tables = lambda: ["db.t"]
    seen: list[str] = []
    d.refresh = lambda name, now, report, polled=False: seen.append(name)  # type: ignore[method-assign]
    claim, late = d.shards.claim, [True]

    def slow_claim() -> Any:
        claimed = claim()
        if late[0]:
            time.sleep(0.15)  # more than a third of the TTL: the leases may have lapsed
        return claimed

    d.shards.claim = slow_claim  # type: ignore[method-assign]
    d.events.publish("db.t", 1)
    report = d.step()
    assert seen == [] and report.deferred == {"db.t"}
    assert d.events.lag() == 1  # pending: claimed again once the claim is timely
    late[0] = False
    d.step()
    assert "db.t" in seen


def test_second_decider_stands_by(tmp_path: Path) -> None:

    board = LeaderBoard()
    a = _decider(tmp_path, board=board, token="a")
    b = _decider(tmp_path, board=board, token="b")
    assert a.step().leader
    standby = b.step()
    assert not standby.leader and standby.holder == "a"  # it says who leads
    a.leader.release()
    assert b.step().leader


def test_one_broken_table_does_not_stop_the_pass(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    d = _decider(tmp_path)
    d._tables = lambda: ["db.broken"]  # catalog None: loading it raises
    d.queue.enqueue(_item("db.ok", "p=0"), T0)
    report = d.step()
    assert report.leader and report.dispatched == 1
    assert "skipped db.broken this pass" in caplog.text


def test_unreachable_catalog_backs_off_and_keeps_events(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    d = _decider(tmp_path, backoff_initial_seconds=2, backoff_max_seconds=5)
    sleeps: list[float] = []
    d.sleep = sleeps.append

    def down() -> list[str]:
        raise OSError("connection refused by postgresql://icefloe:pw@db/catalog")

    d._tables = down
    d.events.publish("db.t", 1)
    d.run(max_steps=4)
    assert sleeps == [2, 4, 5]
    assert caplog.text.count("catalog unreachable") == 4 and "pw@" not in caplog.text
    assert d.events.lag() == 1  # the event waits for a pass that can handle it
    d._tables = lambda: ["db.t"]  # back, but db.t itself fails to load: still not acked
    d.step()
    assert d.events.lag() == 1


def test_an_unavailable_adapter_backs_off_like_redis_down(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The loop only knows ServiceUnavailable: whichever adapter raises it, it backs off."""
    d = _decider(tmp_path, backoff_initial_seconds=1, backoff_max_seconds=1)
    sleeps: list[float] = []
    d.sleep = sleeps.append

    def broken(*_: Any, **__: Any) -> Any:
        raise ServiceUnavailable("redis unreachable during events read (ConnectionError: x)")

    d.events.read = broken  # type: ignore[method-assign]
    with caplog.at_level(logging.ERROR, logger="icefloe.decider"):
        d.run(max_steps=2)
    assert sleeps == [1] and caplog.text.count("events read") == 2


def test_scale_launches_once_per_lease_period(tmp_path: Path) -> None:
    launched: list[int] = []

    class Launcher:
        def launch(self, n: int) -> None:
            launched.append(n)

    d = _decider(
        tmp_path,
        launcher=Launcher(),
        actors_min=0,
        actors_max=4,
        backlog_per_actor=1,
        lease_seconds=60,
    )
    for i in range(3):
        d.queue.enqueue(_item("db.t", f"p={i}"), T0)
    d.ledger.heartbeat("old", T0 - 1000)  # long dead: not counted
    d.ledger.heartbeat("live", T0 - 1)
    assert d.duties.live_actors(T0) == 1
    assert d.duties.scale(T0) == 3 and launched == [2]
    assert d.duties.scale(T0 + 1) == 3 and launched == [2]  # guarded


def _rules(policy: Any) -> Any:
    """The verdict's rules of a table under ``policy`` (resolved by ``policy_for``)."""
    from icefloe.base.config import PlanInputs
    from icefloe.base.verdicts import rules_of

    return rules_of(
        PlanInputs(policy, policy.target, policy.tolerance_bytes, policy.min_input_files)
    )


def _items(cfg: Any, sizes_by_partition: dict[str, list[int]]) -> list[str]:
    from icefloe.service.decider.needs import partition_items

    policy = cfg.policy_for("db.t")
    touched = {k: stats_from_sizes(v, policy.target) for k, v in sizes_by_partition.items()}
    items = partition_items("db.t", _rules(policy), policy.priority, touched, 0.0)
    return [i.partition or "" for i in items]


def test_a_partition_waits_for_min_input_files_small_files(tmp_path: Path) -> None:
    """Over tolerance is not enough: a streaming partition is merged once it holds
    ``min_input_files`` small files, not on every commit; files at or over Iceberg's
    minimum size (0.75·T: never rewritten) do not count towards it, and the default is
    Iceberg's five."""
    t = 1000
    cfg = make_config(tmp_path, defaults={"target_file_size_bytes": t, "tolerance_bytes": 0})
    assert cfg.policy_for("db.t").min_input_files == 5
    parts = {
        "a=4": [10] * 4,
        "a=5": [10] * 5,
        "b=4+big": [10] * 4 + [t, 2 * t],
        "c=4+near": [10] * 4 + [800],  # undersized, but not small
    }
    assert _items(cfg, parts) == ["a=5"]
    two = make_config(
        tmp_path,
        defaults={"target_file_size_bytes": t, "tolerance_bytes": 0, "min_input_files": 2},
    )
    assert _items(two, {"x": [10, 10], "y": [10]}) == ["x"]


def test_small_files_that_fill_a_target_file_are_merged_at_once(tmp_path: Path) -> None:
    """Iceberg's rule: fewer than ``min_input_files`` small files, but the files under
    0.75·T together hold more than one target file: queued now, not after
    ``max_wait_hours``. The decider (from rolling stats) and the actor's planner (from the
    files; ``icefloe optimize`` too) count the rule the same way, and whether the merge
    lowers anything too (``tests/unit/optimizer/test_entropy_merge_need.py``: on every partition).
    The item carries the policy's floor."""
    from icefloe.base.tablestats import PartitionFiles
    from icefloe.jobs.base.plan import _plan_partition
    from icefloe.service.decider.needs import partition_items, waiting

    t = 1000
    cfg = make_config(tmp_path, defaults={"target_file_size_bytes": t, "tolerance_bytes": 0})
    policy = cfg.policy_for("db.t")
    cases = [
        ([700, 700, 600], True),  # 2·T: two full files
        ([600, 600, 600], True),
        ([400, 400, 400], True),
        ([800, 500, 500, 300], True),  # beside an 800, 1300 under 0.75·T
        ([300, 400], False),
        ([500, 500], False),  # exactly T: not more
        ([900, 900, 100], False),  # the large ones are not small for Iceberg's rule
        ([800, 760, 300], False),  # nor a 760 (undersized, but over 0.75·T)
        ([600, 500], False),  # enough, but 1.1·T is two files again: nothing fewer
        ([394, 649, 751, 760], True),  # 394 + 649 = 1.043·T: one file (Iceberg's fold)
        ([394, 720, 751, 760], False),  # 394 + 720 = 1.114·T: two files
        ([330, 330, 341, 900], True),  # into 500 + 501, not 1000 + 1
    ]
    for sizes, merged in cases:
        touched = {"k": stats_from_sizes(sizes, t)}
        queued = partition_items("db.t", _rules(policy), 1, touched, 0.0)
        paths = tuple(f"/d/{i}.parquet" for i in range(len(sizes)))
        pf = PartitionFiles("k", 0, paths, tuple(sizes), (1,) * len(sizes), 0)
        plan = _plan_partition(pf, t, 0, "merge", {}, {}, min_input_files=policy.min_input_files)
        assert bool(queued) is merged and bool(plan.groups) is merged, (sizes, plan.reason)

    touched = {"fills": stats_from_sizes([600, 600, 600], t)}
    [item] = partition_items("db.t", _rules(policy), 1, touched, 0.0)
    assert item.min_input_files == 5  # the actor plans with the policy's floor
    assert "holding a target file" in item.reason
    [late] = partition_items("db.t", _rules(policy), 1, touched, 0.0, min_input_files=2)
    assert late.min_input_files == 2  # waited max_wait_hours: merged as it stands
    # queued now, and waiting too: should the partition have changed by the time the actor
    # plans it, it is still merged after max_wait_hours
    assert waiting(_rules(policy), touched) == (["fills"], [])


def test_a_table_with_a_layout_is_merged_only_where_neighbours_merge(tmp_path: Path) -> None:
    """Sorted (or z-ordered), a partition's files merge only with their neighbours in key
    order (the actor's Knuth-Plass runs): two small files on either side of a full one give
    the sums a merge, the plan none; side by side they merge. Partitions whose ordered
    sizes are unknown keep the sums' verdict."""
    from icefloe.service.decider.needs import partition_items

    t = 1000
    cfg = make_config(tmp_path, defaults={"target_file_size_bytes": t, "tolerance_bytes": 0})
    policy = cfg.policy_for("db.t")
    in_order = {"apart": [300, 900, 300], "together": [300, 300, 900]}
    touched = {k: stats_from_sizes(v, t) for k, v in in_order.items()}
    touched["unknown"] = stats_from_sizes([300, 900, 300], t)
    asked: list[list[str]] = []

    def ordered(keys: Sequence[str]) -> dict[str, list[int]]:
        asked.append(list(keys))
        return {k: in_order[k] for k in keys if k in in_order}

    plain = partition_items("db.t", _rules(policy), 1, touched, 0.0, min_input_files=2)
    assert [i.partition for i in plain] == ["apart", "together", "unknown"]
    items = partition_items("db.t", _rules(policy), 1, touched, 0.0, 2, ordered)
    assert [i.partition for i in items] == ["together", "unknown"]
    assert asked == [["apart", "together", "unknown"]]  # one read, only what would merge


def test_min_input_files_below_two_is_rejected(tmp_path: Path) -> None:
    from icefloe.base.errors import ConfigError

    with pytest.raises(ConfigError, match="min_input_files"):
        make_config(tmp_path, defaults={"min_input_files": 1})


def test_a_waiting_partition_is_merged_after_max_wait_hours(tmp_path: Path) -> None:
    """A partition over tolerance with 2..min_input_files-1 small files waits for more, but
    not for ever: ``max_wait_hours`` after it started waiting (a later commit does not
    restart the clock) it is enqueued as it stands; one merged meanwhile, or gone, is not.
    Each pass reads the waiting set once and writes only what changed."""
    from icefloe.service.decider.needs import Waits, enqueue_overdue, enqueue_touched

    t, hour = 1000, 3600.0
    defaults = {"target_file_size_bytes": t, "tolerance_bytes": 0, "max_wait_hours": 2}
    policy = make_config(tmp_path, defaults=defaults).policy_for("db.t")
    assert make_config(tmp_path).policy_for("db.t").max_wait_hours == 1.0  # the default
    queue, stats = MemoryQueue(3, 600), MemoryStats()
    table: dict[str, PartitionStats] = {}
    writes: list[tuple[list[str], list[str]]] = []
    mark = stats.mark_waiting

    def recorded(name: str, held: list[str], released: list[str], now: float) -> None:
        writes.append((list(held), list(released)))
        mark(name, held, released, now)

    stats.mark_waiting = recorded  # type: ignore[method-assign]

    def commit(now: float, **parts: list[int]) -> None:
        touched = {k: stats_from_sizes(v, t) for k, v in parts.items()}
        table.update(touched)
        stats.replace("db.t", 1, t, {k: s for k, s in table.items() if not s.is_empty}, now)
        rules = _rules(policy)
        enqueue_touched(queue, Waits.read(stats, "db.t", rules), rules, 1, touched, now)

    def overdue(now: float) -> None:
        rules = _rules(policy)
        enqueue_overdue(queue, Waits.read(stats, "db.t", rules), rules, 1, now)

    def queued() -> list[str]:
        ids = {p: ActionItem.make_id("db.t", p, "merge") for p in "abcde"}
        return [p for p, i in ids.items() if queue.get(i) is not None]

    commit(T0, a=[10] * 3, b=[10] * 5, c=[10], d=[10, 10], e=[10, 10])
    assert queued() == ["b"]  # only b has five small files
    assert stats.waiting("db.t") == dict.fromkeys("ade", T0)  # c's one small file gains nothing
    overdue(T0 + 1.9 * hour)
    assert queued() == ["b"]
    writes.clear()
    commit(T0 + hour, a=[10] * 4, d=[t], b=[t])  # a still waits, from T0; d merged elsewhere
    assert writes == [([], ["d"])]  # a is not written again, b never waited
    del table["e"]  # e's files all gone (the stats of a partition without files are dropped)
    stats.replace("db.t", 2, t, table, T0 + hour)
    overdue(T0 + 2 * hour)
    assert queued() == ["a", "b"]
    item = queue.get(ActionItem.make_id("db.t", "a", "merge"))
    assert item is not None and "4 small after 2 h" in item.reason
    assert stats.waiting("db.t") == {}  # all released
    writes.clear()
    commit(T0 + 3 * hour, c=[10])
    overdue(T0 + 3 * hour)
    assert writes == []  # nothing waits, nothing changes: no write
