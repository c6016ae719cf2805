"""Every number has a range, checked where it enters (#45.6): a config value, a CLI
option or argument past it gets one line and exit 2, never a traceback or a silent
acceptance."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from icefloe.app.cli import main
from icefloe.app.cli.history import parse_since
from icefloe.base.config import MAX_PRIORITY, MAX_TARGET, build_config
from icefloe.base.errors import ConfigError, UsageError

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("section", "key", "value", "said"),
    [
        ("defaults", "target_file_size_bytes", int("9" * 40), "must be <="),
        ("defaults", "target_file_size_bytes", MAX_TARGET + 1, "must be <="),
        ("defaults", "priority", int("9" * 30), "must be <= 1000"),
        ("defaults", "tolerance_bytes", 1 << 64, "must be <="),
        ("decider", "max_attempts", 1 << 63, "must be <="),
    ],
)
def test_config_numbers_past_their_range_are_refused(
    section: str, key: str, value: int, said: str
) -> None:
    with pytest.raises(ConfigError, match=said) as e:
        build_config({section: {key: value}})
    assert key in str(e.value) and "\n" not in str(e.value)


def test_config_numbers_at_their_bounds_are_taken() -> None:
    cfg = build_config({"defaults": {"target_file_size_bytes": MAX_TARGET, "priority": 1000}})
    assert cfg.defaults.target_file_size_bytes == MAX_TARGET
    assert cfg.defaults.priority == MAX_PRIORITY


def test_a_span_before_year_one_is_a_usage_error() -> None:
    now = datetime(2026, 11, 28, tzinfo=UTC)
    with pytest.raises(UsageError, match="before year 1"):
        parse_since("99999999999d", now)
    assert parse_since("7d", now) == datetime(2026, 11, 21, tzinfo=UTC)


@pytest.mark.parametrize(
    "argv",
    [
        ["notify", "db.t", str(1 << 70)],
        ["notify", "db.t", "0"],
        ["request", "db.t", "--priority", "99999999999999999999"],
        ["submit", "--print", "actor", "--master", ""],
    ],
)
def test_cli_numbers_and_values_past_their_range_exit_2(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "icefloe.yaml"
    config.write_text(f"catalog: {{uri: 'sqlite:///{tmp_path}/c.db'}}\n")
    with pytest.raises(SystemExit) as done:
        main(["--config", str(config), *argv])
    said = capsys.readouterr().err
    assert done.value.code == 2, said
    assert "Traceback" not in said and said.strip()
