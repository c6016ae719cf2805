"""The CLI on unmanaged tables, with nothing to do, and into a pipe (issue 28 item 10)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.faults.harness import make_table, run_cli
from tests.support.config import config_raw

pytestmark = pytest.mark.integration


def _config(lake_home: Path, tmp_path: Path, namespace: str) -> Path:
    raw = config_raw(lake_home, managed={"namespaces": [namespace]})
    path = tmp_path / "icefloe.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def test_request_and_maintain_refuse_an_unmanaged_table(
    catalog: Any, namespace: str, lake_home: Path, tmp_path: Path, redis_client: Any
) -> None:
    name = f"{namespace}.t"
    make_table(catalog, name, files_per_day=2, rows_per_file=5)
    other = _config(lake_home, tmp_path, "someone_else")
    for args in (("request", name), ("maintain", name)):
        run = run_cli(other, *args)
        assert run.returncode == 2, run.output
        assert run.error_lines() == [
            f"icefloe: error: table {name!r} is not managed (managed.namespaces, managed.tables "
            "or tables.<name> in the config): add --force to act on it anyway"
        ]
    forced = run_cli(other, "request", name, "--force", "--json")
    assert forced.returncode == 0 and json.loads(forced.stdout)["queued"], forced.output


def test_optimize_with_nothing_to_do_starts_no_spark_and_a_pipe_gets_whole_lines(
    catalog: Any, namespace: str, lake_home: Path, tmp_path: Path
) -> None:
    name = f"{namespace}.t"
    make_table(catalog, name, files_per_day=1, rows_per_file=5)  # one file a day: no work
    path = _config(lake_home, tmp_path, namespace)
    run = run_cli(path, "optimize", name)
    assert run.returncode == 0, run.output
    assert "Spark" not in run.stderr and "log4j" not in run.stderr  # no JVM started
    assert run.seconds < 15, run.seconds
    assert "…" not in run.stdout and max(map(len, run.stdout.splitlines())) > 80


def test_unknown_names_are_one_line_and_a_non_zero_exit(
    catalog: Any, namespace: str, lake_home: Path, tmp_path: Path, redis_client: Any
) -> None:
    """#61.10: ``tables --namespace`` of a namespace the config does not manage, and
    ``status --table`` of a table the decider keeps no record of, say so in one line."""
    name = f"{namespace}.t"
    make_table(catalog, name, files_per_day=1, rows_per_file=5)
    path = _config(lake_home, tmp_path, namespace)
    run = run_cli(path, "tables", "--namespace", "not_managed")
    assert run.returncode == 2, run.output
    assert run.error_lines() == [
        "icefloe: error: namespace 'not_managed' is not managed (managed.namespaces, "
        "managed.tables or tables.<name> in the config)"
    ]
    listed = run_cli(path, "tables", "--namespace", namespace, "--json")
    assert listed.returncode == 0 and [r["table"] for r in json.loads(listed.stdout)] == [name]

    for table, code, said in (
        (f"{namespace}.missing", 1, f"the decider keeps no record of table '{namespace}.missing'"),
        ("other.t", 2, "table 'other.t' is not managed"),
    ):
        run = run_cli(path, "status", "--table", table)
        assert run.returncode == code, run.output
        assert len(run.error_lines()) == 1 and said in run.error_lines()[0], run.output
        assert run.stdout == ""
