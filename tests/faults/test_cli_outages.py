"""The command line under a broken table and backend outages (issue 28, items 6, 9, 10):
one line naming the problem, never a traceback, never a secret, and in bounded time.

* One table's metadata missing (embedded catalog): ``tables`` and ``tables --json`` report
  it in its row and go on; ``optimize --all`` optimizes the others; exit 1 at the end;
  ``decide --once`` whose every table was skipped exits 1 saying why.
* A wrong S3 secret key (REST catalog on S3): ``tables``, ``plan``, ``maintain`` and
  ``optimize`` are one line each, exit 1.
* S3 down (s3proxy killed) under ``tables``, ``plan`` and ``request``: the REST server
  retries its reads for about two minutes per table; icefloe's requests are bounded, so
  each command is one line, exit 1, within a minute.
* PostgreSQL down under ``tables``, ``plan`` and ``decide --once``: one line naming the
  catalog (not the Redis URL, not SQLAlchemy's five lines).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.faults.backends import Profile, profile_tables
from tests.faults.checks import TRACEBACK, current_snapshot_id
from tests.faults.harness import make_table, run_cli, run_cli_parallel

pytestmark = [pytest.mark.faults, pytest.mark.redis]

WRONG_KEY = "wrong-s3-secret-4b1d"


def _one_line_failure(ledger: Any, run: Any, match: str = "") -> str:
    """Exit 1, no traceback or secret, and the last stderr line the one error line."""
    ledger.clean(run.output)
    assert run.returncode == 1, f"{run.args}: exit {run.returncode}\n{run.output[-2000:]}"
    last = run.error_lines()[-1]
    assert last.startswith("icefloe: error: ") and match in last, (run.args, last)
    return str(last)


def test_one_broken_table_does_not_stop_the_others(
    fault_env: Any, ledger: Any, dropped: list[str]
) -> None:
    ns, catalog = fault_env.namespace, fault_env.catalog
    good = [make_table(catalog, f"{ns}.{n}", files_per_day=2, rows_per_file=10) for n in "ac"]
    broken = make_table(catalog, f"{ns}.b", files_per_day=2, rows_per_file=10)
    dropped.append(f"{ns}.b")  # a broken table left behind would hold later orphan removals
    Path(broken.metadata_location.removeprefix("file:").removeprefix("//")).unlink()
    ledger.fault("a table's metadata file deleted")
    before = [current_snapshot_id(t) for t in good]

    listed, as_json = run_cli_parallel(
        fault_env.config_path, [("tables", "--fresh"), ("tables", "--fresh", "--json")]
    )
    for run in (listed, as_json):
        line = _one_line_failure(ledger, run, f"1 of 3 table(s) could not be read: {ns}.b")
        assert len(run.error_lines()) == 1, line
    assert f"{ns}.a" in listed.stdout and f"{ns}.c" in listed.stdout
    assert f"{ns}.b: error: " in listed.stdout and "…" not in listed.stdout
    rows = {r["table"]: r for r in json.loads(as_json.stdout)}
    assert set(rows) == {f"{ns}.a", f"{ns}.b", f"{ns}.c"}
    assert "error" not in rows[f"{ns}.a"] and rows[f"{ns}.a"]["files"] == 4
    assert rows[f"{ns}.b"]["error"].startswith(f"catalog 'lake' could not load table '{ns}.b'")

    optimized = run_cli(fault_env.config_path, "optimize", "--all", "--json")
    _one_line_failure(ledger, optimized, f"1 of 3 table(s) failed: {ns}.b")
    report = json.loads(optimized.stdout)
    assert [f["table"] for f in report["failed"]] == [f"{ns}.b"]
    assert sorted(t["table"] for t in report["tables"]) == [f"{ns}.a", f"{ns}.c"]
    after = [current_snapshot_id(catalog.load_table(t.name())) for t in good]
    assert all(a != b for a, b in zip(after, before, strict=True)), "the others were optimized"


def test_decide_once_with_every_table_skipped_exits_1(
    fault_env: Any, ledger: Any, dropped: list[str]
) -> None:
    broken = make_table(fault_env.catalog, f"{fault_env.namespace}.b", files_per_day=2)
    dropped.append(f"{fault_env.namespace}.b")
    Path(broken.metadata_location.removeprefix("file:").removeprefix("//")).unlink()
    ledger.fault("the only table's metadata file deleted")
    run = run_cli(fault_env.config_path, "decide", "--once")
    _one_line_failure(ledger, run, "every table (1) was skipped this pass")


def test_a_wrong_s3_key_is_one_line(
    rest_s3: Profile, redis_server: Any, ledger: Any, tmp_path: Path
) -> None:
    ledger.secrets = (*ledger.secrets, *rest_s3.secrets, WRONG_KEY)
    path, _, (name,) = profile_tables(rest_s3, redis_server.url(), tmp_path)
    raw = yaml.safe_load(path.read_text())
    raw["catalog"]["properties"]["s3.secret-access-key"] = WRONG_KEY
    bad = tmp_path / "wrong-key.yaml"
    bad.write_text(yaml.safe_dump(raw))
    ledger.fault("wrong S3 secret key")
    commands = [("tables", "--fresh"), ("plan", name), ("maintain", name), ("optimize", name)]
    for run in run_cli_parallel(bad, commands, timeout=180):
        line = _one_line_failure(ledger, run)
        assert "ACCESS_DENIED" in line or "could not be read" in line, line
        assert len(run.error_lines()) == 1 and TRACEBACK not in run.output


def test_s3_down_is_one_line_within_a_minute(
    rest_s3: Profile, redis_server: Any, ledger: Any, tmp_path: Path
) -> None:
    ledger.secrets = (*ledger.secrets, *rest_s3.secrets)
    path, _, (name,) = profile_tables(rest_s3, redis_server.url(), tmp_path)
    rest_s3.stop("s3proxy")
    ledger.fault("s3proxy killed (S3 down)")
    try:
        runs = run_cli_parallel(
            path, [("tables", "--fresh"), ("plan", name), ("request", name)], 180
        )
    finally:
        rest_s3.ensure_up()
    for run in runs:
        _one_line_failure(ledger, run, "catalog 'f_rest_s3'")
        assert len(run.error_lines()) == 1 and not run.stdout.strip()
        assert run.seconds < 60, f"{run.args} took {run.seconds:.0f} s"


def test_postgres_down_is_one_line_naming_the_catalog(
    postgres: Profile, redis_server: Any, ledger: Any, tmp_path: Path
) -> None:
    ledger.secrets = (*ledger.secrets, *postgres.secrets)
    path, _, (name,) = profile_tables(postgres, redis_server.url(), tmp_path)
    postgres.stop("postgres")
    ledger.fault("postgres killed (catalog down)")
    try:
        runs = run_cli_parallel(path, [("tables",), ("plan", name), ("decide", "--once")], 180)
    finally:
        postgres.ensure_up()
    for run in runs:
        _one_line_failure(ledger, run, "catalog 'f_postgres'")
        assert "redis://" not in run.output and "Background on this error" not in run.output
        assert len(run.error_lines()) <= 2, run.stderr  # decide: its log line, then the error
