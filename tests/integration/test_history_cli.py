"""``icefloe history`` as a user runs it: records show as soon as actors hand them over
(pending), then from the table once the leader appended them, and survive a Redis flush;
``--since``, ``TABLE`` and bad input (PyIceberg catalog, the test Redis; no Spark)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from icefloe.app.cli import cli
from icefloe.base.catalog import load_catalog
from icefloe.base.config import load_config
from icefloe.jobs.history.flush import flush
from icefloe.state.open import open_state
from tests.support.config import REPO, config_raw

pytestmark = [pytest.mark.integration, pytest.mark.redis]


def _run(conf: Path, *args: str) -> Any:
    return CliRunner().invoke(cli, ["--config", str(conf), "history", *args])


def test_history_pending_then_appended_then_past_a_redis_flush(
    tmp_path: Path, redis_client: Any
) -> None:
    conf = tmp_path / "icefloe.yaml"
    conf.write_text(yaml.safe_dump(config_raw(tmp_path, history={"enabled": True})))
    cfg = load_config(str(conf))
    load_catalog(cfg)  # the lake exists (read-only commands create none): no history table yet
    book = open_state(cfg).ledger
    now = time.time()
    for i, (table, age_h) in enumerate((("db.a", 50), ("db.b", 2), ("db.a", 1))):
        entry = {"id": f"i{i}", "table": table, "action": "merge", "ok": True, "seconds": 2}
        entry |= {"bytes_rewritten": (i + 1) << 20, "finished_at": now - age_h * 3600}
        book.record_action(entry, history=True)

    first = _run(conf, "--json")
    assert first.exit_code == 0, first.output
    rows = json.loads(first.stdout)
    assert [(r["item_id"], r["pending"]) for r in rows] == [
        ("i0", True),
        ("i1", True),
        ("i2", True),
    ]

    assert flush(cfg, load_catalog(cfg), book, "d1") == 3
    redis_client.flushdb()  # the test Redis is the config's: everything in it is gone
    rows = json.loads(_run(conf, "--json").stdout)
    assert [r["item_id"] for r in rows] == ["i0", "i1", "i2"]
    assert not any(r.get("pending") for r in rows)
    assert [r["bytes_rewritten"] for r in rows] == [1 << 20, 2 << 20, 3 << 20]
    assert [r["item_id"] for r in json.loads(_run(conf, "db.a", "--json").stdout)] == ["i0", "i2"]
    assert [r["item_id"] for r in json.loads(_run(conf, "--since", "1d", "--json").stdout)] == [
        "i1",
        "i2",
    ]
    assert [r["item_id"] for r in json.loads(_run(conf, "--limit", "1", "--json").stdout)] == ["i2"]
    shown = _run(conf)
    assert shown.exit_code == 0 and "db.a" in shown.stdout and "icefloe history (3" in shown.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [(("not-a-table",), "bad table identifier"), (("--since", "yesterday"), "--since 'yesterday'")],
)
def test_history_bad_input_is_one_line(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    conf = tmp_path / "icefloe.yaml"
    conf.write_text(yaml.safe_dump(config_raw(tmp_path, history={"enabled": True})))
    cmd = [sys.executable, "-m", "icefloe", "--config", str(conf), "history", *args]
    result = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1 and message in result.stderr and not result.stdout
