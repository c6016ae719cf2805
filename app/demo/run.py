"""``icefloe demo``: the whole loop on a local warehouse, side by side with Iceberg.

1. streaming ingest builds three small-file tables (``icefloe.app.demo.ingest``), in rounds:
   the first round writes the healthy days' large files and the first share of the
   streaming commits, and each table is cloned (``register_table`` on its current
   metadata: same data files, its own history) for Iceberg's baseline;
2. every round then compacts both sides (``icefloe.app.demo.rounds``): the decider (rolling
   entropy in Redis) and a pool of two actor threads converge the tables, Iceberg's
   ``rewrite_data_files`` (default binpack, same target) runs on the clones;
3. the next round appends the next share of commits to both sides (the same data files),
   and both compact again: real tables are compacted again and again while ingest goes on;
4. after every round both sides are read back from Iceberg metadata and the row counts
   checked against what was ingested; the totals and a per-table comparison follow, and
   two charts go to ``.demo/`` (file sizes and entropy; cumulative bytes rewritten);
5. skew: a planted hot key is detected, and the salted join is checked against the plain
   join (identical rows) with its stage max/median task time.

The decider state stays in Redis under the configured prefix, so ``icefloe status``
explains what the demo left behind (the default config manages the ``demo`` namespace).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from icefloe.app.demo import DEFAULT_ROUNDS
from icefloe.app.demo.charts import render_chart, render_rounds_chart
from icefloe.app.demo.ingest import CommitStream, TableSpec, demo_tables, ingest
from icefloe.app.demo.rounds import (
    Icefloe,
    View,
    append_twice,
    clone_table,
    combine,
    iceberg_rewrite,
    icefloe_work,
    read_view,
    state,
    summarize,
)
from icefloe.app.demo.skew_section import skew_section
from icefloe.base.catalog import load_catalog
from icefloe.base.config import PROJECT_ROOT, Config, ManagedConfig
from icefloe.base.spark import build_spark

Say = Callable[[str], None]


def demo_config(cfg: Config, namespace: str) -> Config:
    """The demo manages its own namespace (on top of whatever the config manages)."""
    namespaces = tuple(dict.fromkeys((*cfg.managed.namespaces, namespace)))
    return replace(cfg, managed=ManagedConfig(namespaces=namespaces, tables=cfg.managed.tables))


@dataclass
class Warehouse:
    """The demo's tables, their clones and streams, and what was ingested so far."""

    catalog: Any
    specs: list[TableSpec]
    copies: dict[str, str]
    streams: dict[str, CommitStream]
    shares: dict[str, list[int]]  # commits per round, per table
    targets: dict[str, int]
    expected: dict[str, int] = field(default_factory=dict)  # rows ingested
    # every file ever ingested (partition → sizes): the tables as they would be uncompacted
    ingested: dict[str, dict[str, list[int]]] = field(default_factory=dict)
    seen: dict[str, set[str]] = field(default_factory=dict)  # paths after the last round

    def note_ingest(self, views: dict[str, View]) -> None:
        """Files in the tables now that were not there after the last compaction: new."""
        for name, view in views.items():
            parts = self.ingested.setdefault(name, {})
            old = self.seen.get(name, set())
            for key, files in view.files.items():
                parts.setdefault(key, []).extend(s for p, s in files.items() if p not in old)


def _first_ingest(cfg: Config, namespace: str, seed: int, rounds: int, say: Say) -> Warehouse:
    catalog = load_catalog(cfg)
    specs = demo_tables(namespace)
    streams = {s.name: CommitStream(s, seed + i) for i, s in enumerate(specs)}
    wh = Warehouse(
        catalog,
        specs,
        copies={s.name: f"{namespace}_iceberg.{s.name.split('.')[-1]}" for s in specs},
        streams=streams,
        shares={name: stream.round_sizes(rounds) for name, stream in streams.items()},
        targets={},
    )
    for spec in specs:
        share = wh.shares[spec.name][0]
        say(
            f"round 1: ingesting {spec.name}: {share} of its {len(streams[spec.name].plan)} "
            f"commits ({spec.late_share:.0%} of the streaming ones late)"
        )
        infos = ingest(catalog, spec, stream=streams[spec.name], commits=share)
        clone_table(catalog, spec.name, wh.copies[spec.name])
        wh.expected[spec.name] = sum(i.rows for i in infos)
        wh.targets[spec.name] = wh.targets[wh.copies[spec.name]] = spec.target_file_size_bytes
    return wh


def _ingest_round(wh: Warehouse, index: int, say: Say) -> None:
    commits = {s.name: wh.shares[s.name][index] for s in wh.specs}
    say(
        f"round {index + 1}: ingesting "
        + ", ".join(f"{n} commits into {t}" for t, n in commits.items())
        + " (and the same files into each clone)"
    )
    for spec in wh.specs:
        rows = append_twice(
            wh.catalog, spec.name, wh.copies[spec.name], wh.streams[spec.name], commits[spec.name]
        )
        wh.expected[spec.name] += rows


def play_round(
    wh: Warehouse,
    index: int,
    icefloe: Icefloe,
    spark: Any,
    cfg: Config,
    say: Say,
    mark: Callable[[str, float], None],
) -> dict[str, Any]:
    """One round: ingest (after the first), then both sides compact; its figures.
    ``mark(table, mean MSE)`` is called after the ingest and after the compaction."""
    if index:
        _ingest_round(wh, index, say)
    views = {s.name: read_view(wh.catalog, s.name) for s in wh.specs}
    wh.note_ingest(views)
    ingested = {
        s.name: summarize(views[s.name].sizes(), s.target_file_size_bytes) for s in wh.specs
    }
    for name, figures in ingested.items():
        mark(name, figures["mean_mse"])
    say(f"round {index + 1}: icefloe's decider and actors on the tables")
    entries = icefloe.converge(say)
    say(f"round {index + 1}: Iceberg's rewrite_data_files on the clones")
    theirs = {
        s.name: iceberg_rewrite(spark, cfg, wh.copies[s.name], s.target_file_size_bytes)
        for s in wh.specs
    }
    tables: dict[str, dict[str, Any]] = {}
    for spec in wh.specs:
        ours = read_view(wh.catalog, spec.name)
        copy = read_view(wh.catalog, wh.copies[spec.name])
        wh.seen[spec.name] = {p for files in ours.files.values() for p in files}
        expected = wh.expected[spec.name]
        tables[spec.name] = {
            "commits": wh.shares[spec.name][index],
            "rows_expected": expected,
            "before_compaction": {k: ingested[spec.name][k] for k in ("files", "mean_mse")}
            | {"manifests": views[spec.name].manifests, "plan_ms": views[spec.name].plan_ms},
            "icefloe": state(ours, spec.target_file_size_bytes) | icefloe_work(entries, spec.name),
            "iceberg": state(copy, spec.target_file_size_bytes) | theirs[spec.name],
            "rows_ok": ours.rows == expected and copy.rows == expected,
            "_sizes": ours.sizes(),
        }
        mark(spec.name, tables[spec.name]["icefloe"]["mean_mse"])
    return {
        "round": index + 1,
        "commits": sum(t["commits"] for t in tables.values()),
        "tables": tables,
        "icefloe": combine({n: t["icefloe"] for n, t in tables.items()}, wh.targets),
        "iceberg": combine({n: t["iceberg"] for n, t in tables.items()}, wh.targets),
        "rows_ok": all(t["rows_ok"] for t in tables.values()),
        "before_compaction": {
            k: sum(t["before_compaction"][k] for t in tables.values())
            for k in ("files", "manifests", "plan_ms")
        },
    }


def totals(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Each side over all rounds: what it rewrote in total, and where it ended."""
    last = rounds[-1]
    out: dict[str, Any] = {}
    for side in ("icefloe", "iceberg"):
        out[side] = dict(last[side]) | {
            k: sum(r[side][k] for r in rounds) for k in ("bytes_rewritten", "files_rewritten")
        }
    out["rows_ok"] = all(r["rows_ok"] for r in rounds)
    return out


def compare_tables(wh: Warehouse, rounds: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per table: uncompacted (every file ingested), icefloe and Iceberg after the last
    round, with what each rewrote over all rounds."""
    out = []
    for spec in wh.specs:
        name, last = spec.name, rounds[-1]["tables"][spec.name]
        per = [r["tables"][name] for r in rounds]
        out.append(
            {
                "table": name,
                "target_file_size_bytes": spec.target_file_size_bytes,
                "uncompacted": summarize(wh.ingested[name], spec.target_file_size_bytes)
                | {"rows": wh.expected[name]},
                "icefloe": last["icefloe"]
                | {k: sum(p["icefloe"][k] for p in per) for k in ("bytes_rewritten", "actions")},
                "iceberg": last["iceberg"]
                | {"bytes_rewritten": sum(p["iceberg"]["bytes_rewritten"] for p in per)}
                | {"calls": len(per)},
                "rows_expected": wh.expected[name],
                "rows_ok": all(p["rows_ok"] for p in per),
            }
        )
    return out


def _charts(
    wh: Warehouse,
    rounds: list[dict[str, Any]],
    timeline: list[tuple[float, str, float]],
    chart: Path,
) -> Path:
    render_chart(
        chart,
        {
            name: [s for sizes in parts.values() for s in sizes]
            for name, parts in wh.ingested.items()
        },
        {
            name: [s for sizes in t.pop("_sizes").values() for s in sizes]
            for name, t in rounds[-1]["tables"].items()
        },
        timeline,
        wh.targets,
    )
    for r in rounds:
        for t in r["tables"].values():
            t.pop("_sizes", None)
    return render_rounds_chart(chart.with_name(f"{chart.stem}-rounds{chart.suffix}"), rounds)


def run_demo(
    cfg: Config,
    say: Say,
    namespace: str = "demo",
    seed: int = 7,
    rounds: int = DEFAULT_ROUNDS,
    chart: Path | None = None,
    step: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """The whole demo; returns everything it printed, as data. ``step`` is told each
    round's end and the skew section's (a progress bar)."""

    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, got {rounds}")
    cfg = demo_config(cfg, namespace)
    started = time.monotonic()
    wh = _first_ingest(cfg, namespace, seed, rounds, say)
    say("starting Spark")
    # the UI's REST API gives the per-task metrics of the skew section; port 0 = any free
    spark = build_spark(
        cfg, app_name="icefloe-demo", extra={"spark.ui.enabled": "true", "spark.ui.port": "0"}
    )
    icefloe = Icefloe(cfg, spark, wh.catalog)
    played: list[dict[str, Any]] = []
    timeline: list[tuple[float, str, float]] = []

    def mark(name: str, mse: float) -> None:
        timeline.append((time.monotonic() - started, name, mse))

    for index in range(rounds):
        played.append(play_round(wh, index, icefloe, spark, cfg, say, mark))
        ours, theirs = played[-1]["icefloe"], played[-1]["iceberg"]
        say(
            f"round {index + 1} done: rewritten {ours['bytes_rewritten'] / (1 << 20):.1f} MiB "
            f"by icefloe, {theirs['bytes_rewritten'] / (1 << 20):.1f} MiB by Iceberg"
        )
        step(f"round {index + 1}")
    skew = skew_section(spark, cfg, wh.catalog, namespace, say)
    step("skew")
    appended = icefloe.flush_history()
    if appended:
        say(f"{appended} action records appended to the history table {cfg.history.table}")
    chart = chart or PROJECT_ROOT / ".demo" / "icefloe-demo.png"
    rounds_chart = _charts(wh, played, timeline, chart)
    return {
        "rounds": played,
        "totals": totals(played),
        "tables": compare_tables(wh, played),
        "loop": {
            "decider_passes": icefloe.passes,
            "actions": len(icefloe.results),
            "scans_avoided_pct": icefloe.scans_avoided_pct(),
            "history_appended": appended,
        },
        "skew": skew,
        "chart": str(chart),
        "rounds_chart": str(rounds_chart),
        "seconds": round(time.monotonic() - started, 1),
        "spark": spark,
    }
