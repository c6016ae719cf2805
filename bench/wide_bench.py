"""Benchmark (issue #29): wide tables, one compaction pass by Iceberg and by icefloe.

    .venv/bin/python bench/wide_bench.py [--partitions 200,2000] [--files 6]
                                         [--profiles embedded,rest-s3] [--quick]
                                         [--rows 400] [--target-kb 1024] [--reads 3]
                                         [--arms iceberg,loop,optimize] [--idle-exit 0]
                                         [--redis redis://127.0.0.1:6379/9]

For each profile and each ``--partitions`` count, three identical copies of one table
(identity partition column ``part``, ``--files`` small files in every partition: one
PyIceberg append per file, each writing one file per partition; same rows in every copy;
``write.target-file-size-bytes`` set to the target on the table) are compacted once, each
by one of, as a user runs them (fresh processes, Spark start counted in the wall time):

* ``iceberg``: ``CALL lake.system.rewrite_data_files(table => ...)`` with Iceberg's
  defaults (the table's property gives it the same target), in a new Python process that
  starts its own Spark session with icefloe's Spark settings;
* ``icefloe loop``: ``icefloe decide --once`` (a config managing only that table, default
  policy, the same target), then one ``icefloe actor --idle-exit 0`` until the queue is
  drained; its wall is both processes';
* ``icefloe optimize``: ``icefloe optimize TABLE``.

Measured on each copy afterwards, from Iceberg metadata and data: snapshots added,
manifests in the current snapshot, data files after, a fresh reader's planning time (in a
new process: load the table and ``scan().plan_files()``, the median of ``--reads`` fresh
loads after a first one that pays the imports; the first shown apart) and rows checked
(row count and an order-free checksum of every column, against the data written).
``--profiles``: ``icefloe dev``'s profiles; the bench starts a profile's services in its
own temporary root on free ports and stops them at the end; a profile that cannot start
is reported and skipped. Redis: ``--redis`` under a key prefix of this run (deleted at the
end); when nothing answers there, a private ``redis-server`` on a free port, stopped at
the end. Issue #29's acceptance asks, of the loop against Iceberg: wall <= 1.0x,
snapshots added <= 2, files after <= Iceberg's, every row kept. The last line is a JSON summary.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import redis  # noqa: E402
import yaml  # noqa: E402
from pyiceberg.partitioning import PartitionField, PartitionSpec  # noqa: E402
from pyiceberg.schema import Schema  # noqa: E402
from pyiceberg.transforms import IdentityTransform  # noqa: E402
from pyiceberg.types import LongType, NestedField, StringType  # noqa: E402

from icefloe.app.ops import dev  # noqa: E402
from icefloe.base.catalog import load_catalog  # noqa: E402
from icefloe.base.config import Config, build_config  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ARMS = ("iceberg", "loop", "optimize")
HEADS = {"iceberg": "iceberg rewrite", "loop": "icefloe loop", "optimize": "icefloe optimize"}
TIMEOUT = 4 * 3600  # one process of one arm, seconds
SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "part", StringType(), required=False),
    NestedField(3, "payload", StringType(), required=False),
    NestedField(4, "value", LongType(), required=False),
)
SPEC = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "part"))
PAYLOAD_BYTES = 32  # hex characters per row's payload

ICEBERG_CALL = """
import json, sys
from icefloe.base.config import load_config
from icefloe.base.spark import build_spark
cfg = load_config(sys.argv[1])
spark = build_spark(cfg, app_name="iceberg-rewrite-data-files")
rows = spark.sql(
    f"CALL {cfg.catalog.name}.system.rewrite_data_files(table => '{sys.argv[2]}')"
).collect()
print(json.dumps(rows[0].asDict() if rows else {}))
spark.stop()
"""

FRESH_READER = """
import json, statistics, sys, time
from pyiceberg import manifest
from icefloe.base.catalog import load_catalog
from icefloe.base.config import load_config
catalog = load_catalog(load_config(sys.argv[1]))
samples = []
for _ in range(1 + int(sys.argv[3])):
    getattr(manifest, "clear_manifest_cache", lambda: None)()
    started = time.perf_counter()
    table = catalog.load_table(sys.argv[2])
    tasks = list(table.scan().plan_files())
    samples.append(time.perf_counter() - started)
print(json.dumps({"cold": samples[0], "warm": statistics.median(samples[1:]), "files": len(tasks)}))
"""


# --- data ----------------------------------------------------------------------------


def make_data(partitions: int, files: int, rows: int, seed: int) -> list[pa.Table]:
    """``files`` appends, each ``rows`` rows in every one of ``partitions`` partitions."""
    rng = np.random.default_rng(seed)
    names = [f"p{p:05d}" for p in range(partitions)]
    out = []
    for f in range(files):
        n = partitions * rows
        first = f * n
        out.append(
            pa.table(
                {
                    "id": pa.array(np.arange(first, first + n), pa.int64()),
                    "part": pa.array(np.repeat(names, rows)),
                    "payload": _hex_strings(rng, n),
                    "value": pa.array(rng.integers(0, 2**62, n), pa.int64()),
                }
            )
        )
    return out


def _hex_strings(rng: np.random.Generator, n: int) -> pa.Array:
    """``n`` random hex strings of PAYLOAD_BYTES characters, built as one buffer."""
    chars = rng.bytes(PAYLOAD_BYTES // 2 * n).hex().encode()
    offsets = np.arange(0, PAYLOAD_BYTES * (n + 1), PAYLOAD_BYTES, dtype=np.int32)
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets.tobytes()), pa.py_buffer(chars))


def checksum(table: pa.Table) -> tuple[int, int]:
    """Rows and an order-free checksum of ``id``, ``value`` and ``payload`` (every payload
    is PAYLOAD_BYTES long): the sum, mod 2**64, of a mix of each row's words."""
    if table.num_rows == 0:
        return 0, 0
    ids = table.column("id").to_numpy().astype(np.uint64)
    values = table.column("value").to_numpy().astype(np.uint64)
    payload = table.column("payload").combine_chunks()
    if isinstance(payload, pa.ChunkedArray):  # an empty chunk list
        payload = payload.chunk(0)
    offsets = np.frombuffer(payload.buffers()[1], np.int32, len(payload) + 1, payload.offset * 4)
    raw = np.frombuffer(payload.buffers()[2], np.uint8)[offsets[0] : offsets[-1]]
    words = raw.view(np.uint64).reshape(len(payload), PAYLOAD_BYTES // 8)
    with np.errstate(over="ignore"):
        h = ids * np.uint64(0x9E3779B97F4A7C15) ^ values
        for i in range(words.shape[1]):
            h = (h ^ (h >> np.uint64(29))) * np.uint64(0xBF58476D1CE4E5B9) + words[:, i]
        h ^= h >> np.uint64(31)
        total = int(h.sum(dtype=np.uint64))
    return table.num_rows, total


def make_copy(catalog: Any, ident: str, data: list[pa.Table], target: int) -> None:
    """One PyIceberg append per item of ``data``: one small file per partition each."""
    table = catalog.create_table(
        ident,
        schema=SCHEMA,
        partition_spec=SPEC,
        properties={"format-version": "2", "write.target-file-size-bytes": str(target)},
    )
    for chunk in data:
        table.append(chunk)


# --- one table's state ---------------------------------------------------------------


def table_state(catalog: Any, ident: str) -> dict[str, int]:
    table = catalog.load_table(ident)
    snap = table.current_snapshot()
    summary = snap.summary if snap is not None and snap.summary is not None else {}
    return {
        "snapshots": len(table.metadata.snapshots),
        "manifests": len(snap.manifests(table.io)) if snap is not None else 0,
        "files": int(summary.get("total-data-files", 0)),
        "bytes": int(summary.get("total-files-size", 0)),
        "records": int(summary.get("total-records", 0)),
    }


def fresh_reads(config: Path, ident: str, reads: int) -> dict[str, float]:
    """A new reader's planning: loading the table and ``scan().plan_files()`` in a new
    process, the first time (imports and connections included: what a fresh CLI reader
    pays) and the median of ``reads`` more (a fresh table load each, PyIceberg's manifest
    cache cleared: what the table's metadata costs), seconds; and the files planned."""
    argv = [sys.executable, "-c", FRESH_READER, str(config), ident, str(reads)]
    return json.loads(run_process(argv)[1])


# --- the arms --------------------------------------------------------------------------


def run_process(argv: list[str], config: Path | None = None) -> tuple[float, str]:
    """Wall seconds and stdout of one process (ICEFLOE_CONFIG = ``config``)."""
    env = {**os.environ}
    env.pop("ICEFLOE_PROFILE", None)
    if config is not None:
        env["ICEFLOE_CONFIG"] = str(config)
    started = time.perf_counter()
    run = subprocess.run(
        argv, env=env, capture_output=True, text=True, timeout=TIMEOUT, cwd=ROOT, check=False
    )
    wall = time.perf_counter() - started
    if run.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:4])} failed ({run.returncode}): {run.stderr[-3000:]}")
    return wall, run.stdout


def icefloe(config: Path, *args: str) -> tuple[float, str]:
    return run_process([sys.executable, "-m", "icefloe", *args], config)


def parse_json(text: str) -> Any:
    """A command's ``--json`` output: the whole of stdout, else its last JSON line."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        lines = [x for x in text.splitlines() if x.startswith(("{", "["))]
        return json.loads(lines[-1]) if lines else {}


def arm_iceberg(config: Path, ident: str) -> dict[str, Any]:
    wall, out = run_process([sys.executable, "-c", ICEBERG_CALL, str(config), ident], config)
    return {"wall": wall, "detail": out.strip().splitlines()[-1] if out.strip() else ""}


def arm_loop(config: Path, ident: str, idle_exit: float) -> dict[str, Any]:
    decide, decided = icefloe(config, "decide", "--once", "--json")
    actor, acted = icefloe(config, "actor", "--idle-exit", f"{idle_exit:g}")
    step = parse_json(decided)
    try:  # what is left in the queue (not timed)
        queue = parse_json(icefloe(config, "status", "--json")[1]).get("queue")
    except (RuntimeError, json.JSONDecodeError, AttributeError) as e:
        queue = f"status failed: {e}"[:300]
    return {
        "wall": decide + actor,
        "decide": decide,
        "actor": actor,
        "enqueued": step.get("enqueued"),
        "dispatched": step.get("dispatched"),
        "detail": acted.strip().splitlines()[-1] if acted.strip() else "",
        "queue_after": queue,
    }


def arm_optimize(config: Path, ident: str) -> dict[str, Any]:
    wall, out = icefloe(config, "optimize", ident, "--json")
    report = parse_json(out)
    parts = report.get("partitions") or [] if isinstance(report, dict) else []
    return {
        "wall": wall,
        "detail": f"{sum(p.get('status') == 'rewritten' for p in parts)} partitions rewritten",
    }


# --- one case: a profile and a partition count ---------------------------------------


def write_config(
    path: Path,
    home: Path,
    catalog: dict[str, Any] | None,
    redis_url: str,
    prefix: str,
    managed: str,
    target: int,
) -> Config:
    """The case's config: only what differs from the defaults (its catalog, Redis under
    the run's prefix, local[2] Spark, the target, the one managed table)."""
    raw = {
        "catalog": catalog
        or {"uri": f"sqlite:///{home}/catalog.db", "warehouse": f"file://{home}/warehouse"},
        "redis": {"url": redis_url, "key_prefix": prefix},
        "spark": {
            "master": "local[2]",
            "conf": {
                "spark.sql.shuffle.partitions": "4",
                "spark.ui.enabled": "false",
                "spark.driver.memory": "2g",
            },
        },
        "defaults": {"target_file_size_bytes": target},
        "managed": {"tables": [managed]},
    }
    path.write_text(yaml.safe_dump(raw))
    path.chmod(0o600)  # a profile's catalog section holds its S3 keys
    return build_config(raw, source=str(path), home=home)


def run_case(
    args: argparse.Namespace,
    home: Path,
    profile: str,
    catalog_section: dict[str, Any] | None,
    partitions: int,
    prefix: str,
) -> dict[str, Any]:
    target = args.target_kb * 1024
    ns = f"wide_{partitions}"
    idents = {arm: f"{ns}.{arm}" for arm in ARMS}
    config = home / f"icefloe-{partitions}.yaml"
    cfg = write_config(
        config, home, catalog_section, args.redis, f"{prefix}-{partitions}", idents["loop"], target
    )
    catalog = load_catalog(cfg)
    catalog.create_namespace(ns)
    data = make_data(partitions, args.files, args.rows, seed=partitions)
    expected = checksum(pa.concat_tables(data))
    started = time.perf_counter()
    for arm in args.arm_list:
        make_copy(catalog, idents[arm], data, target)
    built = time.perf_counter() - started
    del data
    before = table_state(catalog, idents[args.arm_list[0]])
    print(
        f"[{profile} {partitions}] built {len(args.arm_list)} copies of {before['files']} files "
        f"({before['bytes'] / 2**20:.1f} MiB, {before['records']} rows) in {built:.1f} s",
        flush=True,
    )
    out: dict[str, Any] = {
        "profile": profile,
        "partitions": partitions,
        "files_per_partition": args.files,
        "files_before": before["files"],
        "bytes_before": before["bytes"],
        "rows": expected[0],
        "build_s": built,
        "arms": {},
    }
    for arm in args.arm_list:
        ident = idents[arm]
        start = table_state(catalog, ident)
        try:
            if arm == "iceberg":
                res = arm_iceberg(config, ident)
            elif arm == "loop":
                res = arm_loop(config, ident, args.idle_exit)
            else:
                res = arm_optimize(config, ident)
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            print(f"[{profile} {partitions}] {arm} failed: {e}", flush=True)
            out["arms"][arm] = {"error": str(e)[-500:]}
            continue
        end = table_state(catalog, ident)
        reader = fresh_reads(config, ident, args.reads)
        rows, total = checksum(catalog.load_table(ident).scan().to_arrow())
        res.update(
            {
                "snapshots_added": end["snapshots"] - start["snapshots"],
                "manifests_after": end["manifests"],
                "files_after": end["files"],
                "files_planned": reader["files"],
                "plan_ms": reader["warm"] * 1000,
                "plan_cold_ms": reader["cold"] * 1000,
                "rows_before": start["records"],
                "rows_after": rows,
                "rows_ok": start["records"] == rows == expected[0] and total == expected[1],
            }
        )
        out["arms"][arm] = res
        print(f"[{profile} {partitions}] {arm}: {json.dumps(res)}", flush=True)
    return out


# --- report ----------------------------------------------------------------------------


def _cell(res: dict[str, Any], key: str, fmt: str) -> str:
    if not res:
        return "not run"
    if "error" in res:
        return "failed"
    value = res.get(key)
    if value is None:
        return "-"
    if key == "rows_ok":
        return f"{'ok' if value else 'MISMATCH'} {res['rows_after']}"
    return fmt.format(value)


def ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def print_case(case: dict[str, Any]) -> None:
    arms = case["arms"]
    print(
        f"\n{case['profile']}: {case['partitions']} partitions x {case['files_per_partition']} "
        f"small files ({case['files_before']} files, {case['bytes_before'] / 2**20:.1f} MiB, "
        f"{case['rows']} rows) a copy; copies built in {case['build_s']:.0f} s, the whole case "
        f"{case.get('case_s', 0):.0f} s"
    )
    head = f"{'':26}" + "".join(f"{HEADS[a]:>18}" for a in ARMS)
    print(head + "\n" + "-" * len(head))
    rows = [
        ("wall s", "wall", "{:.1f}"),
        ("  decide --once s", "decide", "{:.1f}"),
        ("  actor s", "actor", "{:.1f}"),
        ("snapshots added", "snapshots_added", "{:d}"),
        ("manifests after", "manifests_after", "{:d}"),
        ("data files after", "files_after", "{:d}"),
        ("fresh reader plan ms", "plan_ms", "{:.1f}"),
        ("  first, new process ms", "plan_cold_ms", "{:.0f}"),
        ("rows checked", "rows_ok", ""),
    ]
    for label, key, fmt in rows:
        print(f"{label:26}" + "".join(f"{_cell(arms.get(a, {}), key, fmt):>18}" for a in ARMS))
    base = arms.get("iceberg", {}).get("wall")
    cells = []
    for arm in ARMS:
        r = ratio(arms.get(arm, {}).get("wall"), base)
        cells.append("-" if r is None else f"{r:.2f}x")
    print(f"{'wall / iceberg':26}" + "".join(f"{c:>18}" for c in cells))
    loop = arms.get("loop", {})
    if loop and "error" not in loop:
        print(
            f"loop: decide enqueued {loop.get('enqueued')}, dispatched {loop.get('dispatched')}; "
            f"{loop.get('detail')}; queue after: {json.dumps(loop.get('queue_after'))}"
        )


def summary(cases: list[dict[str, Any]], skipped: dict[str, str]) -> dict[str, Any]:
    out = []
    for case in cases:
        arms = {arm: case["arms"].get(arm, {}) for arm in ARMS}
        base = arms["iceberg"].get("wall")
        out.append(
            {
                "profile": case["profile"],
                "partitions": case["partitions"],
                "files_before": case["files_before"],
                **{
                    f"{arm}_{k}": arms[arm].get(k)
                    for arm in ARMS
                    for k in (
                        "wall",
                        "snapshots_added",
                        "manifests_after",
                        "files_after",
                        "plan_ms",
                        "plan_cold_ms",
                        "rows_ok",
                    )
                },
                "loop_vs_iceberg_wall": ratio(arms["loop"].get("wall"), base),
                "optimize_vs_iceberg_wall": ratio(arms["optimize"].get("wall"), base),
            }
        )
    return {"bench": "wide", "cases": out, "skipped": skipped}


# --- Redis -----------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _answers(url: str) -> bool:
    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=1).ping())
    except redis.RedisError:
        return False


def private_redis(home: Path) -> tuple[subprocess.Popen[bytes], str]:
    """A redis-server of this run on a free loopback port (no persistence)."""
    port = _free_port()
    proc = subprocess.Popen(
        ["redis-server", "--bind", "127.0.0.1", "--port", str(port), "--save", ""]
        + ["--appendonly", "no", "--dir", str(home)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/9"
    deadline = time.monotonic() + 10
    while not _answers(url):
        if time.monotonic() > deadline or proc.poll() is not None:
            proc.kill()
            raise SystemExit(f"could not start a private redis-server on port {port}")
        time.sleep(0.1)
    return proc, url


def drop_keys(url: str, prefix: str) -> None:
    client = redis.Redis.from_url(url)
    keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
    for i in range(0, len(keys), 500):
        client.delete(*keys[i : i + 500])


# --- main ------------------------------------------------------------------------------


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--partitions", default="200,2000", help="comma-separated counts")
    p.add_argument("--files", type=int, default=6, help="small files per partition")
    p.add_argument("--profiles", default="embedded,rest-s3", help="comma-separated")
    p.add_argument("--rows", type=int, default=400, help="rows per small file")
    p.add_argument("--target-kb", type=int, default=1024)
    p.add_argument("--reads", type=int, default=3, help="fresh table loads timed (median)")
    p.add_argument("--idle-exit", type=float, default=0.0, help="the actor's --idle-exit")
    p.add_argument("--redis", default="redis://127.0.0.1:6379/9")
    p.add_argument("--arms", default=",".join(ARMS), help="comma-separated, of " + ",".join(ARMS))
    p.add_argument("--quick", action="store_true", help="40 partitions, embedded only")
    args = p.parse_args()
    if args.quick:
        args.partitions, args.profiles = "40", "embedded"
    try:
        args.partition_counts = [int(x) for x in args.partitions.split(",") if x.strip()]
    except ValueError:
        p.error(f"--partitions: comma-separated integers, got {args.partitions!r}")
    args.profile_list = [x.strip() for x in args.profiles.split(",") if x.strip()]
    unknown = [x for x in args.profile_list if x not in dev.SERVICES]
    if unknown or not args.profile_list:
        p.error(f"--profiles: choose among {', '.join(dev.SERVICES)}, got {args.profiles!r}")
    args.arm_list = [a for a in ARMS if a in args.arms.split(",")]
    if set(args.arms.split(",")) - set(ARMS) or not args.arm_list:
        p.error(f"--arms: choose among {', '.join(ARMS)}, got {args.arms!r}")
    if (
        not args.partition_counts
        or min(args.partition_counts) < 1
        or min(args.files, args.reads) < 1
    ):
        p.error("need --partitions >= 1, --files >= 1 and --reads >= 1")
    return args


def main() -> None:
    args = parse_args()
    run_id = uuid.uuid4().hex[:8]
    prefix = f"icefloe-wide-{run_id}"
    work = Path(tempfile.mkdtemp(prefix="icefloe-wide-bench-"))
    redis_proc = None
    if not _answers(args.redis):
        redis_proc, url = private_redis(work)
        print(f"note: nothing answers at {args.redis}; using a private redis-server ({url})")
        args.redis = url
    cases: list[dict[str, Any]] = []
    skipped: dict[str, str] = {}
    started = time.perf_counter()
    try:
        for profile in args.profile_list:
            home = work / profile
            home.mkdir()
            section = None
            if dev.SERVICES[profile]:
                try:
                    section = dev.up(profile, home / "dev", free_ports=True).overlay["catalog"]
                except Exception as e:  # noqa: BLE001 - any reason: say it, run the others
                    skipped[profile] = f"{type(e).__name__}: {e}"
                    print(f"note: profile {profile} cannot run here, skipped: {skipped[profile]}")
                    continue
            try:
                for partitions in args.partition_counts:
                    t0 = time.perf_counter()
                    try:
                        case = run_case(args, home, profile, section, partitions, prefix)
                    except Exception as e:  # noqa: BLE001 - say it, run the other cases
                        skipped[f"{profile} {partitions}"] = f"{type(e).__name__}: {e}"
                        print(f"note: {profile} {partitions} failed: {type(e).__name__}: {e}")
                        continue
                    case["case_s"] = time.perf_counter() - t0
                    cases.append(case)
                    print_case(case)
                    print(f"[{profile} {partitions}] case took {case['case_s']:.0f} s", flush=True)
            finally:
                if dev.SERVICES[profile]:
                    dev.down(profile, home / "dev")
                shutil.rmtree(home, ignore_errors=True)
    finally:
        if redis_proc is not None:
            redis_proc.terminate()
            redis_proc.wait(timeout=30)
        else:
            drop_keys(args.redis, prefix)
        shutil.rmtree(work, ignore_errors=True)

    print("\n=== all cases ===")
    for case in cases:
        print_case(case)
    for what, why in skipped.items():
        print(f"\n{what}: skipped ({why})")
    print(f"\ntotal {time.perf_counter() - started:.0f} s")
    print(json.dumps(summary(cases, skipped)))


if __name__ == "__main__":
    main()
