"""A config file cannot stall a command (#45.4): an alias bomb, an endless or blocking
file, a key given twice, each refused with one line (``ConfigError``, exit 2), quickly."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from icefloe.base.config import load_config
from icefloe.base.config.yamlfile import MAX_BYTES
from icefloe.base.errors import ConfigError

pytestmark = pytest.mark.unit


def bomb(levels: int = 9, width: int = 9) -> str:
    """The reported bomb: ``levels`` levels of ``width`` aliases (~900 bytes)."""
    lines = ["a0: &a0 [x]"]
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [{', '.join(f'*a{i - 1}' for _ in range(width))}]")
    return "\n".join(lines) + "\n"


def refused(path: Path, match: str) -> ConfigError:
    started = time.monotonic()
    with pytest.raises(ConfigError, match=match) as e:
        load_config(path, env={})
    assert time.monotonic() - started < 30  # not minutes (a bound, not a benchmark)
    assert e.value.exit_code == 2 and "\n" not in str(e.value)
    return e.value


def test_an_alias_bomb_is_refused_before_it_expands(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(bomb())
    assert path.stat().st_size < 1000
    refused(path, "expands to over 100,000 values through its aliases")


def test_aliases_within_bounds_still_work(tmp_path: Path) -> None:
    path = tmp_path / "ok.yaml"
    path.write_text(
        "defaults: &d {target_file_size_bytes: 1048576}\ntables:\n  db.a: *d\n  db.b: *d\n"
    )
    cfg = load_config(path, env={})
    assert cfg.tables["db.a"].target_file_size_bytes == 1 << 20


def test_a_key_given_twice_is_refused_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "twice.yaml"
    path.write_text("redis:\n  url: redis://127.0.0.1:6379/0\n  url: redis://10.0.0.1:6379/0\n")
    refused(path, r"line 3: key 'url' is given twice in one mapping")


def test_an_endless_or_huge_file_is_not_read_to_its_end(tmp_path: Path) -> None:
    refused(Path("/dev/zero"), "is not a regular file")
    big = tmp_path / "big.yaml"
    big.write_text("# " + "x" * MAX_BYTES + "\n")
    refused(big, "is over 1 MiB")


def test_a_fifo_does_not_block(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    refused(fifo, "is not a regular file")


def test_an_environment_override_has_the_same_bounds(tmp_path: Path) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    levels = ["a0: &a0 [x]"] + [
        f"a{i}: &a{i} [{', '.join(f'*a{i - 1}' for _ in range(9))}]" for i in range(1, 10)
    ]
    env = {"ICEFLOE_DEFAULTS__SORT_ORDER": "{" + ", ".join(levels) + "}"}
    with pytest.raises(ConfigError, match="environment override 'ICEFLOE_DEFAULTS__SORT_ORDER'"):
        load_config(empty, env=env)
    text = load_config(empty, env={"ICEFLOE_REDIS__KEY_PREFIX": "[not: yaml"})
    assert text.redis.key_prefix == "[not: yaml"  # not YAML: the text itself, as before
