"""Config validation: every bad input is one ConfigError naming the key and the value."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from service.config import (
    DEFAULT_CONFIG,
    ConfigError,
    build_config,
    load_config,
    parse_table_identifier,
)
from service.errors import UsageError

pytestmark = pytest.mark.unit


def base() -> dict[str, Any]:
    raw = yaml.safe_load(DEFAULT_CONFIG.read_text())
    assert isinstance(raw, dict)
    return raw


def test_default_config_loads_and_resolves_relative_paths() -> None:
    cfg = load_config(env={})
    assert cfg.catalog.name == "lake"
    root = DEFAULT_CONFIG.parent.parent
    assert cfg.catalog.uri == f"sqlite:///{root}/.lakehouse/catalog.db"
    assert cfg.catalog.warehouse == f"file://{root}/.lakehouse/warehouse"
    assert cfg.defaults.target_file_size_bytes == 128 << 20
    assert cfg.redis.url == "redis://127.0.0.1:6379/0"


def test_config_is_frozen() -> None:
    cfg = load_config(env={})
    with pytest.raises(AttributeError):
        cfg.catalog.name = "other"  # type: ignore[misc]


def test_env_overrides_single_values() -> None:
    cfg = load_config(
        env={
            "ICEFLOE_REDIS__URL": "rediss://:s3cret@redis.example:6380/2",
            "ICEFLOE_DEFAULTS__TARGET_FILE_SIZE_BYTES": "1048576",
            "ICEFLOE_SPARK__CONF__SPARK.EXECUTOR.MEMORY": "4g",
        }
    )
    assert cfg.redis.url.startswith("rediss://")
    assert "s3cret" not in cfg.redis.redacted_url()
    assert cfg.defaults.target_file_size_bytes == 1 << 20
    assert cfg.spark.conf["spark.executor.memory"] == "4g"


def test_config_path_from_env(tmp_path: Path) -> None:
    raw = base()
    raw["catalog"]["name"] = "other"
    path = tmp_path / "x.yaml"
    path.write_text(yaml.safe_dump(raw))
    assert load_config(env={"ICEFLOE_CONFIG": str(path)}).catalog.name == "other"
    # relative paths resolve against the file's folder when it is not in conf/
    assert load_config(path, env={}).catalog.uri == f"sqlite:///{tmp_path}/.lakehouse/catalog.db"


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda r: r.update(bogus=1), "unknown config key '<root>.bogus'"),
        (lambda r: r["catalog"].update(colour="red"), "unknown config key 'catalog.colour'"),
        (
            lambda r: r["defaults"].update(target_file_size_bytes=0),
            "'defaults.target_file_size_bytes' must be positive, got 0",
        ),
        (lambda r: r["defaults"].update(target_file_size_bytes=-1), "must be positive, got -1"),
        (
            lambda r: r["defaults"].update(target_file_size_bytes="big"),
            "must be an integer, got 'big'",
        ),
        (
            lambda r: r["defaults"].update(tolerance_bytes=-3),
            "'defaults.tolerance_bytes' must be >= 0, got -3",
        ),
        (lambda r: r["defaults"].update(weight=0), "'defaults.weight' must be positive"),
        (lambda r: r["defaults"].update(actions=["merge", "explode"]), "unknown action 'explode'"),
        (lambda r: r["catalog"].update(type="oracle"), "'catalog.type' must be one of"),
        (lambda r: r["catalog"].update(name="my lake"), "'catalog.name' must be an identifier"),
        (lambda r: r["redis"].update(url="http://x"), "'redis.url' must start with"),
        (lambda r: r["spark"].update(conf=["a"]), "'spark.conf' must be a mapping"),
        (lambda r: r.update(tables={"no_namespace": {}}), "bad table identifier 'no_namespace'"),
        (lambda r: r.update(tables={"db.t; DROP": {}}), "bad table identifier 'db.t; DROP'"),
        (
            lambda r: r.update(tables={"db.t": {"weight": True}}),
            "'tables.db.t.weight' must be an integer",
        ),
        (lambda r: r.update(tables={"db.t": {"sort_order": ["a b"]}}), "bad column 'a b'"),
        (
            lambda r: r.update(tables={"db.t": {"engine": "arrow"}}),
            "'tables.db.t.engine' must be one of auto, spark, got 'arrow'",
        ),
        (
            lambda r: r["managed"].update(tables=["x"]),
            "'managed.tables' has bad table identifier 'x'",
        ),
        (
            lambda r: r["decider"].update(poll_seconds="x"),
            "'decider.poll_seconds' must be a number",
        ),
        (
            lambda r: r["decider"].update(lease_seconds=0),
            "'decider.lease_seconds' must be positive",
        ),
        (lambda r: r["decider"].update(leases=1), "unknown config key 'decider.leases'"),
        (lambda r: r.update(decider=[1]), "config key 'decider' must be a mapping"),
    ],
)
def test_bad_values_name_key_and_value(mutate: Any, message: str) -> None:
    raw = base()
    mutate(raw)
    with pytest.raises(ConfigError) as err:
        build_config(raw)
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_bad_yaml_and_missing_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("catalog: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad, env={})
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_config(tmp_path / "missing.yaml", env={})


def test_bad_env_override_names_the_key() -> None:
    with pytest.raises(ConfigError, match="'defaults.tolerance_bytes' must be >= 0, got -1"):
        load_config(env={"ICEFLOE_DEFAULTS__TOLERANCE_BYTES": "-1"})
    with pytest.raises(ConfigError, match="unknown config key 'redis.passwd'"):
        load_config(env={"ICEFLOE_REDIS__PASSWD": "x"})


def test_policy_precedence() -> None:
    raw = base()
    raw["tables"] = {"db.fixed": {"target_file_size_bytes": 1000, "priority": 0, "weight": 3}}
    cfg = build_config(raw)
    props = {"write.target-file-size-bytes": "5000"}
    assert cfg.policy_for("db.fixed", props).target_file_size_bytes == 1000
    assert cfg.policy_for("db.fixed", props).weight == 3
    assert cfg.policy_for("db.other", props).target_file_size_bytes == 5000
    assert cfg.policy_for("db.other", {}).target_file_size_bytes == 128 << 20
    assert cfg.is_managed("db.fixed") and not cfg.is_managed("db.other")
    # an inherited tolerance keeps its ratio to the target; an explicit one is kept as is
    tolerance = cfg.defaults.tolerance_bytes
    assert cfg.policy_for("db.other", {}).tolerance_bytes == tolerance
    assert (
        cfg.policy_for("db.other", {"write.target-file-size-bytes": str(4 << 20)}).tolerance_bytes
        == tolerance * 4 // 128
    )
    raw["tables"]["db.fixed"]["tolerance_bytes"] = 7
    assert build_config(raw).policy_for("db.fixed", props).tolerance_bytes == 7


@pytest.mark.parametrize(
    "text", ["t", "db.", ".t", "db.t-1", "db.t x", "db.`t`", "db.t;", "", "1db.t"]
)
def test_parse_table_identifier_rejects(text: str) -> None:
    with pytest.raises(UsageError, match="bad table identifier"):
        parse_table_identifier(text)


def test_parse_table_identifier_accepts() -> None:
    assert parse_table_identifier("db.events") == ("db", "events")
    assert parse_table_identifier("a.b.c_1") == ("a", "b", "c_1")


def test_engine_defaults_to_auto_and_is_set_per_table() -> None:
    raw = base()
    raw["tables"] = {"db.t": {"engine": "spark"}}
    cfg = build_config(raw)
    assert cfg.defaults.engine == "auto"
    assert cfg.policy_for("db.t").engine == "spark"
    assert cfg.policy_for("db.other").engine == "auto"
