"""``icefloe demo``: a streaming-ingest warehouse in rounds, icefloe side by side with Iceberg.

1. the workload (:mod:`icefloe.app.demo.workload`): two day-partitioned tables, each created
   with a copy (:mod:`icefloe.app.demo.copies`: the same data files every commit, its own
   history) for Iceberg's side; every round streams the next commits into both;
2. every round then compacts both sides (:mod:`icefloe.app.demo.rounds`): the decider
   (rolling entropy in Redis) and a pool of two actor threads converge the tables,
   Iceberg's ``rewrite_data_files`` (same target; ``sort`` where the table declares an
   order, else its default binpack) runs on the copies;
3. after every round both sides are read back from Iceberg metadata (bytes rewritten,
   files, entropy, manifests, snapshots, a fresh reader's planning time) and the rows
   checked against what was ingested;
4. after the last round, readers plan a few queries on both sides
   (:mod:`icefloe.app.demo.readers`), and the per-table comparison follows;
5. skew: a planted hot key is detected, and the salted join is checked against the plain
   join (identical rows) with its join-stage task times;
6. the charts go to ``out`` (default: beside the warehouse, ``<lakehouse>/demo/``).

The decider state stays in Redis under the configured prefix, so ``icefloe status``
explains what the demo left behind (the default config manages the ``demo`` namespace).
"""

from __future__ import annotations

import datetime as dt
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from icefloe.app.demo import DEFAULT_ROUNDS
from icefloe.app.demo.charts import ROUNDS_CHART, SIZES_CHART, render_chart, render_rounds_chart
from icefloe.app.demo.copies import append_to_copies, create_with_copies
from icefloe.app.demo.events import FIRST_DAY
from icefloe.app.demo.orderlines import OrderLines
from icefloe.app.demo.readers import reader_figures
from icefloe.app.demo.rounds import (
    Icefloe,
    View,
    combine,
    iceberg_rewrite,
    icefloe_work,
    read_view,
    state,
    summarize,
)
from icefloe.app.demo.skew_section import skew_section
from icefloe.app.demo.workload import DemoTable, Facts, Stream, demo_config, demo_workload
from icefloe.base.catalog import load_catalog
from icefloe.base.config import Config
from icefloe.base.spark import build_spark
from icefloe.optimizer.verdict import MERGE, SORT, rewrite_action

Say = Callable[[str], None]
SIDES = ("icefloe", "iceberg")


def default_out(cfg: Config) -> Path:
    """Where a run's charts go: beside a local warehouse (``<lakehouse>/demo``), else under
    the config's home. Never the checkout unless the warehouse is there."""
    url = urlparse(cfg.catalog.warehouse)
    if url.scheme in ("", "file"):
        return Path(url.path).parent / "demo"
    return Path(cfg.home) / ".lakehouse" / "demo"


# the demo's policy rewrites by merge, or by sort where the table declares an order
DEMO_ACTIONS = frozenset({MERGE, SORT})


@dataclass
class Warehouse:
    """The demo's tables, their copies and streams, and what was ingested so far."""

    catalog: Any
    tables: list[DemoTable]
    names: dict[str, dict[str, str]]  # side -> table -> the side's full name
    streams: dict[str, Stream]
    expected: dict[str, int] = field(default_factory=dict)  # rows ingested
    ingested_bytes: dict[str, int] = field(default_factory=dict)
    # every file ever ingested (partition -> sizes): the tables as they would be uncompacted
    ingested: dict[str, dict[str, list[int]]] = field(default_factory=dict)
    seen: dict[str, set[str]] = field(default_factory=dict)  # paths after the last round

    def name(self, side: str, table: DemoTable) -> str:
        return self.names[side][table.name]

    def ingest(self, table: DemoTable) -> int:
        """The table's next round of commits into both sides; the rows appended."""
        rows = 0
        names = [self.name(side, table) for side in SIDES]
        for _ in range(table.commits_per_round):
            data = self.streams[table.name].take()
            added = append_to_copies(self.catalog, names, data)
            rows += data.num_rows
            self.ingested_bytes[table.name] = self.ingested_bytes.get(table.name, 0) + sum(added)
        self.expected[table.name] = self.expected.get(table.name, 0) + rows
        return rows

    def note_ingest(self, name: str, view: View) -> None:
        """Files in the table now that were not there after the last compaction: new."""
        parts = self.ingested.setdefault(name, {})
        old = self.seen.get(name, set())
        for key, files in view.files.items():
            parts.setdefault(key, []).extend(s for p, s in files.items() if p not in old)

    def facts(self) -> Facts:
        """The newest day any stream reached, and an order key from the middle."""
        days = max((s.taken - 1) // s.per_day for s in self.streams.values())
        orders = self.streams["orders"]
        assert isinstance(orders, OrderLines)
        return Facts(FIRST_DAY + dt.timedelta(days=days), order_key=orders.next_key // 8)


def create(cfg: Config, namespace: str, seed: int, rounds: int, say: Say) -> Warehouse:
    """The workload's tables and copies, created afresh (empty)."""
    catalog = load_catalog(cfg)
    tables = demo_workload(rounds)
    names = {
        "icefloe": {t.name: f"{namespace}.{t.name}" for t in tables},
        "iceberg": {t.name: f"{namespace}_iceberg.{t.name}" for t in tables},
    }
    streams = {t.name: t.stream(seed + i) for i, t in enumerate(tables)}
    for t in tables:
        sample = t.stream(seed).take()
        create_with_copies(
            catalog,
            [names[side][t.name] for side in SIDES],
            sample,
            t.day_column,
            t.target,
            t.sort_column,
        )
        order = f", write order {t.sort_column}" if t.sort_column else ""
        say(f"created {names['icefloe'][t.name]} and its copy {names['iceberg'][t.name]}{order}")
    return Warehouse(catalog, tables, names, streams)


def play_round(
    wh: Warehouse,
    index: int,
    icefloe: Icefloe,
    spark: Any,
    cfg: Config,
    say: Say,
    ingested: bool = False,
) -> dict[str, Any]:
    """One round: ingest (unless ``ingested``), then both sides compact; its figures."""
    if not ingested:
        ingest_round(wh, index, say)
    views = {t.name: read_view(wh.catalog, wh.name("icefloe", t)) for t in wh.tables}
    for t in wh.tables:
        wh.note_ingest(t.name, views[t.name])
    before = {t.name: summarize(views[t.name].sizes(), t.target) for t in wh.tables}
    say(f"round {index + 1}: icefloe's decider and actors on the tables")
    entries = icefloe.converge(say)
    say(f"round {index + 1}: Iceberg's rewrite_data_files on the copies")
    theirs = {
        t.name: iceberg_rewrite(
            spark, cfg, wh.name("iceberg", t), t.target, strategy=t.iceberg_strategy
        )
        for t in wh.tables
    }
    tables: dict[str, dict[str, Any]] = {}
    for t in wh.tables:
        ours = read_view(wh.catalog, wh.name("icefloe", t))
        copy = read_view(wh.catalog, wh.name("iceberg", t))
        wh.seen[t.name] = {p for files in ours.files.values() for p in files}
        expected = wh.expected[t.name]
        tables[t.name] = {
            "commits": t.commits_per_round,
            "rows_expected": expected,
            "before_compaction": {k: before[t.name][k] for k in ("files", "mean_mse")}
            | {"manifests": views[t.name].manifests, "plan_ms": views[t.name].plan_ms},
            "icefloe": state(ours, t.target)
            | icefloe_work(entries, wh.name("icefloe", t))
            | {"strategy": rewrite_action(DEMO_ACTIONS, zorder=False, sort=bool(t.sort_column))},
            "iceberg": state(copy, t.target) | theirs[t.name] | {"strategy": t.iceberg_strategy},
            "rows_ok": ours.rows == expected and copy.rows == expected,
            "_sizes": ours.sizes(),
        }
    targets = {t.name: t.target for t in wh.tables}
    return {
        "round": index + 1,
        "commits": sum(t["commits"] for t in tables.values()),
        "tables": tables,
        "icefloe": combine({n: t["icefloe"] for n, t in tables.items()}, targets),
        "iceberg": combine({n: t["iceberg"] for n, t in tables.items()}, targets),
        "rows_ok": all(t["rows_ok"] for t in tables.values()),
        "before_compaction": {
            k: sum(t["before_compaction"][k] for t in tables.values())
            for k in ("files", "manifests", "plan_ms")
        },
    }


def ingest_round(wh: Warehouse, index: int, say: Say) -> None:
    say(
        f"round {index + 1}: streaming "
        + ", ".join(f"{t.commits_per_round} commits into {t.name}" for t in wh.tables)
        + " (the same files into each copy)"
    )
    for t in wh.tables:
        wh.ingest(t)


def totals(rounds: list[dict[str, Any]], ingested: int) -> dict[str, Any]:
    """Each side over all rounds: what it rewrote in total, and where it ended."""
    last = rounds[-1]
    out: dict[str, Any] = {"bytes_ingested": ingested}
    for side in SIDES:
        out[side] = dict(last[side]) | {
            k: sum(r[side][k] for r in rounds) for k in ("bytes_rewritten", "files_rewritten")
        }
    theirs = out["iceberg"]["bytes_rewritten"]
    out["bytes_ratio"] = round(out["icefloe"]["bytes_rewritten"] / theirs, 3) if theirs else None
    out["rows_ok"] = all(r["rows_ok"] for r in rounds)
    return out


def compare_tables(wh: Warehouse, rounds: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per table: uncompacted (every file ingested), icefloe and Iceberg after the last
    round, with what each rewrote over all rounds."""
    out = []
    for t in wh.tables:
        last = rounds[-1]["tables"][t.name]
        per = [r["tables"][t.name] for r in rounds]
        out.append(
            {
                "table": wh.name("icefloe", t),
                "copy": wh.name("iceberg", t),
                "sort_order": [t.sort_column] if t.sort_column else [],
                "target_file_size_bytes": t.target,
                "bytes_ingested": wh.ingested_bytes[t.name],
                "uncompacted": summarize(wh.ingested[t.name], t.target)
                | {"rows": wh.expected[t.name]},
                "icefloe": last["icefloe"]
                | {k: sum(p["icefloe"][k] for p in per) for k in ("bytes_rewritten", "actions")},
                "iceberg": last["iceberg"]
                | {"bytes_rewritten": sum(p["iceberg"]["bytes_rewritten"] for p in per)}
                | {"calls": len(per)},
                "rows_expected": wh.expected[t.name],
                "rows_ok": all(p["rows_ok"] for p in per),
            }
        )
    return out


def verdicts(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Each headline figure, icefloe's and its baseline's (``against``: Iceberg, or plain
    Spark for the skewed join), and who wins it (lower is better for each)."""
    total, skew = result["totals"], result["skew"]
    rows: list[tuple[str, float, float]] = [
        (label, total["icefloe"][key], total["iceberg"][key])
        for label, key in (
            ("bytes rewritten", "bytes_rewritten"),
            ("data files a reader plans against", "files"),
            ("manifests", "manifests"),
            ("snapshots", "snapshots"),
        )
    ]
    for q in result["readers"]:
        where = f"{q['table']}, {q['query']}"
        for label, key in (("files opened", "files"), ("bytes in them", "bytes")):
            rows.append((f"{label}: {where}", q["icefloe"][key], q["iceberg"][key]))
        rows.append((f"planning ms: {where}", q["icefloe"]["plan_ms"], q["iceberg"]["plan_ms"]))
    # the skew section compares the extension (icefloe's side) with plain Spark
    for label, key in (("join-stage max/median task", "max_over_median"), ("wall s", "wall")):
        rows.append((f"skewed join {label}", skew["salted"][key], skew["plain"][key]))
    return [
        {
            "figure": label,
            "icefloe": round(ours, 3),
            "baseline": round(theirs, 3),
            "winner": "icefloe" if ours < theirs else "baseline" if theirs < ours else "tie",
            "against": "plain Spark" if label.startswith("skewed join") else "Iceberg",
        }
        for label, ours, theirs in rows
    ]


def run_demo(
    cfg: Config,
    say: Say,
    namespace: str = "demo",
    seed: int = 7,
    rounds: int = DEFAULT_ROUNDS,
    out: Path | None = None,
    step: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """The whole demo; returns everything it printed, as data. ``step`` is told each
    round's end and the skew section's (a progress bar). Charts go to ``out``."""
    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, got {rounds}")
    cfg = demo_config(cfg, namespace, demo_workload(rounds))
    started = time.monotonic()
    phases: dict[str, float] = {}

    def phase(name: str) -> None:  # seconds since the last phase ended, by name
        phases[name] = round(time.monotonic() - started - sum(phases.values()), 1)

    wh = create(cfg, namespace, seed, rounds, say)
    say("starting Spark (while the first round streams in)")
    with ThreadPoolExecutor(1) as pool:
        # the UI's REST API gives the per-task metrics of the skew section; port 0 = any free
        booting = pool.submit(
            build_spark,
            cfg,
            app_name="icefloe-demo",
            extra={"spark.ui.enabled": "true", "spark.ui.port": "0"},
        )
        ingest_round(wh, 0, say)
        spark = booting.result()
    icefloe = Icefloe(cfg, spark, wh.catalog)
    phase("set-up, Spark and round 1's ingest")
    played: list[dict[str, Any]] = []
    for index in range(rounds):
        played.append(play_round(wh, index, icefloe, spark, cfg, say, ingested=index == 0))
        ours, theirs = played[-1]["icefloe"], played[-1]["iceberg"]
        say(
            f"round {index + 1} done: rewritten {ours['bytes_rewritten'] / (1 << 20):.1f} MiB "
            f"by icefloe, {theirs['bytes_rewritten'] / (1 << 20):.1f} MiB by Iceberg"
        )
        step(f"round {index + 1}")
        phase(f"round {index + 1}")
    say("readers: planning the queries on both sides")
    readers = reader_figures(wh.catalog, wh.tables, wh.names, wh.facts())
    phase("readers")
    skew = skew_section(spark, cfg, wh.catalog, namespace, say)
    step("skew")
    phase("skew")
    appended = icefloe.flush_history()
    if appended:
        say(f"{appended} action records appended to the history table {cfg.history.table}")
    result: dict[str, Any] = {
        "rounds": played,
        "totals": totals(played, sum(wh.ingested_bytes.values())),
        "tables": compare_tables(wh, played),
        "readers": readers,
        "loop": {
            "decider_passes": icefloe.passes,
            "actions": len(icefloe.results),
            "scans_avoided_pct": icefloe.scans_avoided_pct(),
            "history_appended": appended,
        },
        "skew": skew,
        "seed": seed,
    }
    result["verdicts"] = verdicts(result)
    result["charts"] = draw_charts(wh, result, out or default_out(cfg))
    phase("history and charts")
    result["seconds"] = round(time.monotonic() - started, 1)
    result["phases"] = phases
    result["cpu_seconds"] = cpu_seconds(spark)
    result["spark"] = spark
    return result


def cpu_seconds(spark: Any) -> dict[str, float | None]:
    """CPU time this process and Spark's JVM spent so far: on a loaded machine, what the
    demo itself cost (its wall time there counts the waits for other processes too). The
    JVM's is read from ``/proc`` (None where there is none)."""
    jvm: float | None = None
    try:
        pid = int(spark._jvm.java.lang.ProcessHandle.current().pid())
        # /proc/<pid>/stat: utime and stime, fields 14 and 15, after the ``(comm)`` field
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        jvm = round((int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), 1)
    except (OSError, ValueError, IndexError):
        pass
    return {"python": round(time.process_time(), 1), "jvm": jvm}


def draw_charts(wh: Warehouse, result: dict[str, Any], out: Path) -> dict[str, str]:
    """Both charts into ``out``: the file sizes per table, and the rounds (both sides)."""
    played = result["rounds"]
    last = played[-1]["tables"]
    sizes = render_chart(
        out / SIZES_CHART,
        {
            name: [s for sizes in parts.values() for s in sizes]
            for name, parts in wh.ingested.items()
        },
        {name: [s for sizes in t["_sizes"].values() for s in sizes] for name, t in last.items()},
        {t.name: t.target for t in wh.tables},
    )
    for r in played:
        for t in r["tables"].values():
            t.pop("_sizes", None)
    rounds = render_rounds_chart(out / ROUNDS_CHART, result)
    return {"sizes": str(sizes), "rounds": str(rounds)}
