"""Three deciders share a warehouse of 10,000 tables through shard leases on a real Redis
(single and cluster); one is killed mid-run and the others take its shards.

Each decider runs its own loop in a thread with its own Redis connection, as separate
processes would; ``refresh`` is replaced by a recorder (this is about who observes what, not
about stats: ``tests/integration/test_decider.py`` runs the real thing). A step's window
runs from its first observation to its last: no shard may be in two
deciders' windows at once, and every table a step observed belongs to a shard of that step's
claim. The machine may be loaded (another test run beside this one): a decider whose claim
came back late must not observe on a lease that may have lapsed meanwhile.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from icefloe.base.config import DeciderSettings
from icefloe.base.keys import Keys, shard_of
from icefloe.service.decider.loop import Decider
from icefloe.service.decider.wiring import open_decider
from icefloe.state.shards import LEASE_FRACTION
from tests.support.config import make_config

pytestmark = [pytest.mark.redis]
TOPOLOGIES = ("single", "cluster")  # each test on both (tests/redis/conftest.py)

TABLES = [f"db.t{i:05d}" for i in range(10_000)]
SHARDS = 16
TTL = 1.5
POLL = 0.25


@dataclass(frozen=True)
class Window:
    decider: str
    shards: frozenset[int]
    start: float  # its last claim returned
    first: float  # its first observation (the claim's return when it observed nothing)
    end: float  # its last observation (likewise)
    tables: frozenset[str]


class Runner:
    """One decider's loop in a thread; ``kill`` stops it dead (no release, as SIGKILL)."""

    def __init__(self, decider: Decider, windows: list[Window], lock: threading.Lock):
        self.d, self.windows, self.lock = decider, windows, lock
        self.claimed_at = self.claim_started = 0.0
        self.seen: set[str] = set()
        self.first_seen = self.last_seen = 0.0
        self.stop = threading.Event()
        claim = decider.shards.claim

        def timed_claim() -> Any:
            self.claim_started = time.monotonic()  # the renewal happens after this
            result = claim()
            self.claimed_at = time.monotonic()
            return result

        decider.shards.claim = timed_claim  # type: ignore[method-assign]
        decider.refresh = self._observe  # type: ignore[method-assign]
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.last_end = 0.0

    def _observe(self, name: str, now: float, report: Any, polled: bool = False) -> None:
        self.last_seen = time.monotonic()
        if not self.seen:
            self.first_seen = self.last_seen
        self.seen.add(name)

    def _loop(self) -> None:
        while not self.stop.is_set():
            self.seen = set()
            report = self.d.step(block_ms=int(POLL * 1000))
            end = time.monotonic()
            window = Window(
                self.d.leader.token,
                frozenset(report.shards),
                self.claimed_at,
                self.first_seen if self.seen else self.claimed_at,
                self.last_seen if self.seen else self.claimed_at,
                frozenset(self.seen),
            )
            with self.lock:
                self.windows.append(window)
            self.last_end = end
            if not report.shards:
                time.sleep(min(POLL, report.next_lapse or POLL))


def victim_shards(windows: list[Window]) -> frozenset[int]:
    """The shards the victim (decider ``c``) held in its last window."""
    return max((w for w in windows if w.decider == "c"), key=lambda w: w.end).shards


def _until(check: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return check()


def test_three_deciders_share_the_tables_and_survive_a_kill(
    new_redis_client: Callable[[], Any], redis_section: dict[str, Any], tmp_path: Path
) -> None:
    cfg = make_config(tmp_path, redis=redis_section)
    settings = DeciderSettings(
        poll_seconds=POLL, leader_ttl_seconds=TTL, shards=SHARDS, ready_depth=0
    )
    windows: list[Window] = []
    lock = threading.Lock()
    runners = [
        Runner(
            open_decider(
                cfg,
                None,
                new_redis_client(),
                settings=settings,
                consumer=name,
                tables=lambda: TABLES,
            ),
            windows,
            lock,
        )
        for name in ("a", "b", "c")
    ]
    for r in runners:
        r.thread.start()

    def latest(names: set[str]) -> dict[str, Window]:
        with lock:
            last = {w.decider: w for w in windows if w.decider in names}
        return last

    def settled(names: set[str]) -> bool:
        """Every shard held once, and each decider holds its fair share."""
        owned = [w.shards for w in latest(names).values()]
        fair = [SHARDS // len(names) + (i < SHARDS % len(names)) for i in range(len(names))]
        return sorted(map(len, owned)) == sorted(fair) and len(set().union(*owned)) == SHARDS

    try:
        assert _until(lambda: settled({"a", "b", "c"}), 20 * TTL), latest({"a", "b", "c"})
        victim = runners[2]
        victim.stop.set()
        victim.thread.join(timeout=30)
        killed_at = victim.last_end
        assert _until(lambda: settled({"a", "b"}), 20 * TTL), latest({"a", "b"})
        victim_tables = {t for t in TABLES if shard_of(t, SHARDS) in victim_shards(windows)}

        def victims_polled() -> bool:  # every table of the victim's shards, after the kill
            with lock:
                after = [w for w in windows if w.decider != "c" and w.start > killed_at]
            return victim_tables <= set().union(*(w.tables for w in after))

        assert _until(victims_polled, 20 * TTL)
    finally:
        for r in runners:
            r.stop.set()
        for r in runners:
            r.thread.join(timeout=30)

    # every table observed only inside its shard's window, and each shard by one at a time
    for w in windows:
        assert all(shard_of(t, SHARDS) in w.shards for t in w.tables), w.decider
    by_shard: dict[int, list[Window]] = {}
    for w in windows:
        for s in w.shards:
            if w.tables:
                by_shard.setdefault(s, []).append(w)
    for s, ws in by_shard.items():
        ws.sort(key=lambda w: w.first)
        for before, after in zip(ws, ws[1:], strict=False):
            if before.decider != after.decider:
                assert before.end <= after.first, f"shard {s} observed by two at once"
    # the survivors observe the victim's tables again, but none before its lease lapsed
    after_kill = [w for w in windows if w.decider != "c" and w.start > killed_at]
    victims = victim_shards(windows)
    taken = [w.start for w in after_kill if w.shards & victims]
    # a lease after its last renewal, not a steal (50 ms: Redis's clock against ours)
    assert taken and min(taken) >= victim.claim_started + TTL * LEASE_FRACTION - 0.05
    polled = set().union(*(w.tables for w in after_kill if w.shards & victims))
    assert {t for t in TABLES if shard_of(t, SHARDS) in victims} <= polled
    assert not Keys.for_config(cfg).prefix.startswith("{")
