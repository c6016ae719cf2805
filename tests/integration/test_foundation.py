"""The foundation end to end: bootstrap idempotence, doctor, the demo data generator."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from icefloe.app.demo.ingest import TableSpec, ingest
from icefloe.base.config import PROJECT_ROOT
from icefloe.base.tablestats import current_partitions
from icefloe.base.versions import ARTIFACTS, extensions_jar

pytestmark = pytest.mark.integration


def test_bootstrap_second_run_changes_nothing() -> None:
    """The README's commands run the bootstrap every time: a warm run must be a no-op."""
    venv_stamp = PROJECT_ROOT / ".venv" / ".icefloe-stamp"
    jars = sorted((PROJECT_ROOT / ".jars").glob("*.jar"))
    before = {p: p.stat().st_mtime_ns for p in [venv_stamp, *jars]}
    out = subprocess.run(
        ["bash", str(PROJECT_ROOT / "scripts" / "bootstrap.sh")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert "python packages: up to date" in out.stdout
    assert "redis: answering" in out.stdout
    assert "fetching" not in out.stdout and "installing" not in out.stdout
    after = {p: p.stat().st_mtime_ns for p in before}
    assert after == before
    # .jars/*.jar is Spark's classpath: the artifacts and icefloe's SQL extension, nothing else
    assert sorted(p.name for p in jars) == sorted([*(a.jar for a in ARTIFACTS), extensions_jar()])


def test_doctor_is_green_json() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "icefloe", "doctor", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    report = json.loads(out.stdout)
    assert out.returncode == 0, report
    assert report["ok"] is True
    assert [c["name"] for c in report["checks"]] == [
        "packages",
        "java",
        "jars",
        "catalog",
        "warehouse",
        "spark",
        "redis",
    ]


def test_doctor_names_what_is_missing(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "ICEFLOE_REDIS__URL": "redis://127.0.0.1:1/0",
        "ICEFLOE_JARS_DIR": str(tmp_path),
    }
    out = subprocess.run(
        [sys.executable, "-m", "icefloe", "doctor", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert out.returncode == 1
    failed = {c["name"]: c for c in json.loads(out.stdout)["checks"] if not c["ok"]}
    assert set(failed) == {"redis", "jars"}
    assert "bootstrap" in failed["jars"]["fix"]


def test_ingest_produces_the_small_file_shape(catalog: object, namespace: str) -> None:
    spec = TableSpec(
        f"{namespace}.stream",
        days=3,
        regions=("eu", "us"),
        commits=16,
        late_share=0.5,
        healthy_days=1,
        target_file_size_bytes=256 << 10,
        small_file_bytes=(4 << 10, 64 << 10),
    )
    commits = ingest(catalog, spec, seed=3)  # type: ignore[arg-type]
    assert len(commits) == 16 + 2  # two large commits for the healthy day
    assert any(c.late for c in commits)
    table = catalog.load_table((namespace, "stream"))  # type: ignore[attr-defined]
    parts = {p.key: p for p in current_partitions(table)}
    assert len(parts) == 3 * 2
    target = spec.target_file_size_bytes
    healthy = [p for p in parts.values() if p.partition.display().startswith("day=2026-11-01")]
    streaming = [p for p in parts.values() if p not in healthy]
    assert all(not p.stats(target).needs_work(target // 4) for p in healthy)
    assert all(p.stats(target).needs_work(target // 4) for p in streaming)
    # the stream is made of small files: one per partition per commit, all well under target
    sizes = [s for p in streaming for s in p.sizes]
    assert all(s < target // 2 for s in sizes)
    assert len(sizes) == 2 * 16
    rows = sum(sum(p.records) for p in parts.values())
    assert rows == sum(c.rows for c in commits)
