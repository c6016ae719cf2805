"""``icefloe ui`` in a real browser: headless Chromium (Debian's ``chromium`` and
``chromium-driver``, installed by ``scripts/test.sh``) against the dashboard over a small
warehouse built here (PyIceberg tables, action records in the test Redis, a flushed
history, a stored skew report): the page loads, the tables and their scores appear, a
chart renders, an action recorded during the test appears without a reload, the browser
logs no error, and the token is enforced off loopback.

``ICEFLOE_UI_SCREENSHOT=PATH`` saves the page (the README's screenshot is the demo's:
``scripts/dashboard_screenshot.py``).
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import yaml
from click.testing import CliRunner

from icefloe.app.cli import cli
from icefloe.app.web.server import UiServer, make_server, serve_in_thread
from icefloe.base.catalog import load_catalog
from icefloe.base.config import Config, load_config
from icefloe.base.errors import UsageError
from icefloe.jobs.history.flush import flush
from icefloe.jobs.skew.detect import save_report
from icefloe.service.observe.tables import table_summary
from icefloe.state.ledger.redis import RedisLedger
from icefloe.state.open import open_state
from tests.support.config import REPO, config_raw

pytestmark = [pytest.mark.integration, pytest.mark.redis]

CHROMIUM, DRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
TABLES = ("db.clicks", "db.events")


def _record(book: RedisLedger, item: str, table: str, mib: int, age_s: float, **extra: Any) -> None:
    entry = {"id": item, "table": table, "action": "merge", "ok": True, "seconds": 1.5}
    entry |= {"bytes_rewritten": mib << 20, "files_rewritten": 6, "files_added": 1}
    entry |= {"mse_before": float(40_000 << 20), "mse_after": 1000.0 * (1 << 20)}
    entry |= {"manifests_before": 7, "manifests_after": 1, "partitions": ["day=1"]}
    book.record_action(entry | {"finished_at": time.time() - age_s} | extra, history=True)


def _rows(n: int) -> pa.Table:
    days = pa.array([i % 3 for i in range(n)], pa.int32())
    values = pa.array([f"value-{i * 7919 % 100_003}-{i}" for i in range(n)], pa.string())
    return pa.table({"day": days, "v": values})


@pytest.fixture
def warehouse(tmp_path: Path, redis_client: Any) -> tuple[Config, Any, RedisLedger]:
    """Two partitioned tables of small files, three actions (two flushed to the history
    table, one pending in Redis) and a stored skew report."""
    conf = tmp_path / "icefloe.yaml"
    raw = config_raw(tmp_path, history={"enabled": True})
    raw["defaults"] = {"target_file_size_bytes": 64 << 10, "min_input_files": 2}
    conf.write_text(yaml.safe_dump(raw))
    cfg = load_config(str(conf))
    catalog = load_catalog(cfg)
    catalog.create_namespace("db")
    for name, commits in zip(TABLES, (2, 6), strict=True):
        table = catalog.create_table(name, schema=_rows(0).schema)
        with table.update_spec() as spec:
            spec.add_identity("day")
        for c in range(commits):  # files of several sizes: a histogram of several bars
            table.append(_rows(1500 * (1 + c)))
    book = open_state(cfg).ledger
    _record(book, "old-1", "db.events", 3, 3600)
    _record(book, "old-2", "db.clicks", 1, 1800)
    assert flush(cfg, catalog, book, "d1") == 2
    # the list shows the tables as the decider keeps them: one pass, before old-3 is
    # recorded (the pass flushes the history)
    decided = CliRunner().invoke(cli, ["--config", str(conf), "decide", "--once"])
    assert decided.exit_code == 0, decided.output
    snap = catalog.load_table("db.events").current_snapshot()
    # pending (not flushed yet), and its commit is the table's last: planning is measured
    _record(book, "old-3", "db.events", 2, 600, snapshot_ids=[snap.snapshot_id])
    report = {"table": "db.events", "snapshot_id": snap.snapshot_id, "rows": 18000}
    report |= {"partitions": 3, "skewed_partitions": []}
    hot = [{"key": "x", "rows": 9, "share": 0.5}]
    report |= {"keys": {"v": {"method": "exact", "hot_keys": hot}}}
    save_report(catalog, report, "v", "icefloe")
    return cfg, catalog, book


@pytest.fixture
def server(warehouse: tuple[Config, Any, RedisLedger]) -> Iterator[UiServer]:
    srv = make_server(warehouse[0], "127.0.0.1", 0, None)
    serve_in_thread(srv)
    yield srv
    srv.shutdown()
    srv.server_close()
    srv.dashboard.close()


@pytest.fixture
def browser() -> Iterator[Any]:
    missing = [p for p in (CHROMIUM, DRIVER) if not os.access(p, os.X_OK)]
    if missing:
        pytest.fail(
            f"{', '.join(missing)} missing: run scripts/test.sh, which installs Debian's "
            "chromium and chromium-driver"
        )
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(arg)
    options.add_argument("--window-size=1500,1300")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(executable_path=DRIVER))
    try:
        yield driver
    finally:
        driver.quit()


def _until(what: str, check: Callable[[], Any], timeout: float = 15.0, page: Any = None) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            said = page and page.execute_script("return document.body.innerText")
            pytest.fail(f"the page did not show {what} within {timeout:g} s: {said}")
        time.sleep(0.2)


def test_dashboard_in_chromium(
    warehouse: tuple[Config, Any, RedisLedger], server: UiServer, browser: Any
) -> None:
    cfg, catalog, book = warehouse
    browser.get(server.url)
    assert browser.title == "icefloe"

    # each read is one script: the page re-renders every 2 s, elements do not last
    def tables() -> list[list[str]]:
        return list(browser.execute_script(_TABLES))

    # the two tables and the history table (icefloe manages it like any other)
    shown = _until("the tables", lambda: len(tables()) == 3 and tables(), page=browser)
    names = [name for name, _ in shown]
    assert set(TABLES) < set(names)
    expected = {n: table_summary(cfg, catalog, n)["health"]["score"] for n in names}
    assert dict(shown) == {n: f"{score:.1f}" for n, score in expected.items()}
    assert expected["db.events"] < expected["db.clicks"] < 100  # more small files, worse
    assert names == sorted(names, key=expected.__getitem__)  # worst first

    # the worst table is selected: its file-size histogram and its entropy over time
    bars = _until("a histogram", lambda: browser.execute_script(_BARS))
    assert len(bars) == 11 and sum(h > 0 for h in bars) >= 1
    assert _until("entropy marks", lambda: browser.execute_script(_POINTS)) >= 2
    _until("the skew report", lambda: browser.execute_script(_SKEW))
    pending = _until("the pending action", lambda: browser.execute_script(_ACTION, "old-3"))
    assert re.search(r"\t\d+\.\d → \d+\.\d\t", pending), pending  # planning ms before → after

    browser.execute_script("window.__noReload = 1")
    _record(book, "live-1", "db.clicks", 5, 0)
    live = _until("the new action", lambda: browser.execute_script(_ACTION, "live-1"), 10)
    assert "db.clicks" in live and "5.0" in live and "(pending)" in live
    assert browser.execute_script("return window.__noReload") == 1  # no reload happened

    if os.environ.get("ICEFLOE_UI_SCREENSHOT"):
        browser.save_screenshot(str(REPO / os.environ["ICEFLOE_UI_SCREENSHOT"]))
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors, errors


_TABLES = """return [...document.querySelectorAll('#tables tbody tr[data-table]')]
  .map(r => [r.dataset.table, (r.querySelector('.score') || {}).textContent])"""
_BARS = """return [...document.querySelectorAll('#histogram svg rect.mark')]
  .map(r => parseFloat(r.getAttribute('height')))"""
_POINTS = "return document.querySelectorAll('#entropy svg circle.mark').length"
_SKEW = "return document.querySelectorAll('#skew [data-skew]').length"
_ACTION = """const r = document.querySelector(`#actions tr[data-item-id="${arguments[0]}"]`);
return r && r.innerText"""


def _get(url: str, headers: dict[str, str] | None = None, timeout: float = 30) -> int:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as r:
            return int(r.status)
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:  # not listening yet
        return 0


def test_the_token_is_enforced_off_loopback(warehouse: tuple[Config, Any, RedisLedger]) -> None:
    cfg = warehouse[0]
    with pytest.raises(UsageError, match="--token"):
        make_server(cfg, "0.0.0.0", 0, None)
    cmd = [sys.executable, "-m", "icefloe", "--config", cfg.source, "ui", "--host", "0.0.0.0"]
    env = {k: v for k, v in os.environ.items() if k != "ICEFLOE_UI_TOKEN"}
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "--token" in done.stderr

    for argv, said in (
        (["--token", "a-long-enough-token-1"], "process list"),  # never on the command line
        (["--host", "0.0.0.0"], "16 characters"),  # ICEFLOE_UI_TOKEN below: too short
    ):
        short = env | {"ICEFLOE_UI_TOKEN": "s3cret"}
        refused = subprocess.run(
            [*cmd, *argv], cwd=REPO, capture_output=True, text=True, timeout=120, env=short
        )
        assert refused.returncode == 2 and said in refused.stderr, refused.stderr
        assert "s3cret" not in refused.stderr and "a-long-enough" not in refused.stderr

    token = "s3cret-s3cret-s3cret"
    srv = make_server(cfg, "0.0.0.0", 0, token)
    serve_in_thread(srv)
    try:
        base = f"http://127.0.0.1:{srv.server_address[1]}"
        assert _get(f"{base}/api/tables") == 401
        assert _get(f"{base}/") == 401
        assert _get(f"{base}/api/tables", {"Authorization": "Bearer wrong"}) == 401
        assert _get(f"{base}/api/tables", {"Authorization": f"Bearer {token}"}) == 200
        assert _get(f"{base}/?token={token}") == 200
    finally:
        srv.shutdown()
        srv.server_close()
        srv.dashboard.close()


def test_icefloe_ui_serves_the_page_and_names_a_taken_port(
    warehouse: tuple[Config, Any, RedisLedger],
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    cmd = [sys.executable, "-m", "icefloe", "--config", warehouse[0].source, "ui"]
    server = subprocess.Popen([*cmd, "--port", str(port)], cwd=REPO, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while _get(f"http://127.0.0.1:{port}/api/tables", timeout=5) != 200:
            assert server.poll() is None, server.stderr and server.stderr.read()
            assert time.monotonic() < deadline, "icefloe ui did not answer within 60 s"
            time.sleep(0.3)
        taken = subprocess.run(
            [*cmd, "--port", str(port)], cwd=REPO, capture_output=True, text=True, timeout=120
        )
        assert taken.returncode == 1 and taken.stderr.count("\n") == 1, taken.stderr
        assert f"cannot serve on 127.0.0.1:{port}" in taken.stderr
    finally:
        server.terminate()
        server.wait(timeout=30)
