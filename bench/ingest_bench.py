"""Benchmark (issue #46): continuous ingest of rows that compress better merged, icefloe's
long-running loop against Iceberg's warm ``rewrite_data_files``.

    .venv/bin/python bench/ingest_bench.py [--rounds 5] [--commits 80] [--target-kb 512]
                                           [--redis redis://127.0.0.1:6379/9] [--quick]

A table of order lines partitioned by ``day(l_shipdate)`` receives rounds of streaming
commits (PyIceberg appends, zstd: one small file each, 150-2,500 rows; a new day every
``--commits``/2 commits, and a fifth of the commits bring late rows of an earlier day).
Its columns are what real order lines hold: keys, prices, and low-cardinality strings
(ship mode, instructions, flags, comments from a small vocabulary) that one dictionary
per column serves, so merged rows take fewer bytes than the small files held them in.
The very same data files go to three copies, and after each round:

* ``icefloe``: one decider and two actor threads in this process (the long-running
  service: warm JVM, warm Redis connections), until a decider pass queues nothing;
* ``sizes``: the same loop planning by the files' sizes (merged bytes taken equal to
  input bytes, no sample: the plan before #46; the writer still closes files by what it
  wrote, and outputs are still even or of the target and one remainder);
* ``iceberg``: ``CALL lake.system.rewrite_data_files`` (default binpack, same target) in
  the same warm Spark session.

Per copy, per round and in total: bytes rewritten, bytes rewritten per byte ingested, data
files and mean partition MSE after, the rewrites' output files (mean size, and how many
land in [0.75, 1.1]·T), partitions rewritten twice in one round (an output merged again at
once), and the time from the round's last commit to quiet (the loop's passes and actions;
Iceberg's call). Every copy's rows are checked every round. The last line is a JSON
summary.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from wide_bench import _answers, drop_keys, private_redis  # noqa: E402

import icefloe.jobs.base.plan as plan_module  # noqa: E402
import icefloe.jobs.data.optimize as optimize_module  # noqa: E402
from icefloe.app.demo.copies import append_to_copies, create_with_copies  # noqa: E402
from icefloe.app.demo.orderlines import OrderLines  # noqa: E402
from icefloe.app.demo.rounds import Icefloe, iceberg_rewrite, read_view, summarize  # noqa: E402
from icefloe.base.catalog import load_catalog  # noqa: E402
from icefloe.base.config import Config, build_config  # noqa: E402

ARMS = ("icefloe", "sizes", "iceberg")


def make_config(
    home: Path, url: str, prefix: str, ident: str, target: int, min_input_files: int | None = None
) -> Config:
    defaults: dict[str, Any] = {"target_file_size_bytes": target}
    if min_input_files is not None:
        defaults["min_input_files"] = min_input_files
    raw = {
        "catalog": {"uri": f"sqlite:///{home}/catalog.db", "warehouse": f"file://{home}/warehouse"},
        "redis": {"url": url, "key_prefix": prefix},
        "spark": {
            "master": "local[2]",
            "conf": {"spark.sql.shuffle.partitions": "4", "spark.ui.enabled": "false"},
        },
        "defaults": defaults,
        "managed": {"tables": [ident]},
        "history": {"enabled": False},
    }
    return build_config(raw, source="<ingest bench>", home=home)


def ingest(catalog: Any, names: dict[str, str], stream: OrderLines, commits: int) -> int:
    """``commits`` commits into the icefloe copy, their data files fast-appended to the
    others (the demo's :func:`~icefloe.app.demo.copies.append_to_copies`); returns the
    bytes ingested."""
    copies = [names[a] for a in ARMS]
    return sum(sum(append_to_copies(catalog, copies, stream.take())) for _ in range(commits))


@contextmanager
def planning_by_sizes() -> Iterator[None]:
    """The plan's merged bytes taken equal to the files' sizes (the model before #46): no
    rate from the table's metadata, no sample."""
    real = plan_module.table_bytes_per_row, optimize_module.sampled_rate
    plan_module.table_bytes_per_row = lambda *a: None  # type: ignore[assignment]
    optimize_module.sampled_rate = lambda *a: None  # type: ignore[assignment]
    try:
        yield
    finally:
        plan_module.table_bytes_per_row, optimize_module.sampled_rate = real


def outputs_of(before: set[str], view: Any) -> list[int]:
    """Sizes of the files the copy holds now that it did not hold after the ingest."""
    return [s for files in view.files.values() for p, s in files.items() if p not in before]


def run_round(
    arm: str,
    loops: dict[str, Icefloe],
    spark: Any,
    cfgs: dict[str, Config],
    catalog: Any,
    name: str,
    target: int,
) -> dict[str, Any]:
    before = read_view(catalog, name)
    held = {p for files in before.files.values() for p in files}
    begin = time.monotonic()
    if arm == "iceberg":
        done = iceberg_rewrite(spark, cfgs["icefloe"], name, target)
        rewritten, twice, misses = done["bytes_rewritten"], 0, []
    else:
        with planning_by_sizes() if arm == "sizes" else _nothing():
            entries = loops[arm].converge(lambda _: None)
        ok = [e for e in entries if e.get("ok")]
        rewritten = sum(int(e.get("bytes_rewritten") or 0) for e in ok)
        keys = Counter(k for e in ok for k in e.get("keys") or [])
        twice = sum(1 for n in keys.values() if n > 1)
        misses = [  # measured against planned: new bytes (share), worst MSE (over T²)
            (
                (e["bytes_added"] - e["bytes_added_predicted"]) / max(1, e["bytes_added"]),
                (e["mse_after"] - e["mse_predicted"]) / target**2,
            )
            for e in ok
            if e.get("mse_predicted") is not None and e.get("bytes_added")
        ]
    seconds = time.monotonic() - begin
    after = read_view(catalog, name)
    outputs = outputs_of(held, after)
    return summarize(after.sizes(), target) | {
        "bytes_rewritten": rewritten,
        "seconds": round(seconds, 2),
        "rows": after.rows,
        "outputs": len(outputs),
        "outputs_mean_t": round(statistics.mean(outputs) / target, 3) if outputs else None,
        "outputs_on_target": sum(0.75 * target <= s <= 1.1 * target for s in outputs),
        "remerged_partitions": twice,
        "bytes_miss": max((abs(b) for b, _ in misses), default=None),
        "mse_miss": max((m for _, m in misses), default=None),
    }


@contextmanager
def _nothing():
    yield


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--commits", type=int, default=80, help="commits per round")
    p.add_argument("--target-kb", type=int, default=512)
    p.add_argument("--redis", default="redis://127.0.0.1:6379/9")
    p.add_argument(
        "--min-input-files", type=int, default=None, help="icefloe's (default: the policy's, 5)"
    )
    p.add_argument("--quick", action="store_true", help="2 rounds of 30 commits")
    args = p.parse_args()
    if args.quick:
        args.rounds, args.commits = 2, 30
    target = args.target_kb * 1024
    from icefloe.base.spark import build_spark  # after the arguments: a JVM takes seconds

    with tempfile.TemporaryDirectory(prefix="icefloe-ingest-") as tmp:
        home = Path(tmp)
        proc, url = (None, args.redis) if _answers(args.redis) else private_redis(home)
        prefix = f"icefloe-ingest-{uuid.uuid4().hex[:8]}"
        names = {a: f"bench.orders_{a}" for a in ARMS}
        cfgs = {
            a: make_config(home, url, f"{prefix}-{a}", names[a], target, args.min_input_files)
            for a in ARMS
        }
        try:
            catalog = load_catalog(cfgs["icefloe"])
            stream = OrderLines(commits_per_day=max(1, args.commits // 2))
            sample = OrderLines(1).take()
            create_with_copies(catalog, [names[a] for a in ARMS], sample, "l_shipdate", target)
            spark = build_spark(cfgs["icefloe"], app_name="icefloe-ingest-bench")
            loops = {a: Icefloe(cfgs[a], spark, catalog) for a in ("icefloe", "sizes")}
            rounds, rows = [], 0
            for r in range(args.rounds):
                ingested = ingest(catalog, names, stream, args.commits)
                rows = stream.next_key - 1
                figures = {
                    a: run_round(a, loops, spark, cfgs, catalog, names[a], target) for a in ARMS
                }
                ok = all(figures[a]["rows"] == rows for a in ARMS)
                rounds.append({"round": r + 1, "ingested": ingested, "rows_ok": ok, **figures})
                show_round(rounds[-1], rows, target)
        finally:
            for a in ARMS:
                drop_keys(url, f"{prefix}-{a}")
            if proc is not None:
                proc.kill()
    print_summary(rounds, target, args)


def show_round(r: dict[str, Any], rows: int, target: int) -> None:
    print(f"\nround {r['round']}: {r['ingested'] / (1 << 20):.2f} MiB ingested")
    print(
        f"  {'':8} {'MiB rewr':>9} {'files':>6} {'MSE/T²':>7} {'outputs':>8} "
        f"{'mean/T':>7} {'on T':>5} {'twice':>5} {'s':>6} rows"
    )
    for a in ARMS:
        f = r[a]
        print(
            f"  {a:8} {f['bytes_rewritten'] / (1 << 20):9.2f} {f['files']:6d} "
            f"{f['mean_mse'] / target**2:7.3f} {f['outputs']:8d} "
            f"{f['outputs_mean_t'] if f['outputs_mean_t'] is not None else '-':>7} "
            f"{f['outputs_on_target']:5d} {f['remerged_partitions']:5d} {f['seconds']:6.1f} "
            f"{'ok' if f['rows'] == rows else 'LOST ' + str(rows - f['rows'])}"
        )


def print_summary(rounds: list[dict[str, Any]], target: int, args: Any) -> None:
    ingested = sum(r["ingested"] for r in rounds)
    total = {a: sum(r[a]["bytes_rewritten"] for r in rounds) for a in ARMS}
    last = rounds[-1]
    steady = {a: statistics.median(r[a]["seconds"] for r in rounds[1:] or rounds) for a in ARMS}
    outputs = {a: sum(r[a]["outputs"] for r in rounds) for a in ARMS}
    on_target = {a: sum(r[a]["outputs_on_target"] for r in rounds) for a in ARMS}
    print(f"\ntotal: {ingested / (1 << 20):.2f} MiB ingested in {len(rounds)} rounds")
    for a in ARMS:
        print(
            f"  {a:8} rewrote {total[a] / (1 << 20):6.2f} MiB ({total[a] / ingested:.2f} per byte "
            f"ingested, {total[a] / max(1, total['iceberg']):.2f}x Iceberg's); "
            f"{last[a]['files']} files at MSE {last[a]['mean_mse'] / target**2:.3f}·T² "
            f"({last[a]['files'] / max(1, last['iceberg']['files']):.2f}x, "
            f"{last[a]['mean_mse'] / max(1e-9, last['iceberg']['mean_mse']):.2f}x Iceberg's); "
            f"{on_target[a]}/{outputs[a]} outputs in [0.75, 1.1]·T; "
            f"time to quiet, median of rounds 2-: {steady[a]:.1f} s "
            f"({steady[a] / max(1e-9, steady['iceberg']):.2f}x Iceberg's)"
        )
    rows_ok = all(r["rows_ok"] for r in rounds)
    print(f"  every copy held every row ingested, every round: {'yes' if rows_ok else 'NO'}")
    print(
        json.dumps(
            {
                "bench": "ingest",
                "args": vars(args),
                "ingested": ingested,
                "bytes_rewritten": total,
                "per_byte_ingested": {a: round(total[a] / ingested, 3) for a in ARMS},
                "vs_iceberg": {a: round(total[a] / max(1, total["iceberg"]), 3) for a in ARMS},
                "files_after": {a: last[a]["files"] for a in ARMS},
                "mean_mse_after_t2": {a: round(last[a]["mean_mse"] / target**2, 4) for a in ARMS},
                "outputs_on_target": {a: [on_target[a], outputs[a]] for a in ARMS},
                "remerged_partitions": {
                    a: sum(r[a]["remerged_partitions"] for r in rounds) for a in ARMS
                },
                "steady_seconds": steady,
                "worst_miss": {  # measured against planned, over every action of the run
                    a: {
                        "bytes_share": max((r[a]["bytes_miss"] or 0 for r in rounds), default=0),
                        "mse_t2": max((r[a]["mse_miss"] or 0 for r in rounds), default=0),
                    }
                    for a in ARMS[:2]
                },
                "rows_ok": rows_ok,
            }
        )
    )


if __name__ == "__main__":
    main()
