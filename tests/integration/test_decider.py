"""The decider end to end on real Iceberg tables (PyIceberg) and a real Redis; the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import yaml
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType

from icefloe.app.cli import main
from icefloe.base.config import Config, DeciderSettings
from icefloe.base.keys import Keys
from icefloe.base.partition_key import display_key
from icefloe.service.decider import catchup
from icefloe.service.decider.wiring import open_decider
from icefloe.state.rolling.scan import full_stats
from tests.support.config import make_config, part, redis_url

pytestmark = [pytest.mark.redis, pytest.mark.integration]

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "region", StringType(), required=False),
)
SPEC = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "region"))
T0 = 1_790_000_000.0


def batch(region: str, start: int, n: int = 20) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(start, start + n), pa.int64()),
            "region": pa.array([region] * n, pa.string()),
        }
    )


class Launches:
    def __init__(self) -> None:
        self.counts: list[int] = []

    def launch(self, count: int) -> None:
        self.counts.append(count)


@pytest.fixture
def setup(lake_home: Path, catalog: Any, namespace: str, redis_client: Any) -> Any:
    cfg = make_config(
        lake_home,
        managed={"namespaces": [namespace]},
        defaults={"target_file_size_bytes": 1 << 20, "tolerance_bytes": 1000, "min_input_files": 2},
    )
    table = catalog.create_table(f"{namespace}.events", schema=SCHEMA, partition_spec=SPEC)
    launches = Launches()
    clock = [T0]
    decider = open_decider(
        cfg,
        catalog,
        redis_client,
        settings=DeciderSettings(actors_min=0, actors_max=3, backlog_per_actor=1),
        launcher=launches,
        clock=lambda: clock[0],
    )
    return cfg, table, decider, launches, clock


def test_commits_become_coalesced_fairly_dispatched_actions(
    setup: Any, redis_client: Any, namespace: str
) -> None:
    cfg, table, decider, launches, clock = setup
    name = f"{namespace}.events"
    for i, region in enumerate(["eu", "eu", "us"]):
        table.append(batch(region, i * 100))
    report = decider.step()
    assert report.leader and report.applied[0].full_scan  # first sight of the table
    assert report.enqueued == 1 and report.dispatched == 1  # eu has 2 small files, us only 1
    assert launches.counts == [1]
    ready = decider.queue.dequeue(T0, 60)
    assert ready is not None and ready.item.id == f"merge:{name}:{part(region='eu')}"
    assert ready.item.cost_bytes > 0 and ready.item.benefit > 0
    # three more commits between two polls, all rolling; eu is in flight → coalesced
    table.append(batch("us", 1000))
    table.append(batch("eu", 2000))
    table.append(batch("ap", 3000))
    clock[0] += 10
    report = decider.step()
    (applied,) = report.applied
    assert not applied.full_scan and applied.snapshots_applied == 3
    assert report.enqueued == 1 and report.coalesced == 1  # us is new; eu absorbed
    assert decider.stats.partitions(name) == full_stats(table, 1 << 20)
    counters = {
        k.decode(): int(v) for k, v in redis_client.hgetall(Keys.for_config(cfg).counters).items()
    }
    assert counters["partitions_changed"] == 3 and counters["partition_scans"] == 2
    assert counters["snapshots_applied"] == 3
    # nothing changed: nothing to do, and no second launch inside the guard period
    assert decider.step().applied == [] and launches.counts == [1]


def test_a_partition_short_of_min_input_files_is_merged_after_max_wait_hours(
    lake_home: Path, catalog: Any, namespace: str, redis_client: Any
) -> None:
    """A partition that stopped receiving files before it held ``min_input_files`` small
    ones is not left for ever: the decider enqueues it ``max_wait_hours`` after it started
    waiting, from its stored stats, with no new snapshot; once only."""
    policy = {"target_file_size_bytes": 1 << 20, "tolerance_bytes": 1000, "min_input_files": 4}
    cfg = make_config(
        lake_home, managed={"namespaces": [namespace]}, defaults={**policy, "max_wait_hours": 1}
    )
    table = catalog.create_table(f"{namespace}.events", schema=SCHEMA, partition_spec=SPEC)
    clock = [T0]
    decider = open_decider(
        cfg, catalog, redis_client, settings=DeciderSettings(), clock=lambda: clock[0]
    )
    for i, region in enumerate(["eu"] * 3 + ["us"] * 4):
        table.append(batch(region, i * 100))
    assert decider.step().enqueued == 1  # us: four small files; eu waits
    clock[0] += 1800
    assert decider.step().enqueued == 0
    clock[0] += 1800
    assert decider.step().enqueued == 1  # eu, an hour later, without a new snapshot
    item = decider.queue.get(f"merge:{namespace}.events:{part(region='eu')}")
    assert item is not None and "3 small after 1 h" in item.reason
    clock[0] += 7200
    assert decider.step().enqueued == 0  # released: enqueued once
    assert redis_client.zcard(Keys.for_config(cfg).waiting(f"{namespace}.events")) == 0


def test_an_upgraded_decider_rebuilds_an_idle_tables_older_stats_at_once(
    lake_home: Path, catalog: Any, namespace: str, redis_client: Any, monkeypatch: Any
) -> None:
    """Stats an older icefloe kept (format 2: no count of the small files) on a table that
    sees no new commit: the first pass of an upgraded decider rebuilds them (one full
    scan; a pass that fails is tried again at the next), so the partition that waits for
    ``max_wait_hours`` is still merged then; later passes read nothing more."""
    policy = {"target_file_size_bytes": 1 << 20, "tolerance_bytes": 1000, "min_input_files": 4}
    cfg = make_config(
        lake_home, managed={"namespaces": [namespace]}, defaults={**policy, "max_wait_hours": 1}
    )
    name = f"{namespace}.events"
    table = catalog.create_table(name, schema=SCHEMA, partition_spec=SPEC)
    clock = [T0]

    def decider() -> Any:
        return open_decider(cfg, catalog, redis_client, clock=lambda: clock[0])

    for i in range(3):
        table.append(batch("eu", i * 100))
    first = decider()
    assert first.step().enqueued == 0  # eu waits for a fourth small file
    first.leader.release()  # stopped, as `icefloe decide` stops
    first.shards.release()
    keys = Keys.for_config(cfg)
    stored = redis_client.hgetall(keys.stats(name))
    older = {k: " ".join(v.decode().split()[:9]) for k, v in stored.items()}
    redis_client.hset(keys.stats(name), mapping=older)
    redis_client.hset(keys.table_state(name), "stats", 2)
    clock[0] += 3600
    upgraded = decider()
    real, calls = catchup.catch_up, []

    def flaky(*args: Any, **kw: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise OSError("catalog went away")
        return real(*args, **kw)

    monkeypatch.setattr(catchup, "catch_up", flaky)
    assert name in upgraded.step().failed and upgraded.stats.stale(name)
    report = upgraded.step()
    assert [r.full_scan for r in report.applied] == [True] and report.enqueued == 1
    assert "format 2" in report.applied[0].reason
    item = upgraded.queue.get(f"merge:{name}:{part(region='eu')}")
    assert item is not None and "3 small after 1 h" in item.reason
    assert upgraded.stats.partitions(name) == full_stats(table, 1 << 20)
    clock[0] += 10
    assert upgraded.step().applied == []


def test_a_crash_between_applying_and_enqueueing_loses_no_action(
    setup: Any, redis_client: Any, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stats and last-applied move in one transaction, the enqueue after it: a decider that
    dies in between must still enqueue on its next pass, without the snapshot changing."""
    cfg, table, decider, launches, clock = setup
    name = f"{namespace}.events"
    table.append(batch("eu", 0))
    table.append(batch("eu", 100))

    def crash(*args: Any, **kwargs: Any) -> int:
        raise ConnectionError("decider killed here")

    monkeypatch.setattr("icefloe.service.decider.catchup.enqueue_touched", crash)
    with pytest.raises(ConnectionError):
        decider.refresh(name, T0, decider.observe()[2])
    monkeypatch.undo()
    assert decider.stats.last_applied(name) == table.current_snapshot().snapshot_id
    assert decider.queue.depth()["pending"] == 0
    report = decider.step()
    assert report.applied == [] and report.enqueued == 1  # no rescan, the action is back
    assert decider.step().enqueued == 0  # and it is decided once


def test_events_trigger_and_bad_ones_are_rejected(
    setup: Any, redis_client: Any, namespace: str
) -> None:
    cfg, table, decider, launches, clock = setup
    decider.events.ensure_group()
    table.append(batch("eu", 0))
    decider.events.publish(f"{namespace}.events", table.current_snapshot().snapshot_id)
    decider.events.publish(f"{namespace}.missing", 1)
    decider.events.publish("drop table", None)
    report = decider.step()
    assert report.events == 3 and len(report.rejected) == 2
    assert decider.events.lag() == 0
    assert decider.stats.last_applied(f"{namespace}.events") == table.current_snapshot().snapshot_id


def test_redis_restarted_empty_is_rebuilt_from_the_catalog(
    setup: Any, redis_client: Any, namespace: str
) -> None:
    cfg, table, decider, launches, clock = setup
    name = f"{namespace}.events"
    table.append(batch("eu", 0))
    table.append(batch("eu", 100))
    decider.step()
    redis_client.flushdb()
    report = decider.step()
    assert report.leader and report.applied[0].full_scan and report.enqueued == 1
    assert decider.stats.partitions(name) == full_stats(table, 1 << 20)
    table.append(batch("eu", 200))
    assert not decider.step().applied[0].full_scan


def _write_config(path: Path, cfg: Config, namespace: str) -> Path:
    raw = {
        "catalog": {
            "name": cfg.catalog.name,
            "type": "sql",
            "uri": cfg.catalog.uri,
            "warehouse": cfg.catalog.warehouse,
        },
        "redis": {"url": redis_url(), "key_prefix": "icefloe-test"},
        "defaults": {
            "target_file_size_bytes": 1 << 20,
            "tolerance_bytes": 1000,
            "min_input_files": 2,
        },
        "managed": {"namespaces": [namespace]},
        "tables": {f"{namespace}.events": {"sort_order": ["id"]}},
    }
    file = path / "icefloe.yaml"
    file.write_text(yaml.safe_dump(raw))
    return file


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_info:
        main(args)
    out, err = capsys.readouterr()
    return int(exit_info.value.code or 0), out, err


def test_cli_request_notify_status_decide_and_actor(
    setup: Any,
    catalog: Any,
    redis_client: Any,
    namespace: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cfg, table, *_ = setup
    name = f"{namespace}.events"
    table.append(batch("eu", 0))
    catalog.create_table(f"{namespace}.unsorted", schema=SCHEMA, partition_spec=SPEC)
    conf = str(_write_config(tmp_path, cfg, namespace))
    code, out, err = run_cli(
        [
            "--config",
            conf,
            "request",
            name,
            "--partition",
            "region=eu",
            "--action",
            "sort",
            "--priority",
            "0",
            "--json",
        ],
        capsys,
    )
    assert code == 0, err
    eu = part(region="eu")
    assert json.loads(out) == {
        "id": f"sort:{name}:{eu}",
        "queued": True,
        "coalesced": False,
        "items": [{"id": f"sort:{name}:{eu}", "partition": "region=eu", "queued": True}],
    }
    for bad, message in [
        (["request", "no_dots"], "bad table identifier"),
        (["request", f"{namespace}.nope"], "not found"),
        (["request", name, "--partition", "colour=red"], "not a partition field"),
        (["notify", "x;y"], "bad table identifier"),
        # nothing is queued that an actor could only fail on later
        (["request", name, "--partition", "region=nowhere"], "no partition"),
        (["request", name, "--partition", "region=a/b"], "no partition"),
        (["request", f"{namespace}.unsorted", "--action", "sort"], "sort needs a sort order"),
    ]:
        code, out, err = run_cli(["--config", conf, *bad], capsys)
        assert code in (1, 2) and message in err and len(err.strip().splitlines()) == 1
    assert Keys("icefloe-test").pending(name).encode() in redis_client.keys("*")
    code, out, err = run_cli(["--config", conf, "notify", name], capsys)
    assert code == 0 and "notified" in out
    code, out, err = run_cli(["--config", conf, "decide", "--once", "--json"], capsys)
    assert code == 0, err
    step = json.loads(out)
    assert step["leader"] and step["events"] == 1 and step["dispatched"] == 1
    # the actor runs the ad-hoc sort with a fake runner, then status shows it
    from icefloe.service.actor.loop import run_actor

    calls: list[tuple[str, str | None, str]] = []

    def runner(item: Any, guard: Any = None) -> dict[str, Any]:
        calls.append((item.table, item.partition, item.action))
        return {"bytes_rewritten": 5, "partitions": []}

    report = run_actor(cfg, max_actions=None, idle_exit=0, runner=runner)
    assert report.done == 1 and [(t, display_key(p), a) for t, p, a in calls] == [
        (name, "region=eu", "sort")
    ]
    code, out, err = run_cli(["--config", conf, "status", "--json"], capsys)
    assert code == 0, err
    data = json.loads(out)
    assert data["recent"][0]["id"] == f"sort:{name}:{eu}" and data["recent"][0]["ok"]
    assert data["recent"][0]["partition"] == "region=eu"
    assert name in data["tables"] and data["queue"]["depth"]["inflight"] == 0
    code, out, err = run_cli(["--config", conf, "status"], capsys)
    assert code == 0 and "queue: pending" in out


def test_a_poll_loads_only_the_tables_that_changed(
    lake_home: Path,
    catalog: Any,
    redis_client: Any,
    namespace: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """#48: a poll reads every table's metadata location in one query (a SQL catalog) and
    loads only the tables whose location moved; the others are refreshed from what the
    decider holds -- a partition that waited ``max_wait_hours`` is still enqueued, snapshot
    expiry still decided -- and loaded again in full every ``FULL_REFRESH_SECONDS``."""
    from icefloe.service.decider import light

    policy = {"target_file_size_bytes": 1 << 20, "min_input_files": 4, "max_wait_hours": 0.1}
    cfg = make_config(lake_home, managed={"namespaces": [namespace]}, defaults=policy)
    assert 0.1 * 3600 < light.FULL_REFRESH_SECONDS
    names = [f"{namespace}.t{i}" for i in range(4)]
    tables = [catalog.create_table(n, schema=SCHEMA, partition_spec=SPEC) for n in names]
    for t in tables:
        t.append(batch("eu", 0))
        t.append(batch("eu", 100))  # two small files: wait for min_input_files (4)
    loads: list[str] = []
    real = catalog.load_table

    def counted(identifier: Any) -> Any:
        loads.append(".".join(identifier) if not isinstance(identifier, str) else identifier)
        return real(identifier)

    monkeypatch.setattr(catalog, "load_table", counted)  # the run's catalog: put back after
    clock = [T0]
    decider = open_decider(cfg, catalog, redis_client, clock=lambda: clock[0])
    first = decider.step()
    assert first.enqueued == 0 and sorted(loads) == names and first.unchanged == 0
    loads.clear()
    clock[0] += cfg.decider.poll_seconds
    reads: list[list[str]] = []
    read = decider.stats.last_and_waiting
    monkeypatch.setattr(decider.stats, "last_and_waiting", lambda t: reads.append(t) or read(t))
    second = decider.step()
    assert loads == [] and second.unchanged == 4  # nothing moved: no table loaded
    assert reads == [names]  # their kept state read at once, not a round trip a table
    tables[2].append(batch("eu", 200))
    loads.clear()  # the commit's own load (PyIceberg's SQL catalog reads before it writes)
    clock[0] += cfg.decider.poll_seconds
    third = decider.step()
    assert loads == [names[2]] and third.unchanged == 3  # only the table that changed
    loads.clear()
    clock[0] += 0.1 * 3600  # every partition waited max_wait_hours: merged as they stand
    overdue = decider.step()
    assert loads == [] and overdue.enqueued == 4 and overdue.unchanged == 4
    for name in names:
        assert decider.queue.get(f"merge:{name}:{part(region='eu')}") is not None
    clock[0] += light.FULL_REFRESH_SECONDS
    decider.step()
    assert sorted(loads) == names  # a full refresh every FULL_REFRESH_SECONDS
    assert decider.light.catalog_requests == 5  # one location query a poll
