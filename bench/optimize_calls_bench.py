"""Benchmark: the fixed cost of ``icefloe optimize`` — four small tables in four calls
against the same four tables in one call (one Spark session).

    .venv/bin/python bench/optimize_calls_bench.py [--tables 4] [--files 8] [--repeats 3]

Each repeat builds two identical sets of ``--tables`` small tables (two partitions of
``--files`` small files each, PyIceberg appends) in a temporary embedded lakehouse, then
times, as a user runs them (``python -m icefloe``, a fresh process each):

* ``separate``: ``icefloe optimize T`` once per table of the first set;
* ``one call``: ``icefloe optimize T1 T2 ...`` on the second set.

It also prints where a cold single-table call spends its time (the report's ``timings``:
plan, setup, write, verify, commit) against its process wall time, start-up included, and
verification's share of it against issue #21's target (at most 25%).
Medians over ``--repeats``; the last line is the machine-readable summary.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pyarrow as pa  # noqa: E402
import yaml  # noqa: E402
from pyiceberg.partitioning import PartitionField, PartitionSpec  # noqa: E402
from pyiceberg.schema import Schema  # noqa: E402
from pyiceberg.transforms import IdentityTransform  # noqa: E402
from pyiceberg.types import LongType, NestedField, StringType  # noqa: E402

from icefloe.base.catalog import load_catalog  # noqa: E402
from icefloe.base.config import build_config  # noqa: E402

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "day", StringType(), required=False),
    NestedField(3, "payload", StringType(), required=False),
)
SPEC = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "day"))
VERIFY_TARGET = 0.25  # verification's share of a cold call's wall time, at most


def make_table(catalog: Any, name: str, files: int) -> None:
    table = catalog.create_table(name, schema=SCHEMA, partition_spec=SPEC)
    for f in range(files):  # each append: one small file per day
        ids = list(range(f * 200, (f + 1) * 200))
        table.append(
            pa.table(
                {
                    "id": pa.array(ids, pa.int64()),
                    "day": pa.array([f"d{i % 2}" for i in ids], pa.string()),
                    "payload": pa.array([f"row-{i:08d}" * 8 for i in ids], pa.string()),
                }
            )
        )


def icefloe(config: Path, *args: str) -> tuple[float, dict[str, Any]]:
    env = {**os.environ, "ICEFLOE_CONFIG": str(config)}
    env.pop("ICEFLOE_PROFILE", None)
    started = time.perf_counter()
    run = subprocess.run(
        [sys.executable, "-m", "icefloe", "optimize", *args, "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    wall = time.perf_counter() - started
    if run.returncode != 0:
        raise SystemExit(f"icefloe optimize {' '.join(args)} failed: {run.stderr[-2000:]}")
    return wall, json.loads(run.stdout)


def one_round(home: Path, config: Path, args: argparse.Namespace, r: int) -> dict[str, float]:
    raw = yaml.safe_load(config.read_text())
    catalog = load_catalog(build_config(raw, source="<bench>", home=home))
    ns = f"calls_{r}"
    catalog.create_namespace(ns)
    sets = {kind: [f"{ns}.{kind}_{t}" for t in range(args.tables)] for kind in ("sep", "one")}
    for names in sets.values():
        for name in names:
            make_table(catalog, name, args.files)
    separate, reports = 0.0, []
    for name in sets["sep"]:
        wall, report = icefloe(config, name)
        separate += wall
        reports.append((wall, report))
    together, _ = icefloe(config, *sets["one"])
    wall, report = reports[0]
    timings = report["timings"]
    return {
        "separate": separate,
        "one_call": together,
        "cold_wall": wall,
        "cold_report": float(report["seconds"]),
        **{f"t_{k}": float(v) for k, v in timings.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=4)
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="icefloe-calls-bench-"))
    config = home / "icefloe.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "catalog": {
                    "uri": f"sqlite:///{home}/catalog.db",
                    "warehouse": f"file://{home}/warehouse",
                },
                "spark": {"master": "local[2]"},
                "defaults": {"target_file_size_bytes": 1 << 20, "tolerance_bytes": 0},
            }
        )
    )
    try:
        rounds = [one_round(home, config, args, r) for r in range(args.repeats)]
    finally:
        shutil.rmtree(home, ignore_errors=True)

    def med(key: str) -> float:
        return statistics.median(x.get(key, 0.0) for x in rounds)

    print(
        f"\n{args.tables} small tables (2 partitions x {args.files} files each); "
        f"medians of {args.repeats}"
    )
    print(f"{'':34}{'seconds':>10}")
    print(f"{'separate calls (one per table)':34}{med('separate'):>10.2f}")
    print(f"{'one call, all tables':34}{med('one_call'):>10.2f}")
    ratio = med("one_call") / med("separate")
    print(f"one call / separate calls: {ratio:.3f}x")
    cold = med("cold_wall")
    phases = ("plan", "setup", "write", "verify", "commit")
    print(f"\none cold call: {cold:.2f} s wall (process start, Spark start, the action)")
    for phase in phases:
        print(f"  {phase:8}{med('t_' + phase):>8.2f} s  {med('t_' + phase) / cold:>6.1%} of wall")
    print(
        f"verify share of the cold call: {med('t_verify') / cold:.1%} "
        f"(issue #21's target: <= {VERIFY_TARGET:.0%})"
    )
    print(
        "calls-summary "
        f"one_call_vs_separate={ratio:.3f} cold_wall_s={cold:.2f} "
        f"verify_share_cold={med('t_verify') / cold:.3f}"
    )


if __name__ == "__main__":
    main()
