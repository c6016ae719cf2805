"""The demo's rounds: a stretch of streaming ingest, then compaction on both sides.

Every table has a twin, its copy (:mod:`icefloe.app.demo.copies`: the very same data files
every commit). After a round's ingest, icefloe's decider and two actor threads converge
the tables while Iceberg's ``rewrite_data_files`` (same target) compacts the copies.
Both sides are then read back from Iceberg metadata: the files and bytes each rewrote,
files, entropy and rows after, and metadata health (the current snapshot's manifests and
the snapshot count).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from icefloe.base.catalog import spark_table_name
from icefloe.base.config import Config, DeciderSettings
from icefloe.base.keys import Keys
from icefloe.base.redis_client import connect
from icefloe.base.tablestats import current_partitions
from icefloe.jobs.history.flush import flush
from icefloe.jobs.maintenance.orphans import cleaner
from icefloe.optimizer import stats_from_sizes
from icefloe.service.actor.loop import Actor
from icefloe.service.actor.runners import spark_runners
from icefloe.service.decider.wiring import open_decider
from icefloe.service.observe.status import scans_avoided_pct
from icefloe.service.observe.tables import plan_ms
from icefloe.state.open import open_state
from icefloe.state.queue import budget_of

Say = Callable[[str], None]


@dataclass(frozen=True)
class View:
    """A table's current data files (partition → path → size), rows and metadata health."""

    files: dict[str, dict[str, int]]
    rows: int
    manifests: int
    snapshots: int
    plan_ms: float  # a fresh reader's planning: load the table, plan every scan task

    def sizes(self) -> dict[str, list[int]]:
        return {key: list(files.values()) for key, files in self.files.items()}


def read_view(catalog: Any, name: str) -> View:
    """One table's :class:`View`, from metadata only."""
    table = catalog.load_table(tuple(name.split(".")))
    parts = current_partitions(table)
    snap = table.current_snapshot()
    return View(
        files={p.key: dict(zip(p.paths, p.sizes, strict=True)) for p in parts},
        rows=sum(sum(p.records) for p in parts),
        manifests=len(snap.manifests(table.io)) if snap is not None else 0,
        snapshots=len(table.metadata.snapshots),
        plan_ms=plan_ms(catalog, name),
    )


def summarize(sizes: Mapping[str, Iterable[int]], target: int) -> dict[str, Any]:
    """Files, bytes, partitions and mean/max partition MSE of partition → file sizes."""
    stats = [stats_from_sizes(s, target) for s in sizes.values()]
    stats = [s for s in stats if s.n]
    mses = [s.mse for s in stats]
    return {
        "files": sum(s.n for s in stats),
        "bytes": sum(s.total_bytes for s in stats),
        "partitions": len(stats),
        "mean_mse": sum(mses) / len(mses) if mses else 0.0,
        "max_mse": max(mses, default=0.0),
    }


def state(view: View, target: int) -> dict[str, Any]:
    """A table's figures after a round: :func:`summarize` plus rows and metadata health."""
    return summarize(view.sizes(), target) | {
        "rows": view.rows,
        "manifests": view.manifests,
        "snapshots": view.snapshots,
        "plan_ms": view.plan_ms,
    }


def iceberg_rewrite(
    spark: Any, cfg: Config, name: str, target: int, strategy: str = "binpack"
) -> dict[str, Any]:
    """Iceberg's ``rewrite_data_files`` with ``target`` and ``strategy`` (``binpack``, its
    default, or ``sort``: the table's write order): what it rewrote."""
    full = spark_table_name(cfg, name).replace("`", "")
    begin = time.monotonic()
    row = spark.sql(
        f"CALL {cfg.catalog.name}.system.rewrite_data_files(table => '{full}', "
        f"strategy => '{strategy}', options => map('target-file-size-bytes', '{target}'))"
    ).collect()[0]
    return {
        "files_rewritten": int(row["rewritten_data_files_count"]),
        "bytes_rewritten": int(row["rewritten_bytes_count"]),
        "files_added": int(row["added_data_files_count"]),
        "seconds": round(time.monotonic() - begin, 1),
    }


class Icefloe:
    """icefloe's side: one decider (rolling entropy in Redis) and a pool of two actor
    threads, run until the decider finds nothing more to do."""

    def __init__(self, cfg: Config, spark: Any, catalog: Any) -> None:
        self.client = connect(cfg)
        self.settings = DeciderSettings(poll_seconds=0.5, lease_seconds=120.0)
        self.keys = Keys.for_config(cfg)
        self.cfg, self.catalog = cfg, catalog
        self.decider = open_decider(cfg, catalog, self.client, settings=self.settings)
        self.runner, self.batch_runner = spark_runners(cfg, spark)
        self.budget = budget_of(cfg)
        self.results: list[dict[str, Any]] = []
        self.passes = 0
        self._lock = threading.Lock()

    def _record(self, entry: dict[str, Any]) -> None:
        with self._lock:
            self.results.append(entry)
        self.decider.ledger.record_action(
            entry, self.settings.recent_cap, history=self.cfg.history.enabled
        )

    def flush_history(self) -> int:
        """Every record of the demo's actions appended to the history table now (the
        leader does it every ``history.flush_seconds``; the demo ends sooner)."""
        token = self.decider.leader.token
        return flush(self.cfg, self.catalog, self.decider.ledger, token)

    def _queued(self) -> int:
        depth = self.decider.queue.depth()
        return sum(depth.get(k, 0) for k in ("pending", "ready", "inflight"))

    def converge(self, say: Say, max_passes: int = 12) -> list[dict[str, Any]]:
        """Decider passes (each polls every table), each followed by the actors while
        anything is queued, until the leader's pass queues nothing; the actions this took.
        A leader lease a previous run left is waited out (it lapses)."""
        first, fruitless, passes = len(self.results), 0, 0
        waited, patience = 0.0, 2 * self.settings.leader_ttl_seconds
        while passes < max_passes and fruitless < 3:
            self.passes += 1
            report = self.decider.step(block_ms=None)
            passes += report.leader
            queued = self._queued()
            if queued:
                say(f"  decider: {queued} action(s) queued; two actors at work")
                ran = len(self.results)
                self._actor_pool()
                ok = any(r.get("ok") for r in self.results[ran:])
                fruitless = 0 if ok else fruitless + 1
                if not ok:
                    say("[red]  no action succeeded in this pass[/]")
            elif report.leader:
                break
            elif waited < patience:  # another decider holds the leader lease
                time.sleep(self.settings.poll_seconds)
                waited += self.settings.poll_seconds
            else:
                say(f"[red]  decider {report.holder} holds the leader lease: no dispatch[/]")
                break
        return self.results[first:]

    def _actor_pool(self) -> None:
        """Two actor threads on the queue until it has been empty for half a second."""
        s = self.settings
        state = open_state(self.cfg, self.client, s)
        actors = [
            Actor(
                state.queue,
                self.runner,
                lease_seconds=s.lease_seconds,
                recorder=self._record,
                intents=state.intents,
                clean=cleaner(self.catalog),
                batch_runner=self.batch_runner,
                budget=self.budget,
            )
            for _ in range(2)
        ]
        threads = [threading.Thread(target=a.run, kwargs={"idle_exit": 0.5}) for a in actors]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    def scans_avoided_pct(self) -> float:
        return float(scans_avoided_pct(self.decider.ledger.counters()))


def icefloe_work(entries: list[dict[str, Any]], table: str) -> dict[str, int]:
    """Bytes and files one table's successful actions rewrote, and its actions."""
    mine = [e for e in entries if e.get("table") == table]
    done = [e for e in mine if e.get("ok")]
    return {
        "bytes_rewritten": sum(int(e.get("bytes_rewritten") or 0) for e in done),
        "files_rewritten": sum(int(e.get("files_rewritten") or 0) for e in done),
        "actions": len(mine),
    }


def combine(
    per_table: Mapping[str, Mapping[str, Any]], targets: Mapping[str, int]
) -> dict[str, Any]:
    """One side's figures over every table: sums, and the mean partition MSE as a share
    of each table's T²."""
    rows = list(per_table.items())
    parts = sum(r["partitions"] for _, r in rows)
    weighted = sum(r["mean_mse"] / targets[t] ** 2 * r["partitions"] for t, r in rows)
    out: dict[str, Any] = {
        k: sum(r[k] for _, r in rows)
        for k in ("bytes_rewritten", "files_rewritten", "files", "bytes", "rows")
        + ("manifests", "snapshots", "plan_ms")
    }
    out["mean_mse_t2"] = weighted / parts if parts else 0.0
    out["max_mse_t2"] = max((r["max_mse"] / targets[t] ** 2 for t, r in rows), default=0.0)
    return out
