"""Pure parts of the decider: actor sizing, benefit estimate, backoff, CLI argument checks."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from optimizer import PartitionStats, stats_from_sizes
from service.actor import desired_actors
from service.cli.decider import partition_selector
from service.config import DeciderSettings
from service.decider import Decider, estimate
from service.errors import ServiceUnavailable, UsageError
from tests.conftest import make_config

pytestmark = [pytest.mark.unit]


@pytest.mark.parametrize(
    ("backlog", "lo", "hi", "per", "want"),
    [(0, 0, 4, 8, 0), (0, 1, 4, 8, 1), (1, 0, 4, 8, 1), (8, 0, 4, 8, 1), (9, 0, 4, 8, 2),
     (1000, 0, 4, 8, 4), (-3, 2, 4, 8, 2), (5, 3, 3, 1, 3)],
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


def test_selectors_and_keys_escape_a_slash_in_a_value() -> None:
    from service.tablestats import partition_key, split_selector

    assert partition_key({"day": "1", "path": "a/b"}) == "day=1/path=a%2Fb"
    assert split_selector("day=1/path=a/b/c") == [("day", "1"), ("path", "a%2Fb%2Fc")]
    assert split_selector("path=a%2Fb") == [("path", "a%2Fb")]
    assert split_selector("nope/day=1") == [("", "nope"), ("day", "1")]
    assert partition_selector(["path"], ("path=a/b",)) == "path=a%2Fb"


def test_unreachable_redis_backs_off_exponentially_without_leaking_the_password(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import redis

    cfg = make_config(tmp_path, redis={"url": "redis://:s3cret@127.0.0.1:1/0"})
    client = redis.Redis.from_url(cfg.redis.url, socket_connect_timeout=0.5)
    sleeps: list[float] = []
    settings = DeciderSettings(backoff_initial_seconds=1, backoff_max_seconds=8)
    decider = Decider(cfg, client, catalog=None, settings=settings, sleep=sleeps.append,
                      tables=lambda: [])
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

    from service.redis_client import connect

    tls = redis.Redis.from_url("rediss://:pw@redis.example:6380/0")
    assert tls.connection_pool.connection_class is redis.SSLConnection
    cfg = make_config(tmp_path, redis={"url": "redis://:s3cret@127.0.0.1:1/0"})
    with pytest.raises(ServiceUnavailable) as info:
        connect(cfg)
    assert "s3cret" not in str(info.value) and ":***@127.0.0.1:1" in str(info.value)


def test_submit_launcher_runs_the_actor_job_argv_from_jobs_submit(tmp_path: Path) -> None:
    from service.actor import SubmitLauncher
    from service.submit import submit_command_for

    cfg = make_config(tmp_path)
    started: list[list[str]] = []
    SubmitLauncher(cfg, idle_exit=30, popen=started.append).launch(2)
    expected = submit_command_for(cfg, "actor", args=["--idle-exit", "30"])
    assert started == [expected, expected]
    assert expected[0] == "spark-submit" and expected[-4:-2] == ["--idle-exit", "30"]
    assert any(a.endswith("jobs/scripts/actor.py") for a in expected)


def test_settings_from_a_decider_config_section() -> None:
    from service.errors import ConfigError

    s = DeciderSettings.from_mapping({"poll_seconds": 2, "actors_max": 6, "actors_min": 0})
    assert s.poll_seconds == 2 and s.actors_max == 6 and s.lease_seconds == 300
    assert DeciderSettings.from_mapping(None) == DeciderSettings()
    for raw, message in [({"pol_seconds": 1}, "unknown config key 'decider.pol_seconds'"),
                         ({"max_attempts": 2.5}, "'decider.max_attempts' must be an integer"),
                         ({"lease_seconds": "10"}, "'decider.lease_seconds' must be a number"),
                         ({"lease_seconds": 0}, "must be positive"),
                         ({"actors_min": 5, "actors_max": 2}, "actors_max"),
                         ({"poll_seconds": 60}, "leader_ttl_seconds")]:
        with pytest.raises(ConfigError, match=message):
            DeciderSettings.from_mapping(raw)


