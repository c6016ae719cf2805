"""Operator surfaces at many tables (#48), a script not a test: ``tables``, ``status``, the
dashboard and the decider's passes answered from the decider's kept state (today) beside
the per-table catalog reads they replaced (old), in one run, with the catalog requests each
makes.

    .venv/bin/python bench/many_tables_bench.py [--tables 1000,10000] [--quick]
        [--profile embedded|rest-s3] [--redis redis://127.0.0.1:6379/12]
        [--cold-old-max 1000] [--cold-decide-max 1000] [--lean-above 5000]
        [--new-only] [--rest-build direct|register] [--cprofile]

Per size, on a fresh catalog of N tables in one namespace (``many_tables_build``: one real
table of 2 partitions x 3 small files, the others metadata-only copies sharing its files;
``--quick``: 200 tables) and a flushed Redis db (``--redis``; key prefix ``manybench``):

1. ``tables --json`` and ``tables --worst 10 --json``: kept (today) vs ``--fresh`` (one
   ``table_summary`` a table, what ``tables`` did before #48); in-process (click's
   CliRunner) and cold (``.venv/bin/icefloe`` as a subprocess; old ones cold only up to
   ``--cold-old-max`` tables; above ``--lean-above`` tables the old ``--worst 10`` and the
   old dashboard's first poll, which repeat ``--fresh``'s reads, are not timed);
2. ``status --json``: kept records vs ``gather(..., detail=True)`` (every table's stats
   read one by one, the pre-#48 status); cold for today's;
3. the dashboard after the decider's first pass: ``Dashboard.tables()`` first and warm
   polls, a name search and ``Dashboard.overview()`` vs the pre-#48 ``/api/tables``
   (``_summary`` of every managed table: a ``table_summary`` each on the first poll, a
   catalog load each after) and overview (``gather(detail=True)``);
4. the decider (``open_decider(...).step()``, one-shot passes, its clock advanced by
   ``poll_seconds`` before each): the first pass (every table new; also ``decide --once``
   cold, up to ``--cold-decide-max`` tables), a pass with nothing changed (today: the
   poll asks each table's version, ``icefloe.service.decider.light``; old: the poll knows none,
   every table loaded), a pass after 1% of the tables got a commit (today: only those
   loaded; old: another 1% changed, every table loaded), a pass ``RECORD_MAX_AGE_S``
   later (every kept record due to be built again at once) and one ``FULL_REFRESH_SECONDS``
   after that (every table's periodic full refresh due at once).

``--new-only``: today's calls only (no old one, no kept-vs-fresh check). Seconds are
medians of 3 where one run is under 10 s, else one run. Requests are counted in this
process (``many_tables_build.Counting``): SQL statements on the embedded catalog, HTTP
requests on the REST one, and loads (``load_table`` calls; on REST, GETs of a table
answered 200); a cold subprocess makes the same requests as its in-process twin. Prints
a table per size and one JSON line.
"""

from __future__ import annotations

import argparse
import copy
import cProfile
import json
import os
import pstats
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import redis  # noqa: E402
import yaml  # noqa: E402
from click.testing import CliRunner  # noqa: E402
from many_tables_build import (  # noqa: E402
    COUNTER,
    append_small,
    build_embedded,
    build_rest,
    build_rest_direct,
    table_name,
)
from many_tables_report import Line, Measured, as_json, cold, goals, render, timed  # noqa: E402

from icefloe.app.cli import cli  # noqa: E402
from icefloe.app.web.data import Dashboard  # noqa: E402
from icefloe.base.catalog import load_catalog, managed_tables  # noqa: E402
from icefloe.base.config import Config, build_config  # noqa: E402
from icefloe.base.redis_client import connect  # noqa: E402
from icefloe.service.decider.light import FULL_REFRESH_SECONDS  # noqa: E402
from icefloe.service.decider.wiring import open_decider  # noqa: E402
from icefloe.service.observe.kept import RECORD_MAX_AGE_S  # noqa: E402
from icefloe.service.observe.status import gather  # noqa: E402
from icefloe.state.open import open_state  # noqa: E402

ICEFLOE = ROOT / ".venv" / "bin" / "icefloe"


class Clock:
    def __init__(self) -> None:
        self.t = time.time()

    def __call__(self) -> float:
        return self.t


@dataclass
class Run:
    """One size's warehouse and what the calls need."""

    n: int
    args: argparse.Namespace
    cfg: Config
    cfg_path: Path
    env: dict[str, str]
    catalog: Any

    def cli(self, *argv: str) -> Any:
        """``icefloe --config … argv`` in this process; its JSON."""
        runner = CliRunner()
        result = runner.invoke(cli, ["--config", str(self.cfg_path), *argv], catch_exceptions=False)
        assert result.exit_code == 0, result.output[-2000:]
        return json.loads(result.output)

    def cold(self, *argv: str, runs: int = 3) -> Measured:
        """``.venv/bin/icefloe --config … argv`` as a subprocess."""
        return cold(ICEFLOE, ["--config", str(self.cfg_path), *argv], self.env, runs)


def old_dashboard_tables(board: Dashboard) -> list[dict[str, Any]]:
    """The pre-#48 ``Dashboard.tables``: every managed table's ``_summary`` (a
    ``table_summary`` when its metadata changed or the kept one is a minute old, else a
    catalog load), worst first."""
    rows = []
    for name in managed_tables(board.cfg, board._cat()):
        s = copy.deepcopy(board._summary(name).summary)
        parts = s.pop("partitions")
        rows.append(s | {"partitions": len(parts)})
    rows.sort(key=lambda r: (r.get("health") or {}).get("score", -1.0))
    return rows


def step(decider: Any, clock: Clock, poll_s: float, old: bool = False) -> Any:
    """One one-shot decider pass, ``poll_s`` after the last. ``old``: as before #48, every
    table loaded (``Light.poll_started`` replaced: the poll learns no table's version)."""
    clock.t += poll_s
    light = decider.light
    if old:

        def knows_nothing(*_: Any, **__: Any) -> None:
            light._versions = None
            getattr(light, "_loaded", {}).clear()

        light.poll_started = knows_nothing
    try:
        return decider.step()
    finally:
        vars(light).pop("poll_started", None)


def old_surfaces(run: Run) -> dict[str, Any]:
    """The pre-#48 ``tables`` and dashboard polls (they need nothing in Redis)."""
    n, args, out = run.n, run.args, {}
    out["tables"], out["fresh"] = timed(lambda: run.cli("tables", "--fresh", "--json"))
    lean = n > args.lean_above
    if not lean:
        worst = ("tables", "--worst", "10", "--fresh", "--json")
        out["worst"] = timed(lambda: run.cli(*worst))[0]
    if n <= args.cold_old_max:
        out["tables_cold"] = run.cold("tables", "--fresh", "--json")
    print("old tables measured", flush=True)
    board = Dashboard(run.cfg, now=Clock())  # a frozen clock: a warm poll re-reads no summary
    if lean:  # its first poll (a table_summary each, as tables --fresh), not timed
        board._summaries = {t: board._summary(t) for t in managed_tables(run.cfg, run.catalog)}
    else:
        out["dash_first"] = timed(lambda: old_dashboard_tables(board), runs=1)[0]
    out["dash_warm"] = timed(lambda: old_dashboard_tables(board))[0]
    print("old dashboard measured", flush=True)
    return out


def run_size(n: int, args: argparse.Namespace, home: Path) -> tuple[list[Line], dict[str, Any]]:
    print(f"\n== {n:,} tables ({args.profile}) ==", flush=True)
    client = redis.Redis.from_url(args.redis)
    client.flushdb()
    raw, cfg_path, env = write_config(home, args)
    cfg = build_config(raw, source=str(cfg_path), home=home)
    catalog = load_catalog(cfg)
    if args.profile == "embedded":
        built_s = build_embedded(catalog, cfg.catalog.warehouse, n)
    elif args.rest_build == "direct":
        built_s = build_rest_direct(catalog, cfg.catalog.warehouse, n, args.rest_dir)
    else:
        built_s = build_rest(catalog, cfg.catalog.warehouse, n)
    print(f"built {n:,} tables in {built_s:.1f} s", flush=True)
    run = Run(n, args, cfg, cfg_path, env, catalog)
    old = {} if args.new_only else old_surfaces(run)
    lines: list[Line] = []
    facts: dict[str, Any] = {"build_s": round(built_s, 1)}

    # -- the decider's first pass: cold (decide --once), then in-process on a fresh Redis --
    if n <= args.cold_decide_max:
        first_cold = run.cold("decide", "--once", "--json", runs=1)
        client.flushdb()
        lines.append(Line("decide --once, cold (first pass)", first_cold, None))
    clock = Clock()
    decider = open_decider(cfg, catalog, connect(cfg), clock=clock)
    poll_s = cfg.decider.poll_seconds
    first, report = timed(lambda: step(decider, clock, poll_s), runs=1)
    assert not report.failed, report.failed
    lines.insert(0, Line("decider first pass (every table new)", first, None))
    print(f"first pass {first.seconds:.1f} s", flush=True)

    # -- tables and status, kept --
    new_tables, kept = timed(lambda: run.cli("tables", "--json"))
    if "fresh" in old:
        facts["score_mismatches"] = mismatches(kept, old["fresh"])
    new_worst, _ = timed(lambda: run.cli("tables", "--worst", "10", "--json"))
    lines.append(Line("tables --json (in-process)", new_tables, old.get("tables")))
    lines.append(
        Line("tables --json, cold CLI", run.cold("tables", "--json"), old.get("tables_cold"))
    )
    lines.append(Line("tables --worst 10 --json (in-process)", new_worst, old.get("worst")))
    worst_cold = run.cold("tables", "--worst", "10", "--json")
    lines.append(Line("tables --worst 10 --json, cold CLI", worst_cold, None))
    rclient = connect(cfg)
    queue = open_state(cfg, rclient).queue
    new_status, _ = timed(lambda: gather(cfg, rclient, queue, time.time()))
    old_status = None
    if not args.new_only:
        old_status, _ = timed(lambda: gather(cfg, rclient, queue, time.time(), detail=True))
    lines.append(Line("status --json (gather; old: detail=True)", new_status, old_status))
    lines.append(Line("status --json, cold CLI", run.cold("status", "--json"), None))

    # -- the dashboard, after the decider listed the tables --
    board = Dashboard(cfg)
    dash_first, page = timed(board.tables, runs=1)
    dash_warm, _ = timed(board.tables)
    dash_search, _ = timed(lambda: board.tables(query="t0004", offset=0, limit=50))
    overview, _ = timed(board.overview)
    assert page["total"] == n and len(page["rows"]) == min(n, 50), page["total"]
    lines.append(Line("dashboard /api/tables, first poll", dash_first, old.get("dash_first")))
    lines.append(Line("dashboard /api/tables, warm poll", dash_warm, old.get("dash_warm")))
    lines.append(Line("dashboard /api/tables?q=t0004 (warm)", dash_search, None))
    lines.append(Line("dashboard /api/overview (old: detail=True)", overview, old_status))
    print("surfaces measured", flush=True)

    # -- the decider's later passes --
    same, rep = timed(lambda: step(decider, clock, poll_s))
    facts["unchanged_refreshed_light"] = rep.unchanged
    same_old = None if args.new_only else timed(lambda: step(decider, clock, poll_s, True))[0]
    lines.append(Line("decider pass, nothing changed", same, same_old))
    changed = [table_name(i) for i in range(0, n, 100)]  # 1%
    append_small(catalog, changed)
    pct, rep = timed(lambda: step(decider, clock, poll_s), runs=1)
    assert len(rep.applied) == len(changed), (len(rep.applied), len(changed))
    assert pct.requests is not None
    facts["changed"] = len(changed)
    facts["one_pct_loaded_changed"] = len(set(pct.requests.loaded) & set(changed))
    facts["one_pct_loaded_other"] = {
        t: c for t, c in pct.requests.loaded.most_common() if t not in changed
    }
    facts["one_pct_loads_a_changed_table"] = max(pct.requests.loaded[t] for t in changed)
    pct_old = None
    if not args.new_only:
        append_small(catalog, [table_name(i) for i in range(50, n, 100)])
        pct_old, _ = timed(lambda: step(decider, clock, poll_s, old=True), runs=1)
    lines.append(Line(f"decider pass, 1% changed ({len(changed)})", pct, pct_old))
    clock.t += RECORD_MAX_AGE_S  # every record was written in one pass: all due again
    records, rep = timed(lambda: step(decider, clock, poll_s), runs=1)
    facts["records_due_unchanged"] = rep.unchanged
    lines.append(Line("decider pass, records due (+5 min)", records, None))
    clock.t += FULL_REFRESH_SECONDS  # every table was refreshed in full in one pass: due now
    full, rep = timed(lambda: step(decider, clock, poll_s), runs=1)
    facts["full_refresh_unchanged"] = rep.unchanged
    lines.append(Line("decider pass, full refresh due (+10 min)", full, None))
    if args.cprofile:
        profile_calls(run, board, rclient, queue, decider, clock)
    rclient.close()
    return lines, facts


def mismatches(kept: list[dict[str, Any]], fresh: list[dict[str, Any]]) -> int:
    """Tables whose kept row differs from the fresh one (score within 0.05, files,
    partitions, snapshot), and tables one side lacks."""
    by_name = {r["table"]: r for r in fresh}
    bad = abs(len(kept) - len(fresh))
    for row in kept:
        f = by_name.get(row["table"])
        if f is None or row.get("seen") is False or row.get("error") or f.get("error"):
            bad += 1
        elif abs(row["health"]["score"] - f["health"]["score"]) > 0.05:
            bad += 1
        elif any(row[k] != f[k] for k in ("files", "partitions", "snapshot_id")):
            bad += 1
    return bad


def profile_calls(run: Run, board: Dashboard, *rest: Any) -> None:
    """cProfile of today's calls (the functions of most cumulative time)."""
    rclient, queue, decider, clock = rest
    poll_s = run.cfg.decider.poll_seconds
    calls = {
        "tables --json": lambda: run.cli("tables", "--json"),
        "status (gather)": lambda: gather(run.cfg, rclient, queue, time.time()),
        "dashboard first poll": lambda: Dashboard(run.cfg).tables(),
        "dashboard warm poll": board.tables,
        "decider pass, nothing changed": lambda: step(decider, clock, poll_s),
    }
    for what, fn in calls.items():
        prof = cProfile.Profile()
        prof.runcall(fn)
        print(f"\n-- cProfile: {what} --")
        pstats.Stats(prof).sort_stats("cumulative").print_stats(25)


def write_config(
    home: Path, args: argparse.Namespace
) -> tuple[dict[str, Any], Path, dict[str, str]]:
    """The bench's config (written for the CLI subprocesses) and their environment."""
    if args.profile == "rest-s3":
        catalog = dict(args.rest_catalog)
    else:
        catalog = {"uri": f"sqlite:///{home}/catalog.db", "warehouse": f"file://{home}/warehouse"}
    raw = {
        "catalog": {"name": "lake", **catalog},
        "redis": {"url": args.redis, "key_prefix": "manybench"},
        "managed": {"namespaces": ["db"]},
    }
    path = home / "icefloe.yaml"
    path.write_text(yaml.safe_dump(raw))
    path.chmod(0o600)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ICEFLOE_")}
    return raw, path, env


def start_rest(root: Path, args: argparse.Namespace) -> None:
    """The rest-s3 profile's services under ``root`` (``icefloe dev up``, free ports)."""
    from icefloe.app.ops import dev

    state = dev.up("rest-s3", root, free_ports=True)
    args.rest_catalog = dict(state.overlay["catalog"])
    args.rest_dir = dev.profile_dir("rest-s3", root)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tables", default="1000,10000", help="sizes, comma separated")
    ap.add_argument("--quick", action="store_true", help="200 tables")
    ap.add_argument("--profile", choices=("embedded", "rest-s3"), default="embedded")
    ap.add_argument("--redis", default="redis://127.0.0.1:6379/12")
    ap.add_argument("--cold-old-max", type=int, default=1000)
    ap.add_argument("--cold-decide-max", type=int, default=1000)
    ap.add_argument("--lean-above", type=int, default=5000)
    ap.add_argument("--new-only", action="store_true", help="today's calls only")
    ap.add_argument(
        "--rest-build",
        choices=("direct", "register"),
        default="direct",
        help="rest-s3: copies written into s3proxy's files and the server's SQLite catalog "
        "(direct), or uploaded and registered through the API, a request a table",
    )
    ap.add_argument("--cprofile", action="store_true", help="cProfile today's calls at each size")
    args = ap.parse_args()
    sizes = [200] if args.quick else [int(s) for s in args.tables.split(",")]
    COUNTER.install()
    base = Path(tempfile.mkdtemp(prefix="icefloe-many-tables-"))
    out: dict[str, Any] = {"profile": args.profile, "sizes": {}}
    try:
        for n in sizes:
            home = base / f"n{n}"
            home.mkdir()
            if args.profile == "rest-s3":
                start_rest(base / f"dev{n}", args)  # a fresh catalog and store each size
            lines, facts = run_size(n, args, home)
            render(n, lines)
            met = goals(lines, facts)
            print(f"  goals: {met}\n  facts: {facts}", flush=True)
            out["sizes"][n] = {
                "lines": {
                    ln.what: {"new": as_json(ln.new), "old": as_json(ln.old)} for ln in lines
                },
                "facts": facts,
                "goals": met,
            }
            if args.profile == "rest-s3":
                stop_rest(base / f"dev{n}")
    finally:
        for root in base.glob("dev*"):
            stop_rest(root)
        redis.Redis.from_url(args.redis).flushdb()
        shutil.rmtree(base, ignore_errors=True)
    print(json.dumps(out))


def stop_rest(root: Path) -> None:
    from icefloe.app.ops import dev

    dev.down("rest-s3", root)


if __name__ == "__main__":
    main()
