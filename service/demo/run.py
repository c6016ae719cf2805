"""``icefloe demo``: the whole loop on a local warehouse, side by side with Iceberg.

1. streaming ingest builds three small-file tables (``service.demo.ingest``);
2. each table is cloned (``register_table`` on its current metadata: same data files, its
   own history) for Iceberg's ``rewrite_data_files`` baseline;
3. an ingest thread keeps committing small files — to both copies, the same batches —
   while the decider (rolling entropy in Redis) and a pool of two actor threads converge
   the warehouse;
4. Iceberg's ``rewrite_data_files`` (default binpack, same target) runs on the clones;
5. both results are read back from Iceberg metadata and printed side by side, with the
   row counts checked against what was ingested; a chart goes to ``.demo/``;
6. skew: a planted hot key is detected, and the salted join is checked against the plain
   join (identical rows) with its stage max/median task time.

The decider state stays in Redis under the configured prefix, so ``icefloe status``
explains what the demo left behind (the default config manages the ``demo`` namespace).
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from service.config import PROJECT_ROOT, Config, ManagedConfig
from service.demo.ingest import TableSpec, batch, demo_tables, ingest
from service.demo.skew import skew_section
from service.tablestats import current_partitions

MIB = 1 << 20
Say = Callable[[str], None]


def table_state(catalog: Any, name: str, target: int) -> dict[str, Any]:
    """Files, bytes, rows, sizes and mean/max partition MSE of a table, from metadata."""
    table = catalog.load_table(tuple(name.split(".")))
    parts = current_partitions(table)
    mses = [p.stats(target).mse for p in parts]
    return {
        "files": sum(len(p.sizes) for p in parts),
        "bytes": sum(sum(p.sizes) for p in parts),
        "rows": sum(sum(p.records) for p in parts),
        "sizes": [s for p in parts for s in p.sizes],
        "mean_mse": sum(mses) / len(mses) if mses else 0.0,
        "max_mse": max(mses, default=0.0),
        "partitions": len(parts),
    }


def clone_table(catalog: Any, source: str, dest: str) -> None:
    """A copy sharing ``source``'s data files, with a history of its own."""
    src = catalog.load_table(tuple(source.split(".")))
    ident = tuple(dest.split("."))
    catalog.create_namespace_if_not_exists(ident[:-1])
    if catalog.table_exists(ident):
        catalog.drop_table(ident)  # drop, never purge: the files belong to the source too
    catalog.register_table(ident, src.metadata_location)


class Streamer(threading.Thread):
    """Keeps appending small batches to every table of a group (the same batch to each)."""

    def __init__(
        self,
        catalog: Any,
        groups: list[tuple[TableSpec, list[str]]],
        commits: int,
        pause: float,
        seed: int,
    ) -> None:
        super().__init__(daemon=True, name="ingest")
        self.catalog, self.groups, self.commits, self.pause = catalog, groups, commits, pause
        self.rng = random.Random(seed)
        self.rows: dict[str, int] = {}
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            from service.demo.ingest import BYTES_PER_ROW, EPOCH_DAY

            for i in range(self.commits):
                for spec, names in self.groups:
                    day = EPOCH_DAY.fromordinal(EPOCH_DAY.toordinal() + spec.days - 1)
                    rows = max(1, int(self.rng.uniform(*spec.small_file_bytes)) // BYTES_PER_ROW)
                    data = batch(self.rng, day, spec.regions, rows, 10**9 + i * 10**6)
                    for name in names:
                        self.catalog.load_table(tuple(name.split("."))).append(data)
                        self.rows[name] = self.rows.get(name, 0) + data.num_rows
                time.sleep(self.pause)
        except BaseException as e:  # reported by the demo, never swallowed
            self.error = e


def demo_config(cfg: Config, namespace: str) -> Config:
    """The demo manages its own namespace (on top of whatever the config manages)."""
    namespaces = tuple(dict.fromkeys((*cfg.managed.namespaces, namespace)))
    return replace(cfg, managed=ManagedConfig(namespaces=namespaces, tables=cfg.managed.tables))


def converge(
    cfg: Config,
    spark: Any,
    catalog: Any,
    tables: list[str],
    streamer: Streamer,
    say: Say,
    started: float,
    timeline: list[tuple[float, str, float]],
    targets: dict[str, int],
    max_rounds: int = 40,
) -> dict[str, Any]:
    """Decider passes and an actor pool of two threads until ingest stops and no work is left."""
    from service.actor import spark_runner
    from service.config import DeciderSettings
    from service.decider import Decider
    from service.keys import Keys
    from service.redis_client import connect
    from service.status import record_action

    client = connect(cfg)
    settings = DeciderSettings(poll_seconds=0.5, lease_seconds=120.0)
    keys = Keys.for_config(cfg)
    decider = Decider(cfg, client, catalog, settings)
    runner = spark_runner(cfg, spark)
    results: list[dict[str, Any]] = []
    lock = threading.Lock()

    def record(entry: dict[str, Any]) -> None:
        with lock:
            results.append(entry)
        record_action(client, keys, entry, settings.recent_cap)

    def actor_pool() -> None:
        run_actor_pool(client, keys, catalog, runner, settings, record)

    rounds = fruitless = 0
    while rounds < max_rounds and fruitless < 3:
        rounds += 1
        report = decider.step(block_ms=None)
        queued = sum(decider.queue.depth().values())
        say(
            f"round {rounds}: decider applied snapshots, {queued} action(s) queued; "
            f"ingest {'running' if streamer.is_alive() else 'done'}"
        )
        if queued:
            ran = len(results)
            actor_pool()
            ok = sum(1 for r in results[ran:] if r.get("ok"))
            fruitless = 0 if ok else fruitless + 1
            if not ok:
                say("[red]no action succeeded this round[/]")
        for name in tables:
            state = table_state(catalog, name, targets[name])
            timeline.append((time.monotonic() - started, name, state["mean_mse"]))
        if not streamer.is_alive() and not queued and report.leader:
            break
        if not queued:
            time.sleep(0.5)
    done = [r for r in results if r.get("ok")]
    return {
        "rounds": rounds,
        "actions": len(results),
        "bytes_rewritten": {
            t: sum(int(r.get("bytes_rewritten") or 0) for r in done if r.get("table") == t)
            for t in tables
        },
        "actions_by_table": {t: sum(1 for r in results if r.get("table") == t) for t in tables},
        "scans_avoided_pct": _scans_avoided(client, keys),
    }


def run_actor_pool(
    client: Any, keys: Any, catalog: Any, runner: Any, settings: Any, record: Any
) -> None:
    """Two actor threads on the queue until it has been empty for half a second."""
    from jobs.orphans import cleaner
    from service.actor import Actor
    from service.intents import RedisIntents
    from service.queue import RedisQueue

    queue = RedisQueue(client, keys, settings.max_attempts, settings.aging_seconds)
    actors = [
        Actor(
            queue,
            runner,
            lease_seconds=settings.lease_seconds,
            recorder=record,
            intents=RedisIntents(client, keys),
            clean=cleaner(catalog),
        )
        for _ in range(2)
    ]
    threads = [threading.Thread(target=a.run, kwargs={"idle_exit": 0.5}) for a in actors]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def _scans_avoided(client: Any, keys: Any) -> float:
    from service.status import counters, scans_avoided_pct

    return float(scans_avoided_pct(counters(client, keys)))


def iceberg_baseline(spark: Any, cfg: Config, name: str, target: int) -> dict[str, Any]:
    from service.catalog import spark_table_name

    full = spark_table_name(cfg, name).replace("`", "")
    begin = time.monotonic()
    row = spark.sql(
        f"CALL {cfg.catalog.name}.system.rewrite_data_files(table => '{full}', "
        f"options => map('target-file-size-bytes', '{target}'))"
    ).collect()[0]
    return {
        "files_rewritten": int(row["rewritten_data_files_count"]),
        "bytes_rewritten": int(row["rewritten_bytes_count"]),
        "files_added": int(row["added_data_files_count"]),
        "seconds": round(time.monotonic() - begin, 1),
    }


def _ingest_tables(
    catalog: Any, specs: list[TableSpec], copies: dict[str, str], seed: int, say: Say
) -> tuple[dict[str, int], dict[str, dict[str, Any]]]:
    """Ingest each demo table and clone it for the Iceberg baseline: the target file size of
    every table and clone, and the state of each table before icefloe works."""
    targets: dict[str, int] = {}
    before: dict[str, dict[str, Any]] = {}
    for i, spec in enumerate(specs):
        say(
            f"ingesting {spec.name}: {spec.commits} streaming commits, "
            f"{spec.late_share:.0%} of them late"
        )
        ingest(catalog, spec, seed=seed + i)
        clone_table(catalog, spec.name, copies[spec.name])
        targets[spec.name] = targets[copies[spec.name]] = spec.target_file_size_bytes
        before[spec.name] = table_state(catalog, spec.name, spec.target_file_size_bytes)
    return targets, before


def _comparison(
    catalog: Any,
    spec: TableSpec,
    copy: str,
    before: dict[str, Any],
    expected: int,
    loop: dict[str, Any],
    baseline: dict[str, Any],
) -> dict[str, Any]:
    """One table's row of the report: before, after icefloe, after Iceberg's rewrite."""
    ours = table_state(catalog, spec.name, spec.target_file_size_bytes)
    theirs = table_state(catalog, copy, spec.target_file_size_bytes)
    return {
        "table": spec.name,
        "target_file_size_bytes": spec.target_file_size_bytes,
        "before": {k: v for k, v in before.items() if k != "sizes"},
        "icefloe": {k: v for k, v in ours.items() if k != "sizes"}
        | {
            "bytes_rewritten": loop["bytes_rewritten"][spec.name],
            "actions": loop["actions_by_table"][spec.name],
        },
        "iceberg": {k: v for k, v in theirs.items() if k != "sizes"} | baseline,
        "rows_expected": expected,
        "rows_ok": ours["rows"] == expected and theirs["rows"] == expected,
        "_sizes": (before["sizes"], ours["sizes"]),
    }


def run_demo(
    cfg: Config,
    say: Say,
    namespace: str = "demo",
    seed: int = 7,
    stream_commits: int = 6,
    chart: Path | None = None,
) -> dict[str, Any]:
    """The whole demo; returns everything it printed, as data."""
    from service.catalog import load_catalog
    from service.spark import build_spark

    cfg = demo_config(cfg, namespace)
    catalog = load_catalog(cfg)
    started = time.monotonic()
    specs = demo_tables(namespace)
    copies = {s.name: f"{namespace}_iceberg.{s.name.split('.')[-1]}" for s in specs}
    targets, before = _ingest_tables(catalog, specs, copies, seed, say)
    say("starting Spark")
    # the UI's REST API gives the per-task metrics of the skew section; port 0 = any free
    spark = build_spark(
        cfg, app_name="icefloe-demo", extra={"spark.ui.enabled": "true", "spark.ui.port": "0"}
    )
    timeline: list[tuple[float, str, float]] = [
        (time.monotonic() - started, name, st["mean_mse"]) for name, st in before.items()
    ]
    streamer = Streamer(
        catalog,
        [(s, [s.name, copies[s.name]]) for s in specs],
        stream_commits,
        pause=2.0,
        seed=seed,
    )
    streamer.start()
    say(f"ingest keeps committing ({stream_commits} more commits per table) while icefloe works")
    loop = converge(
        cfg, spark, catalog, [s.name for s in specs], streamer, say, started, timeline, targets
    )
    streamer.join()
    if streamer.error:
        raise streamer.error
    say("running Iceberg's rewrite_data_files on the clones (default binpack, same target)")
    baseline = {
        s.name: iceberg_baseline(spark, cfg, copies[s.name], s.target_file_size_bytes)
        for s in specs
    }
    tables = [
        _comparison(
            catalog,
            spec,
            copies[spec.name],
            before[spec.name],
            before[spec.name]["rows"] + streamer.rows.get(spec.name, 0),
            loop,
            baseline[spec.name],
        )
        for spec in specs
    ]
    skew = skew_section(spark, cfg, catalog, namespace, say)
    chart = chart or PROJECT_ROOT / ".demo" / "icefloe-demo.png"
    from service.demo.charts import render_chart

    render_chart(
        chart,
        {t["table"]: t["_sizes"][0] for t in tables},
        {t["table"]: t["_sizes"][1] for t in tables},
        timeline,
        targets,
    )
    for t in tables:
        del t["_sizes"]
    return {
        "tables": tables,
        "loop": loop,
        "skew": skew,
        "chart": str(chart),
        "seconds": round(time.monotonic() - started, 1),
        "spark": spark,
    }
