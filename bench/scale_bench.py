"""Scale benchmark (a script, not a test): #21's warehouse of 1M partitions on a single Redis
and on a real 3-master Redis Cluster, printed side by side against the acceptance goals.

    .venv/bin/python bench/scale_bench.py [--quick] [--partitions 1000000] [--tables N]
                                          [--redis redis://127.0.0.1:6379/11] [--only single]

The warehouse is synthetic (``bench/synthetic.py``: 100 ``day=`` partitions a table, 1–3
files at target and maybe one small file each, metadata read for free); everything else is
the real code on real Redis. Per topology, in one run:

1. memory: a real :class:`icefloe.service.decider.loop.Decider` (``step()``) sees every table
   for the first time and full-scans it into the rolling stats; then ``MEMORY USAGE`` summed over
   the stats hashes (and the table state hashes, the known-tables set), and the
   ``INFO memory`` ``used_memory`` delta over every master, per partition (goal <= 100 B);
2. file events/s: tables get chains of 10 commits (4 of 5 add 4 small files to each of 2
   partitions, every 5th compacts a partition), then ``icefloe.state.rolling.scan.catch_up`` brings
   each table's stats up to date (wall clock; goal >= 20,000/s); also one commit per table;
3. queue ops/s: the real :class:`icefloe.state.queue.redis.RedisQueue`, n items through enqueue →
   dispatch → dequeue → ack, one item per call and in batches of 100 (``enqueue_many``,
   ``dispatch_many``: one pipelined round trip a batch; ``dequeue_many``, ``ack_many``: two),
   against ``redis-benchmark -c 1`` SET/GET on the queue's own server, three rounds back to
   back, medians (goal >= 0.5x);
4. commit→enqueue latency: a thread commits 2,000 times a minute (2 small files to a fresh
   partition, so each commit makes one action item) and publishes each commit event with
   ``RedisEvents.publish``, while the Decider loops ``step(block_ms=poll_seconds·1000)`` as
   ``Decider.run`` does (``ready_depth`` 0: enqueue only); latency = commit to the moment the
   queue's ``enqueue`` returned (a ``RedisQueue`` subclass stamps it; goal p99 < 2 s);
5. fairness: 12 tables in weight classes 1/2/4, 60 equal items each (all backlogged), the
   Decider's own fair dispatch (``ready_depth`` 8, a quantum of one item) with batching on
   (``batch_max_items`` 4: a table's batch of 4 items dispatched as one unit, its bytes
   charged to the table's share) while "actors" drain the ready set a batch at a time
   (``dequeue_batch``); each class's share of dispatched items and bytes against its
   weight's share.

Uses its own key prefix on the single Redis (db 11 by default: ``bench/deciders_bench.py``
flushes db 14) and its own loopback cluster; cleans up. Not a test: nothing asserts on time.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.synthetic import MiB, SyntheticWarehouse, partition_key  # noqa: E402
from icefloe.base.config import DeciderSettings, build_config  # noqa: E402
from icefloe.base.keys import Keys  # noqa: E402
from icefloe.base.redis_client import connect  # noqa: E402
from icefloe.jobs.maintenance.orphans import cleaner  # noqa: E402
from icefloe.service.decider.loop import Decider  # noqa: E402
from icefloe.service.decider.wiring import open_decider  # noqa: E402
from icefloe.state.open import open_state  # noqa: E402
from icefloe.state.queue import ActionItem, budget_of  # noqa: E402
from icefloe.state.queue.redis import RedisQueue  # noqa: E402
from icefloe.state.rolling.redis import RollingStats  # noqa: E402
from icefloe.state.rolling.scan import catch_up, full_stats  # noqa: E402
from tests.support.cluster import LocalCluster, primaries  # noqa: E402

CHAIN = 10  # commits per table between two passes, for the events figure
OPS = ("enq", "disp", "deq", "ack")


def pct(values: Sequence[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))] if s else float("nan")


def make_cfg(home: str, url: str, prefix: str, cluster: bool, **extra: Any) -> Any:
    raw: dict[str, Any] = {
        "redis": {"url": url, "key_prefix": prefix, "cluster": cluster},
        "managed": {"namespaces": ["bench"]},
        "defaults": {"min_input_files": 2},  # a commit's 2 small files make an action item
    }
    raw.update(extra)
    return build_config(raw, source="<scale-bench>", home=Path(home))


# ---- 1. memory -------------------------------------------------------------------------------
def used_memory(client: Any) -> int:
    return sum(int(node.info("memory")["used_memory"]) for node in primaries(client))


def memory_usage(client: Any, pattern: str) -> tuple[int, int]:
    """(keys, bytes): ``MEMORY USAGE`` summed over the keys matching ``pattern``, all masters."""
    count = total = 0
    for node in primaries(client):
        keys = list(node.scan_iter(match=pattern, count=1000))
        for at in range(0, len(keys), 1000):
            pipe = node.pipeline(transaction=False)
            for key in keys[at : at + 1000]:
                pipe.memory_usage(key, samples=0)
            total += sum(int(b or 0) for b in pipe.execute())
        count += len(keys)
    return count, total


def cold_start(decider: Decider, client: Any, keys: Keys, tables: int) -> float:
    """Decider steps until every table has stats (its first pass full-scans each table)."""
    t0 = time.perf_counter()
    for _ in range(100):
        decider.step(block_ms=None)
        if client.scard(keys.known_tables) >= tables:
            break
    else:
        raise RuntimeError(f"the decider saw {client.scard(keys.known_tables)} of {tables} tables")
    return time.perf_counter() - t0


def memory(client: Any, keys: Keys, w: SyntheticWarehouse, before: int) -> dict[str, Any]:
    delta = used_memory(client) - before
    prefix = keys.prefix
    n_stats, stats_b = memory_usage(client, f"{prefix}:{{t:*}}:stats")
    _, state_b = memory_usage(client, f"{prefix}:{{t:*}}:state")
    known_b = int(client.memory_usage(keys.known_tables, samples=0) or 0)
    encodings = Counter(
        client.object("encoding", keys.stats(name)).decode()
        for name in w.names[:: max(1, len(w.names) // 50)]
    )
    parts = w.partitions
    return {
        "mem_stats": stats_b / parts,
        "mem_all": (stats_b + state_b + known_b) / parts,
        "mem_info": delta / parts,
        "mem_keys": f"{n_stats:,}; {'/'.join(sorted(encodings))}",
    }


# ---- 2. file events per second -------------------------------------------------------------
def make_commits(w: SyntheticWarehouse, names: Sequence[str], commits: int, seed: int) -> None:
    """4 of 5 commits add 4 small files to each of 2 partitions (a streaming writer), every
    5th replaces a partition's small files by one (an actor's compaction)."""
    rng = random.Random(seed)
    for name in names:
        table, touched = w.table(name), []
        for c in range(commits):
            if c % 5 == 4 and touched:
                table.compact(touched[-1])
            else:
                parts = rng.sample(range(w.partitions_per_table), 2)
                touched += parts
                table.append_small(parts, rng, files=4)


def apply_rate(store: RollingStats, w: SyntheticWarehouse, names: Sequence[str]) -> list[float]:
    """[events/s wall clock, events/s of this process's CPU, events per snapshot]."""
    events = snaps = 0
    t0, c0 = time.perf_counter(), time.process_time()
    for name in names:
        result = catch_up(store, name, w.table(name), w.target)
        assert not result.full_scan, result.reason
        events += result.file_events
        snaps += result.snapshots_applied
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    for name in names[:3]:  # the rolling stats are exact: equal to a full scan
        assert store.partitions(name) == full_stats(w.table(name), w.target), name
    return [events / wall, events / max(cpu, 1e-9), events / max(snaps, 1)]


def file_events(
    store: RollingStats, w: SyntheticWarehouse, chains: Sequence[str], singles: Sequence[str]
) -> dict[str, Any]:
    """Each figure the median of 3 disjoint groups of tables."""
    make_commits(w, chains, CHAIN, seed=5)
    make_commits(w, singles, 1, seed=6)
    chain = [apply_rate(store, w, chains[i::3]) for i in range(3)]
    single = [apply_rate(store, w, singles[i::3]) for i in range(3)]
    med = lambda runs, i: statistics.median(r[i] for r in runs)  # noqa: E731
    return {
        "ev_chain": med(chain, 0),
        "ev_chain_cpu": med(chain, 1),
        "ev_per_snap": med(chain, 2),
        "ev_single": med(single, 0),
    }


# ---- 3. queue ops per second ---------------------------------------------------------------
def timed(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def queue_ops(q: RedisQueue, n: int, batch: int) -> dict[str, float]:
    """n items through enqueue, dispatch, dequeue and ack: one item per call, then batches."""
    tables = [f"bench.q{i:03d}" for i in range(50)]
    one, many = (
        [
            ActionItem.new(tables[i % 50], f"p={tag}{i}", "merge", 1, 1000, 1.0, 0.0)
            for i in range(n)
        ]
        for tag in "ab"
    )
    chunks = lambda xs: [xs[i : i + batch] for i in range(0, len(xs), batch)]  # noqa: E731
    leases: list[Any] = []
    t_one = [
        timed(lambda: [q.enqueue(it, 1.0) for it in one]),
        timed(lambda: [q.dispatch(it.table) for it in one]),
        timed(lambda: leases.extend(q.dequeue(1.0, 60) for _ in one)),
        timed(lambda: [q.ack(x.item.id, x.token) for x in leases]),
    ]
    leases.clear()
    t_many = [
        timed(lambda: [q.enqueue_many(c, 1.0) for c in chunks(many)]),
        timed(lambda: [q.dispatch_many([it.table for it in c]) for c in chunks(many)]),
        timed(lambda: [leases.extend(q.dequeue_many(1.0, 60, batch)) for _ in chunks(many)]),
        timed(lambda: [q.ack_many([(x.item.id, x.token) for x in c]) for c in chunks(leases)]),
    ]
    assert len(leases) == n and q.depth() == {"pending": 0, "ready": 0, "inflight": 0, "dead": 0}
    out = {f"q_{op}_one": n / t for op, t in zip(OPS, t_one, strict=True)}
    out |= {f"q_{op}_many": n / t for op, t in zip(OPS, t_many, strict=True)}
    out["q_one"] = 4 * n / sum(t_one)
    out["q_many"] = 4 * n / sum(t_many)
    out["q_mixed"] = 4 * n / (t_many[0] + t_many[1] + t_one[2] + t_one[3])
    return out


def redis_benchmark(host: str, port: int, db: int, key: str, n: int) -> float:
    """``redis-benchmark -c 1`` SET and GET of ``key`` (in the queue's slot): mean req/s."""
    rates = []
    for command in (["SET", key, "x"], ["GET", key]):
        out = subprocess.run(
            ["redis-benchmark", "-q", "-c", "1", "-n", str(n), "-h", host, "-p", str(port)]
            + ["--dbnum", str(db), *command],
            capture_output=True,
            text=True,
            timeout=300,
        ).stdout.replace("\r", "\n")
        rates += [
            float(line.split(": ")[-1].split()[0])
            for line in out.splitlines()
            if "requests per second" in line
        ]
    return statistics.mean(rates) if rates else float("nan")


def queue_figures(client: Any, keys: Keys, url: str, cluster: bool, quick: bool) -> dict[str, Any]:
    """Three rounds of redis-benchmark then the queue, back to back (the machine is shared:
    each ratio compares figures taken seconds apart); the median of each figure."""
    if cluster:  # the queue's one slot lives on one master: that is "the same server"
        node = client.get_node_from_key(keys.ready)
        host, port, db = node.host, int(node.port), 0
    else:
        parts = urlsplit(url)
        host, port = parts.hostname or "127.0.0.1", parts.port or 6379
        db = int((parts.path or "/0").strip("/") or 0)
    key = keys.ready.replace(":ready", ":redis-benchmark")
    q = RedisQueue(client, keys)
    rounds = []
    for _ in range(3):
        rb = redis_benchmark(host, port, db, key, 10_000 if quick else 50_000)
        got = queue_ops(q, 1000 if quick else 5000, batch=100)
        got |= {"rb": rb} | {f"q_ratio_{k}": got[f"q_{k}"] / rb for k in ("one", "many", "mixed")}
        rounds.append(got)
    client.delete(key)
    return {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}


# ---- 4. commit -> enqueue latency -----------------------------------------------------------
class StampedQueue(RedisQueue):
    """The real queue; records when each item's enqueue returned (the item is in Redis)."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.stamps: dict[str, float] = {}

    def enqueue(self, item: ActionItem, now: float, force: bool = False) -> int:
        got = super().enqueue(item, now, force)
        self.stamps.setdefault(item.id, time.perf_counter())
        return got

    def enqueue_many(
        self, items: Sequence[ActionItem], now: float, force: bool = False
    ) -> list[int]:
        got = super().enqueue_many(items, now, force)
        stamp = time.perf_counter()
        for item in items:
            self.stamps.setdefault(item.id, stamp)
        return got


def publish(
    w: SyntheticWarehouse,
    decider: Decider,
    targets: list[tuple[str, int]],
    per_minute: float,
    seconds: float,
    committed: dict[str, float],
) -> None:
    """Commit at a steady rate: 2 small files to a fresh partition, then the commit event."""
    interval, start = 60.0 / per_minute, time.perf_counter()
    for i, (name, p) in enumerate(targets):
        if i * interval >= seconds:
            return
        time.sleep(max(0.0, start + i * interval - time.perf_counter()))
        snapshot = w.table(name).commit([(p, 8 * MiB), (p, 8 * MiB)])
        committed[ActionItem.make_id(name, partition_key(p), "merge")] = time.perf_counter()
        decider.events.publish(name, snapshot)


def latency(
    decider: Decider,
    queue: StampedQueue,
    w: SyntheticWarehouse,
    eligible: Sequence[str],
    per_minute: float,
    seconds: float,
) -> dict[str, Any]:
    rng = random.Random(9)
    count = int(per_minute * seconds / 60) + 1
    pairs = {
        (rng.choice(eligible), rng.randrange(w.partitions_per_table)) for _ in range(2 * count)
    }
    targets = sorted(pairs)[:count]
    rng.shuffle(targets)
    committed: dict[str, float] = {}
    steps: list[tuple[float, bool | None]] = []  # (seconds, a full poll?) while publishing
    publishing, stop, failed = threading.Event(), threading.Event(), []
    block_ms = int(decider.s.poll_seconds * 1000)

    def loop() -> None:
        try:
            while not stop.is_set():
                t0 = time.perf_counter()
                report = decider.step(block_ms=block_ms)
                if publishing.is_set():
                    steps.append((time.perf_counter() - t0, getattr(report, "polled", None)))
        except Exception as e:  # reported by the main thread
            failed.append(e)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    publishing.set()
    publish(w, decider, targets, per_minute, seconds, committed)
    publishing.clear()
    deadline = time.perf_counter() + max(30.0, 3 * max((t for t, _ in steps), default=0.0))
    while time.perf_counter() < deadline and not failed and set(committed) - set(queue.stamps):
        time.sleep(0.05)
    stop.set()
    thread.join(timeout=block_ms / 1000 + 60)
    if failed:
        raise failed[0]
    lat = [max(0.0, queue.stamps[i] - t) for i, t in committed.items() if i in queue.stamps]
    polls = [t for t, polled in steps if polled]
    took = [t for t, _ in steps]
    return {
        "lat_p50": pct(lat, 0.5) * 1000,
        "lat_p99": pct(lat, 0.99) * 1000,
        "lat_max": max(lat, default=float("nan")) * 1000,
        "lat_n": f"{len(lat)}/{len(committed)}",
        "steps": f"{len(steps)}; {pct(took, 0.5):.2f} / {max(took, default=0):.2f} s",
        "polls": f"{len(polls)}; {pct(polls, 0.5):.2f} s" if polls else "-",
    }


# ---- 5. fairness ----------------------------------------------------------------------------
def fairness(
    client: Any, home: str, url: str, prefix: str, cluster: bool, rounds: int
) -> dict[str, Any]:
    """12 tables, weights 1/2/4 (4 tables each), 60 equal items each; the Decider's fair
    dispatch fills a ready set of 8 per step, "actors" drain it after every step."""
    w = SyntheticWarehouse(12, 60, namespace="fair", seed=7, small_share=0.0)
    weight = {name: (1, 2, 4)[i % 3] for i, name in enumerate(w.names)}
    for name in w.names:  # two 8 MiB files in every partition: 60 items of 16 MiB each
        w.table(name).commit([(p, 8 * MiB) for p in range(60) for _ in range(2)])
    tables = {n: {"weight": weight[n], "batch_max_items": 4} for n in w.names}
    cfg = make_cfg(home, url, prefix, cluster, tables=tables)
    keys = Keys(prefix)
    settings = DeciderSettings(ready_depth=8, quantum_bytes=16 * MiB)
    decider = open_decider(cfg, w.catalog(), client, settings=settings, tables=lambda: w.names)
    queue = RedisQueue(client, keys)
    budget = budget_of(cfg)
    got: Counter[int] = Counter()
    size: Counter[int] = Counter()
    total = rounds * 4 * (1 + 2 + 4)  # a DWRR round: one quantum per unit of weight
    for _ in range(10 * total):
        decider.step(block_ms=None)
        leases = []
        while batch := queue.dequeue_batch(time.time(), 60, budget):
            leases += batch
        for lease in leases:
            got[weight[lease.item.table]] += 1
            size[weight[lease.item.table]] += lease.item.cost_bytes
        queue.ack_many([(lease.item.id, lease.token) for lease in leases])
        if sum(got.values()) >= total:
            break
    backlog = queue.pending_by_table()
    out: dict[str, Any] = {"fair_n": sum(got.values()), "fair_backlogged": f"{len(backlog)}/12"}
    for wt in (1, 2, 4):
        out[f"fair_{wt}"] = 100 * got[wt] / max(1, sum(got.values()))
        out[f"fair_bytes_{wt}"] = 100 * size[wt] / max(1, sum(size.values()))
    return out


# ---- one topology -------------------------------------------------------------------------
def run_topology(
    label: str, url: str, cluster: bool, args: argparse.Namespace, home: str
) -> dict[str, Any]:
    prefix = f"icefloe-scale-{os.getpid()}"
    cfg = make_cfg(home, url, prefix, cluster)
    client = connect(cfg, block_seconds=DeciderSettings().poll_seconds)  # the service's client
    keys = Keys(prefix)
    w = SyntheticWarehouse(args.tables, args.partitions // args.tables, seed=1)
    n_chain, n_single = (100, 100) if args.quick else (500, 2000)
    chains, singles = w.names[-(n_chain + n_single) : -n_single], w.names[-n_single:]
    eligible = w.names[: -(n_chain + n_single)]
    try:
        print(f"[{label}] first decider pass over {len(w.names):,} tables ...", flush=True)
        before = used_memory(client)
        queue = StampedQueue(client, keys)
        settings = DeciderSettings(ready_depth=0)  # enqueue only: dispatch is figure 5
        adapters = replace(open_state(cfg, client, settings), queue=queue)
        catalog = w.catalog()
        decider = Decider(
            cfg, catalog, adapters, settings, clean=cleaner(catalog), tables=lambda: w.names
        )
        out: dict[str, Any] = {"load": os.getloadavg()[0]}  # the machine may be shared
        out["cold_s"] = cold_start(decider, client, keys, len(w.names))
        out |= memory(client, keys, w, before)
        print(f"[{label}] commit->enqueue latency for {args.seconds:.0f} s ...", flush=True)
        out |= latency(decider, queue, w, eligible, args.per_minute, args.seconds)
        print(f"[{label}] file events, queue ops, fairness ...", flush=True)
        out |= file_events(RollingStats(client, keys), w, chains, singles)
        out |= queue_figures(client, Keys(f"{prefix}-queue"), url, cluster, args.quick)
        out |= fairness(client, home, url, f"{prefix}-fair", cluster, 4 if args.quick else 8)
        return out
    finally:
        for node in primaries(client):
            pipe = node.pipeline(transaction=False)
            for key in node.scan_iter(match=f"{prefix}*", count=1000):
                pipe.unlink(key)  # one key a command: a cluster node refuses cross-slot ones
            pipe.execute()
        client.close()


# ---- report ---------------------------------------------------------------------------------
def at_most(goal: float) -> Callable[[float], bool]:
    return lambda v: v <= goal


def at_least(goal: float) -> Callable[[float], bool]:
    return lambda v: v >= goal


def near(share: float) -> Callable[[float], bool]:  # within 10% of the weight's share
    return lambda v: abs(v / share - 1) <= 0.1


Row = tuple[str, str, str, str, Callable[[float], bool] | None]
ROWS: list[Row] = [
    ("machine load average (1 min) at the start", "load", "{:.1f}", "", None),
    ("[1] Redis B/partition: MEMORY USAGE, stats", "mem_stats", "{:.1f}", "<= 100", at_most(100)),
    ("    + table state hashes + known-tables set", "mem_all", "{:.1f}", "<= 100", at_most(100)),
    ("    INFO used_memory delta (all keys) / part.", "mem_info", "{:.1f}", "", None),
    ("    stats hashes; their encoding", "mem_keys", "{}", "", None),
    ("    first decider pass (full scans), s", "cold_s", "{:.1f}", "", None),
    (
        f"[2] file events/s, chains of {CHAIN} commits",
        "ev_chain",
        "{:,.0f}",
        ">= 20,000",
        at_least(2e4),
    ),
    ("    per CPU-second of the bench process", "ev_chain_cpu", "{:,.0f}", "", None),
    ("    file events per snapshot", "ev_per_snap", "{:.1f}", "", None),
    ("    file events/s, one commit per table", "ev_single", "{:,.0f}", "", None),
    ("[3] queue ops/s, one item per call", "q_one", "{:,.0f}", "", None),
    ("    batches of 100 (*_many)", "q_many", "{:,.0f}", "", None),
    ("    decider batches, actors one by one", "q_mixed", "{:,.0f}", "", None),
    ("    redis-benchmark -c 1 SET/GET, same server", "rb", "{:,.0f}", "", None),
    ("    ratio: batches / redis-benchmark", "q_ratio_many", "{:.2f}", ">= 0.5", at_least(0.5)),
    ("    ratio: mixed / redis-benchmark", "q_ratio_mixed", "{:.2f}", ">= 0.5", at_least(0.5)),
    ("    ratio: one per call / redis-benchmark", "q_ratio_one", "{:.2f}", ">= 0.5", at_least(0.5)),
    ("    k ops/s one per call: enq/disp/deq/ack", "q_parts_one", "{}", "", None),
    ("    k ops/s batched: enq/disp/deq/ack", "q_parts_many", "{}", "", None),
    ("[4] commit->enqueue p50, ms", "lat_p50", "{:,.0f}", "", None),
    ("    commit->enqueue p99, ms", "lat_p99", "{:,.0f}", "< 2,000", lambda v: v < 2000),
    ("    commit->enqueue max, ms", "lat_max", "{:,.0f}", "", None),
    ("    items enqueued / commits", "lat_n", "{}", "", None),
    ("    decider steps; median / longest step", "steps", "{}", "", None),
    ("    of which full polls; median poll", "polls", "{}", "", None),
    ("[5] dispatch share, weight 1 (14.3%)", "fair_1", "{:.1f}%", "~ 14.3%", near(100 / 7)),
    ("    weight 2 (28.6%)", "fair_2", "{:.1f}%", "~ 28.6%", near(200 / 7)),
    ("    weight 4 (57.1%)", "fair_4", "{:.1f}%", "~ 57.1%", near(400 / 7)),
    ("    byte share, weights 1/2/4", "fair_bytes", "{}", "", None),
    ("    dispatches; tables still backlogged", "fair_info", "{}", "", None),
]


def derive(f: dict[str, Any]) -> None:
    for kind in ("one", "many"):
        f[f"q_parts_{kind}"] = "/".join(f"{f[f'q_{op}_{kind}'] / 1000:.1f}" for op in OPS)
    f["fair_bytes"] = "/".join(f"{f[f'fair_bytes_{w}']:.1f}" for w in (1, 2, 4))
    f["fair_info"] = f"{f['fair_n']}; {f['fair_backlogged']}"


def report(results: dict[str, dict[str, Any]]) -> None:
    labels = list(results)
    print()
    print(f"{'':48}" + "".join(f"{label:>20}" for label in labels) + f"  {'goal':>10}  met")
    for title, key, fmt, goal, ok in ROWS:
        values = [results[label].get(key) for label in labels]
        cells = "".join(f"{'-' if v is None else fmt.format(v):>20}" for v in values)
        met = (
            ""
            if ok is None
            else " ".join("yes" if v is not None and ok(v) else "NO" for v in values)
        )
        print(f"{title:48}{cells}  {goal:>10}  {met}")
    for label, f in results.items():
        print(
            f"scale-summary[{label}] mem_b_per_partition={f['mem_all']:.1f} "
            f"events_per_s={f['ev_chain']:.0f} queue_vs_redis_benchmark={f['q_ratio_many']:.2f} "
            f"enqueue_p99_ms={f['lat_p99']:.0f} fair_w4_share={f['fair_4']:.1f}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--redis", default="redis://127.0.0.1:6379/11", help="the single Redis")
    ap.add_argument(
        "--partitions", type=int, default=None, help="default 1,000,000 (quick: 50,000)"
    )
    ap.add_argument("--tables", type=int, default=None, help="default: partitions / 100")
    ap.add_argument(
        "--seconds", type=float, default=None, help="latency run (default 60, quick 10)"
    )
    ap.add_argument("--per-minute", type=float, default=2000.0, help="commits a minute")
    ap.add_argument("--only", choices=["single", "cluster"], default=None)
    ap.add_argument("--quick", action="store_true", help="about a minute: 50,000 partitions")
    args = ap.parse_args()
    args.partitions = args.partitions or (50_000 if args.quick else 1_000_000)
    args.tables = args.tables or max(1, args.partitions // 100)
    args.seconds = args.seconds or (10.0 if args.quick else 60.0)
    if args.tables < 3000 and not args.quick:
        ap.error("--tables must leave room: at least 3,000 (or use --quick)")
    print(
        f"scale bench: {args.tables:,} tables x {args.partitions // args.tables} partitions = "
        f"{args.tables * (args.partitions // args.tables):,} partitions; {os.cpu_count()} cores, "
        f"load {os.getloadavg()[0]:.1f}"
    )
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="scale-bench-") as home:
        if args.only != "cluster":
            results["single"] = run_topology("single", args.redis, False, args, home)
        if args.only != "single":
            cluster = LocalCluster(Path(home) / "cluster")
            try:
                cluster.start()
                results["cluster (3)"] = run_topology("cluster", cluster.url, True, args, home)
            finally:
                cluster.stop()
    for figures in results.values():
        derive(figures)
    report(results)


if __name__ == "__main__":
    main()
