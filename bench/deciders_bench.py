"""Several deciders sharing one warehouse (a script, not a test): real Redis, real processes.

    .venv/bin/python bench/deciders_bench.py [--tables 10000] [--deciders 3] [--quick]

Starts ``--deciders`` decider processes (``icefloe.service.decider.loop.Decider`` with its Redis
adapters, each its own connection) on a warehouse of ``--tables`` table names, waits until
they share the shards fairly, kills one with SIGKILL and waits until the others hold every
shard again. ``refresh`` is replaced by a recorder: this measures who observes what and
when, not stats (``bench/scale_bench.py`` measures those). Each step's window runs from the
moment its claim returned to the moment the step returned. Printed, on a single Redis and
on a 3-master Redis Cluster side by side:

* the shares after the join, and how long the join took to settle;
* tables observed by two deciders at once (windows of one shard overlapping): goal 0;
* the handover: from the kill to the first step of a survivor holding one of the victim's
  shards, against the lease (``leader_ttl_seconds``): goal within one lease;
* whether every one of the victim's tables was polled again by a survivor.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from icefloe.base.config import DeciderSettings, build_config  # noqa: E402
from icefloe.base.keys import shard_of  # noqa: E402
from icefloe.state.shards import LEASE_FRACTION  # noqa: E402

PREFIX = "icefloe-deciders-bench"


def _decider_process(name: str, redis_section: dict[str, Any], args: Any, out: Any) -> None:
    """One decider's loop; sends (name, shards, start, end, tables seen) per step."""
    from icefloe.service.decider.wiring import open_decider

    cfg = build_config({"redis": redis_section})
    settings = DeciderSettings(
        poll_seconds=args.poll, leader_ttl_seconds=args.ttl, shards=args.shards, ready_depth=0
    )
    tables = [f"db.t{i:06d}" for i in range(args.tables)]
    d = open_decider(cfg, None, settings=settings, consumer=name, tables=lambda: tables)
    seen: list[str] = []
    claimed_at = [0.0]
    claim = d.shards.claim

    def timed_claim() -> Any:
        result = claim()
        claimed_at[0] = time.time()
        out.put((name, "claimed", claimed_at[0]))
        return result

    d.shards.claim = timed_claim  # type: ignore[method-assign]

    def refresh(table: str, now: float, report: Any, polled: bool = False) -> None:
        seen.append(table)  # the tables this decider looks at, nothing read

    d.refresh = refresh  # type: ignore[method-assign]
    while True:
        seen.clear()
        report = d.step(block_ms=int(args.poll * 1000))
        out.put((name, tuple(report.shards), claimed_at[0], time.time(), len(seen), report.polled))
        if report.polled and seen:
            out.put((name, "polled", frozenset(seen)))
        if not report.shards:
            time.sleep(min(args.poll, report.next_lapse or args.poll))


def _fair(n: int, deciders: int) -> list[int]:
    return sorted(n // deciders + (i < n % deciders) for i in range(deciders))


class Run:
    """The deciders of one topology and what they reported."""

    def __init__(self, redis_section: dict[str, Any], args: Any):
        self.args = args
        self.ctx = mp.get_context("fork")
        self.out = self.ctx.Queue()
        self.windows: list[tuple[str, frozenset[int], float, float]] = []
        self.polled: list[tuple[str, frozenset[str], float]] = []
        self.claims: list[tuple[str, float]] = []  # every claim (renewal) and when
        self.names = [f"d{i}" for i in range(args.deciders)]
        self.procs = {
            n: self.ctx.Process(
                target=_decider_process, args=(n, redis_section, args, self.out), daemon=True
            )
            for n in self.names
        }

    def drain(self, seconds: float) -> None:
        deadline = time.time() + seconds
        while time.time() < deadline:
            try:
                msg = self.out.get(timeout=0.05)
            except Exception:
                continue
            if msg[1] == "polled":
                self.polled.append((msg[0], msg[2], time.time()))
            elif msg[1] == "claimed":
                self.claims.append((msg[0], msg[2]))
            else:
                self.windows.append((msg[0], frozenset(msg[1]), msg[2], msg[3]))

    def latest(self, names: list[str]) -> dict[str, frozenset[int]]:
        last: dict[str, frozenset[int]] = {}
        for name, shards, _, _ in self.windows:
            if name in names:
                last[name] = shards
        return last

    def settled(self, names: list[str]) -> bool:
        owned = list(self.latest(names).values())
        return (
            len(owned) == len(names)
            and sorted(map(len, owned)) == _fair(self.args.shards, len(names))
            and len(frozenset().union(*owned)) == self.args.shards
        )

    def until(self, names: list[str], limit: float) -> float | None:
        start = time.time()
        while time.time() - start < limit:
            self.drain(0.1)
            if self.settled(names):
                return time.time() - start
        return None

    def overlaps(self) -> int:
        """Pairs of windows of different deciders holding one shard at once."""
        by_shard: dict[int, list[tuple[float, float, str]]] = {}
        for name, shards, start, end in self.windows:
            for s in shards:
                by_shard.setdefault(s, []).append((start, end, name))
        bad = 0
        for ws in by_shard.values():
            ws.sort()
            bad += sum(1 for a, b in zip(ws, ws[1:], strict=False) if a[2] != b[2] and a[1] > b[0])
        return bad


def run_topology(redis_section: dict[str, Any], args: Any) -> dict[str, Any]:
    run = Run(redis_section, args)
    for p in run.procs.values():
        p.start()
    try:
        join = run.until(run.names, 60 * args.ttl)
        shares = sorted(len(s) for s in run.latest(run.names).values())
        victim = run.names[-1]
        victim_shards = run.latest([victim]).get(victim, frozenset())
        os.kill(run.procs[victim].pid or 0, signal.SIGKILL)
        killed_at = time.time()
        survivors = run.names[:-1]
        settle = run.until(survivors, 60 * args.ttl)
        run.drain(3 * args.poll + 0.5)
    finally:
        for p in run.procs.values():
            if p.is_alive():
                p.kill()
    taken = [
        start
        for name, shards, start, _ in run.windows
        if name != victim and start > killed_at and shards & victim_shards
    ]
    victim_tables = {
        f"db.t{i:06d}"
        for i in range(args.tables)
        if shard_of(f"db.t{i:06d}", args.shards) in victim_shards
    }
    repolled = frozenset().union(
        *(seen for name, seen, at in run.polled if name != victim and at > killed_at)
    )
    lease = args.ttl * LEASE_FRACTION
    renewed = max((at for name, at in run.claims if name == victim and at <= killed_at), default=0)
    return {
        "lapse": renewed + lease - killed_at,  # the victim's last claim + its shard lease
        "reaction": (min(taken) - renewed - lease) if taken else None,
        "shares": "/".join(map(str, shares)),
        "join": join,
        "overlaps": run.overlaps(),
        "handover": (min(taken) - killed_at) if taken else None,
        "settle": settle,
        "repolled": victim_tables <= repolled,
    }


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.2f}"
    return str(v)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--redis", default="redis://127.0.0.1:6379/14")
    ap.add_argument("--tables", type=int, default=10_000)
    ap.add_argument("--deciders", type=int, default=3)
    ap.add_argument("--shards", type=int, default=16)
    ap.add_argument("--ttl", type=float, default=3.0, help="leader_ttl_seconds (the lease)")
    ap.add_argument("--poll", type=float, default=0.5)
    ap.add_argument("--no-cluster", action="store_true", help="single Redis only")
    ap.add_argument("--quick", action="store_true", help="1,000 tables, a 1.5 s lease")
    args = ap.parse_args()
    if args.quick:
        args.tables, args.ttl, args.poll = 1000, 1.5, 0.25
    import redis

    redis.Redis.from_url(args.redis).flushdb()
    results = {"single": run_topology({"url": args.redis, "key_prefix": PREFIX}, args)}
    if not args.no_cluster:
        from tests.support.cluster import LocalCluster

        with tempfile.TemporaryDirectory() as tmp:
            cluster = LocalCluster(Path(tmp))
            cluster.start()
            try:
                section = {"url": cluster.url, "key_prefix": PREFIX, "cluster": True}
                results["cluster"] = run_topology(section, args)
            finally:
                cluster.stop()
    redis.Redis.from_url(args.redis).flushdb()
    print(
        f"\n{args.deciders} deciders on {args.tables:,} tables, {args.shards} shards, "
        f"lease {args.ttl} s, poll {args.poll} s"
    )
    cols = list(results)
    print(f"{'':34}" + "".join(f"{c:>12}" for c in cols) + "   goal")
    rows = [
        (
            "shares after the join",
            "shares",
            "fair: " + "/".join(map(str, _fair(args.shards, args.deciders))),
        ),
        ("join settled in (s)", "join", ""),
        ("tables observed by two at once", "overlaps", "0"),
        ("handover after SIGKILL (s)", "handover", f"<= one lease (leader_ttl_seconds {args.ttl})"),
        ("  of which: shard lease left", "lapse", f"<= {LEASE_FRACTION} lease"),
        ("  of which: survivor's reaction", "reaction", ""),
        ("survivors settled in (s)", "settle", ""),
        ("victim's tables polled again", "repolled", "True"),
    ]
    for label, key, goal in rows:
        print(f"{label:34}" + "".join(f"{_fmt(results[c][key]):>12}" for c in cols) + f"   {goal}")
    for c in cols:
        h = results[c]["handover"]
        if h is not None:
            print(f"{c}: handover / lease = {h / args.ttl:.2f}")


if __name__ == "__main__":
    main()
