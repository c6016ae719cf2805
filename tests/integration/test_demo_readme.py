"""The README's promises, run for real: the demo (the main job) and every command example.

The demo runs once per module on a temporary lakehouse and Redis database; the README's
``icefloe`` examples then run against what it left behind.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from icefloe.base.config import PROJECT_ROOT
from tests.support.config import config_raw

pytestmark = pytest.mark.integration

README = (PROJECT_ROOT / "README.md").read_text()


def bash_blocks() -> list[list[str]]:
    blocks = re.findall(r"```bash\n(.*?)```", README, flags=re.S)
    return [[ln.split("  #")[0].strip() for ln in b.splitlines() if ln.strip()] for b in blocks]


@pytest.fixture(scope="module")
def demo_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    home = tmp_path_factory.mktemp("demo_home")
    raw = config_raw(home)
    raw["managed"] = {"namespaces": ["demo"]}
    raw["redis"]["key_prefix"] = "icefloe-readme"
    config = home / "icefloe.yaml"
    config.write_text(yaml.safe_dump(raw))
    # the README's `icefloe dev` examples keep their services' data here, not in .dev/
    env = {**os.environ, "ICEFLOE_CONFIG": str(config), "ICEFLOE_DEV_ROOT": str(home / "dev")}
    import redis

    client = redis.Redis.from_url(raw["redis"]["url"])
    for key in client.scan_iter(match="icefloe-readme:*"):
        client.delete(key)
    run = subprocess.run(
        [sys.executable, "-m", "icefloe", "demo", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    return {"env": env, "home": home, "result": json.loads(run.stdout)}


def test_quickstart_is_exactly_two_commands_and_ci_runs_the_second() -> None:
    assert bash_blocks()[0] == ["make demo", "make test"]
    makefile = (PROJECT_ROOT / "Makefile").read_text()
    demo = re.search(r"^demo: bootstrap\n((?:\t.*\n)+)", makefile, re.M)
    assert demo, "make demo runs the bootstrap first"
    recipe = demo.group(1).splitlines()
    assert recipe[-1] == "\t@.venv/bin/icefloe demo"
    assert all("ICEFLOE_PROFILE" in ln or "dev up" in ln for ln in recipe[:-1]), recipe
    assert re.search(r"^test: bootstrap\n\t@scripts/test\.sh$", makefile, re.M)
    assert "make test" in (PROJECT_ROOT / ".ci" / "run").read_text()


def test_demo_converges_keeps_every_row_and_beats_nothing_it_hides(demo_env: dict) -> None:
    result = demo_env["result"]
    assert {t["table"] for t in result["tables"]} == {"demo.events", "demo.clicks", "demo.orders"}
    for t in result["tables"]:
        assert t["rows_ok"], t
        assert t["icefloe"]["rows"] == t["iceberg"]["rows"] == t["rows_expected"]
        assert t["uncompacted"]["rows"] == t["rows_expected"]
        assert t["icefloe"]["files"] < t["uncompacted"]["files"]
        assert t["icefloe"]["mean_mse"] < t["uncompacted"]["mean_mse"]
    assert result["loop"]["actions"] > 0
    skew = result["skew"]
    assert skew["identical"] is True
    assert [h["key"] for h in skew["hot_keys"]] in (["42"], [42])
    # the join ran as SQL, salted by the extension from the report skew detect stored
    assert "LEFT JOIN" in skew["sql"]
    assert skew["rewrite"] and ".purchases.user_id: 1 hot keys" in skew["rewrite"]
    for chart in (Path(result["chart"]), Path(result["rounds_chart"])):
        assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_demo_compacts_both_sides_every_round_and_totals_add_up(demo_env: dict) -> None:
    from icefloe.app.demo import DEFAULT_ROUNDS

    result = demo_env["result"]
    rounds, totals = result["rounds"], result["totals"]
    assert [r["round"] for r in rounds] == list(range(1, DEFAULT_ROUNDS + 1))
    expected = {t: 0 for t in rounds[0]["tables"]}
    for r in rounds:
        assert r["commits"] > 0
        assert r["rows_ok"], r["round"]
        for name, t in r["tables"].items():
            # ingest went on: every round's commits add rows, and both sides hold all of them
            assert t["rows_expected"] > expected[name]
            expected[name] = t["rows_expected"]
            assert t["icefloe"]["rows"] == t["iceberg"]["rows"] == t["rows_expected"], name
            for side in ("icefloe", "iceberg"):
                assert t[side]["manifests"] >= 1 and t[side]["snapshots"] >= t["commits"]
                assert t[side]["plan_ms"] > 0
            # before compaction: what the round's ingest left, as a reader plans it
            assert t["before_compaction"]["files"] >= t["icefloe"]["files"]
            assert t["before_compaction"]["plan_ms"] > 0
        for side in ("icefloe", "iceberg"):
            per_table = r["tables"].values()
            for key in ("bytes_rewritten", "files_rewritten", "files", "manifests", "snapshots"):
                assert r[side][key] == sum(t[side][key] for t in per_table), (side, key)
        for key in ("files", "manifests"):
            want = sum(t["before_compaction"][key] for t in r["tables"].values())
            assert r["before_compaction"][key] == want
    for side in ("icefloe", "iceberg"):
        for key in ("bytes_rewritten", "files_rewritten"):
            assert totals[side][key] == sum(r[side][key] for r in rounds), (side, key)
        for key in ("files", "mean_mse_t2", "manifests", "snapshots"):
            assert totals[side][key] == rounds[-1][side][key], (side, key)
        per_table = sum(t[side]["bytes_rewritten"] for t in result["tables"])
        assert per_table == totals[side]["bytes_rewritten"]
    assert totals["rows_ok"] is True
    # compaction again and again: both sides rewrote something after the first round
    assert sum(r["icefloe"]["bytes_rewritten"] for r in rounds[1:]) > 0
    assert sum(r["iceberg"]["bytes_rewritten"] for r in rounds[1:]) > 0
    assert totals["icefloe"]["files"] < sum(t["uncompacted"]["files"] for t in result["tables"])


def test_status_explains_the_demo_state(demo_env: dict) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "icefloe", "status", "--json"],
        env=demo_env["env"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    status = json.loads(out.stdout)
    assert status["recent"], "the demo's actions are listed"


@pytest.mark.parametrize(
    "line",
    [ln for block in bash_blocks()[1:] for ln in block if ln.startswith(".venv/bin/icefloe")],
)
def test_readme_command_examples_run(demo_env: dict, line: str) -> None:
    argv = line.split()[1:]
    out = subprocess.run(
        [sys.executable, "-m", "icefloe", *argv],
        env=demo_env["env"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, (line, out.stderr[-3000:])
    if "--json" in argv:
        json.loads(out.stdout[out.stdout.find("{") :] if "submit" in argv else out.stdout)
