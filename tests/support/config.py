"""Test configs: the run's Redis URL (``redis_url``), a config over a temporary catalog
(``make_config``, ``config_raw``), the default file's settings (``base``) and encoded
partition keys (``part``)."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import yaml

from icefloe.base.config import DEFAULT_CONFIG, Config, build_config

REDIS_URL_ENV = "ICEFLOE_TEST_REDIS_URL"
REPO = Path(__file__).resolve().parents[2]


def redis_url() -> str:
    """The test run's Redis, which the tests flush at will: ``$ICEFLOE_TEST_REDIS_URL`` when
    the run was given one, else the ``redis-server`` that ``tests/conftest.py`` started for
    the run (it sets the variable before any test module loads, so child processes see it
    too)."""
    url = os.environ.get(REDIS_URL_ENV)
    if not url:
        raise RuntimeError(
            f"{REDIS_URL_ENV} is not set: the test run's Redis is started by tests/conftest.py "
            "(run the tests with pytest from the repository)"
        )
    return url


def part(spec_id: int = 0, kind: str = "string", **values: Any) -> str:
    """The encoded :class:`~icefloe.base.partition_key.PartitionKey` of a partition whose fields
    are all of type ``kind`` (``part(region="eu")``: a string identity partition)."""
    from icefloe.base.partition_key import PartitionKey

    fields = [(name, kind) for name in values]
    return PartitionKey.of(spec_id, fields, list(values.values())).encode()


def with_engine(cfg: Config, engine: str) -> Config:
    """``cfg`` with every table's data engine set to ``engine`` (``auto`` or ``spark``)."""
    return dataclasses.replace(cfg, defaults=dataclasses.replace(cfg.defaults, engine=engine))


def make_config(home: Path, **overrides: Any) -> Config:
    """A config whose catalog and warehouse live under ``home`` (tests never touch the demo)."""
    return build_config(config_raw(home, **overrides), source="<tests>", home=home)


def config_raw(home: Path, **overrides: Any) -> dict[str, Any]:
    """The YAML-shaped mapping behind :func:`make_config` (for tests that need a file)."""
    raw: dict[str, Any] = {
        "catalog": {"uri": f"sqlite:///{home}/catalog.db", "warehouse": f"file://{home}/warehouse"},
        "redis": {"url": redis_url(), "key_prefix": "icefloe-test"},
        "spark": {
            "master": "local[2]",
            "conf": {
                "spark.sql.shuffle.partitions": "4",
                "spark.default.parallelism": "4",
                "spark.ui.enabled": "false",
                "spark.driver.memory": "2g",
                "spark.sql.adaptive.enabled": "true",
            },
        },
        # the complete plan: no tolerance, and a partition's two small files are work
        "defaults": {"target_file_size_bytes": 1 << 20, "tolerance_bytes": 0, "min_input_files": 2},
        "managed": {"namespaces": ["db"]},
        # off unless a test asks for it (``history={...}``): the run's tests share one lake,
        # and a history table there (icefloe manages it like any other) would appear in
        # every other test's table lists once any actor had flushed to it
        "history": {"enabled": False},
    }
    for key, value in overrides.items():
        raw[key] = value
    return raw


def embedded_defaults() -> dict[str, Any]:
    """The embedded defaults as a YAML-shaped mapping (every key written out)."""
    raw = json.loads(json.dumps(dataclasses.asdict(Config())))
    for internal in ("source", "home"):
        del raw[internal]
    del raw["spark"]["executor_deps"]  # "" is the default, but a file may not write it
    return raw


def base() -> dict[str, Any]:
    """The default file over the embedded defaults: every key present for tests to edit."""
    raw = embedded_defaults()
    from_file = yaml.safe_load(DEFAULT_CONFIG.read_text())
    assert isinstance(from_file, dict)
    for section, values in from_file.items():
        raw[section] = {**raw[section], **values}
    return raw
