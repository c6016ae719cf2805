"""A demo lakehouse of a test's own: a config under ``home`` (the test run's Redis under its
own key prefix, the demo's namespace managed), ``icefloe demo ARGS`` run on it, and the
environment the docs' commands then run in."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import redis
import yaml

from tests.support.config import config_raw


def run_demo(
    home: Path, prefix: str, *args: str, default_policy: bool = False, timeout: int = 900
) -> tuple[dict[str, str], str]:
    """``(env, stdout)`` of ``icefloe demo ARGS`` on a lakehouse under ``home``; with
    ``default_policy`` the demo runs the default policy, as ``make demo`` does, not the
    tests' own. ``icefloe dev`` examples in that env keep their data under ``home/dev``."""
    raw: dict[str, Any] = config_raw(home)
    if default_policy:
        del raw["defaults"]
    raw["managed"] = {"namespaces": ["demo"]}
    raw["redis"]["key_prefix"] = prefix
    config = home / "icefloe.yaml"
    config.write_text(yaml.safe_dump(raw))
    env = {**os.environ, "ICEFLOE_CONFIG": str(config), "ICEFLOE_DEV_ROOT": str(home / "dev")}
    client = redis.Redis.from_url(raw["redis"]["url"])
    for key in client.scan_iter(match=f"{prefix}:*"):
        client.delete(key)
    run = subprocess.run(
        [sys.executable, "-m", "icefloe", "demo", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    return env, run.stdout
