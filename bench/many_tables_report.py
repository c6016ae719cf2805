"""What ``many_tables_bench.py`` measured, and how it prints it: one line a call, today's
figure beside the old one, the issue's goals (#48) checked, and one JSON line."""

from __future__ import annotations

import statistics
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from many_tables_build import COUNTER, Requests

SLOW_S = 10.0  # a call this slow is run once, not three times


@dataclass
class Measured:
    seconds: float
    requests: Requests | None  # None: a subprocess (its in-process twin counts)
    runs: int


@dataclass
class Line:
    what: str
    new: Measured | None
    old: Measured | None


def timed(fn: Callable[[], Any], runs: int = 3) -> tuple[Measured, Any]:
    """``fn``'s median seconds (one run if the first took ``SLOW_S`` or more), the
    requests of its first run, and its first result."""
    times, first, counted = [], None, None
    for i in range(runs):
        with COUNTER.counting() as req:
            start = time.perf_counter()
            out = fn()
            times.append(time.perf_counter() - start)
        if i == 0:
            first, counted = out, req
            if times[0] >= SLOW_S:
                break
    return Measured(statistics.median(times), counted, len(times)), first


def cold(icefloe: Path, argv: list[str], env: dict[str, str], runs: int = 3) -> Measured:
    """A subprocess's wall seconds (median of ``runs`` while under ``SLOW_S``)."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run([str(icefloe), *argv], env=env, capture_output=True)
        times.append(time.perf_counter() - start)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} failed: {done.stderr.decode()[-2000:]}")
        if times[0] >= SLOW_S:
            break
    return Measured(statistics.median(times), None, len(times))


def _cells(m: Measured | None) -> tuple[str, str]:
    if m is None:
        return "-", "-"
    req = "(cold)" if m.requests is None else f"{m.requests.round_trips} ({m.requests.loads})"
    return f"{m.seconds:.3f}", req


def render(n: int, lines: list[Line]) -> None:
    print(f"\n{n:,} tables: seconds, catalog round trips (loads in brackets); new/old seconds")
    print(f"  {'':44} {'new s':>9} {'new req':>13} {'old s':>9} {'old req':>13} {'new/old':>8}")
    for ln in lines:
        (ns, nr), (os_, or_) = _cells(ln.new), _cells(ln.old)
        ratio = f"{ln.new.seconds / ln.old.seconds:.4f}" if ln.new and ln.old else "-"
        print(f"  {ln.what:44} {ns:>9} {nr:>13} {os_:>9} {or_:>13} {ratio:>8}")


def goals(lines: list[Line], facts: dict[str, Any]) -> dict[str, bool]:
    """The acceptance of #48, checked at this size (the issue sets them at 10,000)."""
    by = {ln.what: ln.new for ln in lines if ln.new is not None}
    dash = [by[w] for w in by if w.startswith("dashboard /api/") and "?q=" not in w]
    return {
        "tables_json_cold_le_3s": by["tables --json, cold CLI"].seconds <= 3.0,
        "status_json_cold_le_3s": by["status --json, cold CLI"].seconds <= 3.0,
        "dashboard_le_0.5s_0_requests": all(
            m.seconds <= 0.5 and m.requests is not None and m.requests.round_trips == 0
            for m in dash
        ),
        "unchanged_pass_le_30s": by["decider pass, nothing changed"].seconds <= 30.0,
        "one_pct_loads_only_changed": facts["one_pct_loaded_changed"] == facts["changed"]
        and not [t for t in facts["one_pct_loaded_other"] if t.startswith("db.")],
    }


def as_json(m: Measured | None) -> dict[str, Any] | None:
    if m is None:
        return None
    out: dict[str, Any] = {"s": round(m.seconds, 4), "runs": m.runs}
    return out | (m.requests.as_dict() if m.requests else {"cold": True})
