"""The CLI's contract: --help everywhere, one clear line and exit 2 for bad config/usage."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from icefloe.app.cli import cli

pytestmark = pytest.mark.unit

ICEFLOE = [sys.executable, "-m", "icefloe"]


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run(
        [*ICEFLOE, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


def test_help_lists_commands() -> None:
    out = run("--help")
    assert out.returncode == 0
    for command in ("doctor", "demo", "tables"):
        assert command in out.stdout


def test_every_command_has_help() -> None:
    for name, command in cli.commands.items():
        assert command.help, f"{name} has no help text"
        out = run(name, "--help")
        assert out.returncode == 0, (name, out.stderr)
        assert "Usage:" in out.stdout


def test_bad_config_value_is_one_line_exit_2() -> None:
    out = run("tables", env={"ICEFLOE_DEFAULTS__TARGET_FILE_SIZE_BYTES": "0"})
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        "icefloe: error: config key 'defaults.target_file_size_bytes' must be positive, got 0"
    ]


def test_bad_config_file_is_one_line_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "c.yaml"
    bad.write_text("catalog:\n  name: lake\n  uri: sqlite:///x\n  warehouse: file:w\n  oops: 1\n")
    out = run("--config", str(bad), "doctor")
    assert out.returncode == 2
    assert len(out.stderr.strip().splitlines()) == 1
    assert "unknown config key 'catalog.oops'" in out.stderr


def test_unknown_command_is_usage_error() -> None:
    out = run("frobnicate")
    assert out.returncode == 2
    assert "No such command" in out.stderr
