"""Config validation: every bad input is one ConfigError naming the key and the value."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from icefloe.base.config import (
    DEFAULT_CONFIG,
    TARGET_PROPERTY,
    Config,
    ConfigError,
    DeciderSettings,
    PlanInputs,
    TablePolicy,
    build_config,
    load_config,
    parse_table_identifier,
)
from icefloe.base.errors import UsageError
from tests.support.config import base, embedded_defaults

pytestmark = pytest.mark.unit


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


def test_redis_cluster_flag() -> None:
    assert load_config(env={}).redis.cluster is False
    cfg = load_config(
        env={"ICEFLOE_REDIS__URL": "rediss://:s3cret@node1:7000", "ICEFLOE_REDIS__CLUSTER": "true"}
    )
    assert cfg.redis.cluster is True
    with pytest.raises(ConfigError) as err:  # the URL is never shown: it holds the password
        load_config(
            env={"ICEFLOE_REDIS__URL": "redis://:s3cret@n:7000/1", "ICEFLOE_REDIS__CLUSTER": "true"}
        )
    assert "db 0" in str(err.value) and "s3cret" not in str(err.value)


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
        (lambda r: r["redis"].update(cluster="yes"), "'redis.cluster' must be true or false"),
        (
            lambda r: r["redis"].update(cluster=True, url="unix:///run/redis.sock"),
            "'redis.url' must be a redis:// or rediss:// URL with cluster: true",
        ),
        (
            lambda r: r["redis"].update(cluster=True, url="redis://:pw@h:7000/3"),
            "'redis.url' must name db 0 (or none) with cluster: true",
        ),
        (
            lambda r: r["redis"].update(cluster=True, url="redis://h:7000?db=2"),
            "'redis.url' must name db 0 (or none) with cluster: true",
        ),
        (
            lambda r: r["redis"].update(cluster=True, key_prefix="a{b}"),
            "'redis.key_prefix' must not hold braces with cluster: true, got 'a{b}'",
        ),
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


def test_plan_inputs_are_the_policys_target_tolerance_and_min_input_files() -> None:
    """The one place plan, optimize, the decider and status take them from."""
    raw = base()
    raw["defaults"] = {"min_input_files": 4}
    raw["tables"] = {"db.fixed": {"target_file_size_bytes": 3000, "tolerance_bytes": 7}}
    cfg = build_config(raw)
    tolerance = cfg.defaults.tolerance_bytes
    for table, props, target, tol in [
        ("db.fixed", {TARGET_PROPERTY: "5000"}, 3000, 7),  # the table's override wins
        ("db.other", {TARGET_PROPERTY: str(4 << 20)}, 4 << 20, tolerance * 4 // 128),
        ("db.other", {TARGET_PROPERTY: "0"}, 128 << 20, tolerance),  # not a target
        ("db.other", None, 128 << 20, tolerance),
    ]:
        policy = cfg.policy_for(table, props)
        assert cfg.plan_inputs(table, props) == PlanInputs(policy, target, tol, 4)
        assert (policy.target, policy.tolerance_bytes) == (target, tol)
    # a tolerance given by hand: 2 small files are enough; min_input_files overrides both
    assert cfg.plan_inputs("db.other", tolerance=10).tolerance == 10
    assert cfg.plan_inputs("db.other", tolerance=10).min_input_files == 2
    assert cfg.plan_inputs("db.other", min_input_files=3).min_input_files == 3
    assert cfg.plan_inputs("db.other", tolerance=10, min_input_files=3).min_input_files == 3


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


# ---- a default for every key ----------------------------------------------------------


def _write(path: Path, text: str | bytes) -> Path:
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def _assert_all_defaults(cfg: Config, home: Path) -> None:
    assert cfg.catalog.name == "lake" and cfg.catalog.type == "sql"
    assert cfg.catalog.uri == f"sqlite:///{home}/.lakehouse/catalog.db"
    assert cfg.catalog.warehouse == f"file://{home}/.lakehouse/warehouse"
    assert cfg.catalog.properties == {}
    assert cfg.redis.url == "redis://127.0.0.1:6379/0" and cfg.redis.key_prefix == "icefloe"
    assert cfg.spark.master == "local[*]"
    assert cfg.spark.conf == {"spark.sql.shuffle.partitions": "8", "spark.ui.enabled": "false"}
    assert cfg.spark.executor_deps == ""
    assert cfg.defaults == TablePolicy(
        target_file_size_bytes=128 << 20,
        tolerance_bytes=44739242,
        priority=1,
        weight=1,
        actions=("merge",),
        sort_order=(),
        enabled=True,
        engine="auto",
    )
    assert cfg.managed.namespaces == () and cfg.managed.tables == ()
    assert cfg.tables == {}
    assert cfg.decider == DeciderSettings()


@pytest.mark.parametrize("text", ["", "{}\n", "catalog:\n", "# nothing but a comment\n"])
def test_a_file_holds_only_what_differs(tmp_path: Path, text: str) -> None:
    cfg = load_config(_write(tmp_path / "icefloe.yaml", text), env={})
    _assert_all_defaults(cfg, tmp_path)
    assert cfg.source == str(tmp_path / "icefloe.yaml")


def test_only_a_catalog_section_keeps_every_other_default(tmp_path: Path) -> None:
    conf = tmp_path / "conf"
    conf.mkdir()
    path = _write(conf / "icefloe.yaml", "catalog:\n  name: other\n")
    cfg = load_config(path, env={})
    assert cfg.catalog.name == "other"
    # a file in a conf/ folder resolves relative paths against the folder above it
    assert cfg.catalog.uri == f"sqlite:///{tmp_path}/.lakehouse/catalog.db"
    assert cfg.redis.url == "redis://127.0.0.1:6379/0"
    assert cfg.defaults.tolerance_bytes == 44739242


def test_empty_mapping_is_the_embedded_default(tmp_path: Path) -> None:
    _assert_all_defaults(build_config({}, home=tmp_path), tmp_path)
    _assert_all_defaults(build_config(None, home=tmp_path), tmp_path)


def test_default_tolerance_follows_the_default_target(tmp_path: Path) -> None:
    target = 10_000_000
    cfg = build_config(
        {"defaults": {"target_file_size_bytes": target}, "tables": {"db.t": None}},
        home=tmp_path,
    )
    assert cfg.defaults.target_file_size_bytes == target
    assert cfg.defaults.tolerance_bytes == target // 3
    # a table inherits it (and its own target stays unresolved until policy_for)
    assert cfg.tables["db.t"].tolerance_bytes == target // 3
    assert cfg.tables["db.t"].target_file_size_bytes is None
    assert cfg.policy_for("db.t").target_file_size_bytes == target
    # an explicit tolerance wins
    explicit = {"target_file_size_bytes": target, "tolerance_bytes": 5}
    assert build_config({"defaults": explicit}).defaults.tolerance_bytes == 5


def test_env_override_target_moves_the_default_tolerance(tmp_path: Path) -> None:
    path = _write(tmp_path / "x.yaml", "catalog:\n  name: other\n")
    cfg = load_config(path, env={"ICEFLOE_DEFAULTS__TARGET_FILE_SIZE_BYTES": "3000"})
    assert (cfg.defaults.target_file_size_bytes, cfg.defaults.tolerance_bytes) == (3000, 1000)


def test_env_override_on_a_file_without_that_section(tmp_path: Path) -> None:
    path = _write(tmp_path / "x.yaml", "catalog:\n  name: other\nredis:\n")
    cfg = load_config(
        path,
        env={
            "ICEFLOE_REDIS__KEY_PREFIX": "staging",
            "ICEFLOE_DECIDER__POLL_SECONDS": "2.5",
            "ICEFLOE_MANAGED__NAMESPACES": "[demo, sales]",
        },
    )
    assert cfg.catalog.name == "other"
    assert cfg.redis.key_prefix == "staging" and cfg.redis.url == "redis://127.0.0.1:6379/0"
    assert cfg.decider.poll_seconds == 2.5 and cfg.decider.lease_seconds == 300
    assert cfg.managed.namespaces == ("demo", "sales")


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"decider": {"poll_seconds": float("nan")}}, "'decider.poll_seconds' must be a finite"),
        ({"decider": {"aging_seconds": float("inf")}}, "'decider.aging_seconds' must be a finite"),
        ({"decider": {"lease_seconds": float("-inf")}}, "'decider.lease_seconds' must be a finite"),
        ({"decider": {"max_attempts": True}}, "'decider.max_attempts' must be an integer"),
        ({"decider": {"metrics_port": 70000}}, "'decider.metrics_port' must be <= 65535"),
        ({"defaults": {"priority": False}}, "'defaults.priority' must be an integer, got False"),
        ({"defaults": {"enabled": 1}}, "'defaults.enabled' must be true or false, got 1"),
        ({"spark": {"executor_deps": "deps.zip"}}, "must name a .tar.gz or .tgz archive"),
        ({"redis": 5}, "config key 'redis' must be a mapping, got 5"),
        ({"tables": {"db.t": {"colour": 1}}}, "unknown config key 'tables.db.t.colour'"),
        ({"source": "x"}, "unknown config key '<root>.source'"),
    ],
)
def test_more_bad_values_are_one_line(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        build_config(raw)
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_nan_from_a_file_or_the_environment_names_the_key(tmp_path: Path) -> None:
    path = _write(tmp_path / "x.yaml", "decider:\n  backoff_max_seconds: .nan\n")
    with pytest.raises(ConfigError, match="'decider.backoff_max_seconds' must be a finite number"):
        load_config(path, env={})
    empty = _write(tmp_path / "empty.yaml", "")
    with pytest.raises(ConfigError, match="'decider.aging_seconds' must be a finite number"):
        load_config(empty, env={"ICEFLOE_DECIDER__AGING_SECONDS": ".inf"})


def test_a_non_utf8_file_is_one_config_error(tmp_path: Path) -> None:
    path = _write(tmp_path / "latin1.yaml", "catalog:\n  name: caf\xe9\n".encode("latin-1"))
    with pytest.raises(ConfigError) as err:
        load_config(path, env={})
    assert "is not UTF-8" in str(err.value) and str(path) in str(err.value)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("action", ["expire_snapshots", "rewrite_manifests", "remove_orphan_files"])
def test_maintenance_actions_are_accepted_alone_or_beside_merges(action: str) -> None:
    cfg = build_config(
        {"tables": {"db.t": {"actions": [action]}, "db.u": {"actions": ["merge", action]}}}
    )
    assert cfg.policy_for("db.t").actions == (action,)
    assert cfg.policy_for("db.u").actions == ("merge", action)


def test_a_tables_maintenance_keys_layer_over_the_defaults_key_by_key() -> None:
    cfg = build_config(
        {
            "defaults": {"maintenance": {"min_manifests": 8, "retain_last": 9}},
            "tables": {"db.t": {"maintenance": {"retain_last": 3}}, "db.u": {}},
        }
    )
    t, u = cfg.policy_for("db.t").maintenance, cfg.policy_for("db.u").maintenance
    assert (t.min_manifests, t.retain_last) == (8, 3) and (u.min_manifests, u.retain_last) == (8, 9)
    assert t.manifest_target({}) == 8 << 20
    assert t.manifest_target({"commit.manifest.target-size-bytes": "1048576"}) == 1 << 20
    assert t.rules(9000).manifest_tolerance == 3000 and t.rules(9000).retain_last == 3


@pytest.mark.parametrize(
    ("section", "match"),
    [
        ({"orphan_min_age_hours": 2}, "'defaults.maintenance.orphan_min_age_hours' must be >= 24"),
        (
            {"snapshot_max_age_hours": 0.5},
            "'defaults.maintenance.snapshot_max_age_hours' must be >= 1",
        ),
        ({"delete_ratio": 1.5}, "'defaults.maintenance.delete_ratio' must be <= 1"),
        ({"retain_last": 0}, "'defaults.maintenance.retain_last'"),
        ({"bogus": 1}, "unknown config key 'defaults.maintenance.bogus'"),
    ],
)
def test_bad_maintenance_values_are_one_line_naming_the_key(section: dict, match: str) -> None:
    with pytest.raises(ConfigError, match=match) as err:
        build_config({"defaults": {"maintenance": section}})
    assert "\n" not in str(err.value)


def test_actions_are_the_action_enum_and_sort_needs_a_sort_order() -> None:
    cfg = build_config({"tables": {"db.t": {"actions": ["merge", "sort"], "sort_order": ["ts"]}}})
    actions = cfg.policy_for("db.t").actions
    assert actions == ("merge", "sort")
    # merge and sort without a sort order: merge (the decider's fallback) is still run
    assert build_config({"defaults": {"actions": ["merge", "sort"]}}).defaults.actions[1] == "sort"
    with pytest.raises(ConfigError, match="'defaults.actions' .*sort_order is empty"):
        build_config({"defaults": {"actions": ["sort"]}})


def test_every_default_written_out_is_the_empty_config(tmp_path: Path) -> None:
    assert build_config(embedded_defaults(), home=tmp_path) == build_config({}, home=tmp_path)


@pytest.mark.parametrize(
    "env",
    [
        {"ICEFLOE_CATALOG__PROPERTIES__S3.SECRET-ACCESS-KEY": "[sekritABC, x]"},
        {"ICEFLOE_CATALOG__PROPERTIES__S3.SECRET-ACCESS-KEY": "{a: sekritABC}"},
        {"ICEFLOE_CATALOG__PROPERTIES__TOKEN": "[sekritABC]"},
        {"ICEFLOE_SPARK__CONF__SPARK.HADOOP.FS.S3A.SECRET.KEY": "[sekritABC]"},
        {  # another key's error while a secret sits beside it
            "ICEFLOE_CATALOG__PROPERTIES__S3.SECRET-ACCESS-KEY": "sekritABC",
            "ICEFLOE_CATALOG__PROPERTIES__OTHER": "[sekritABC]",
        },
        {"ICEFLOE_CATALOG__URI": "[postgresql://u:sekritABC@h/db]"},
    ],
)
def test_a_config_error_never_prints_a_secret_value(env: dict[str, str]) -> None:
    """Issue 28 item 8: the "must be a scalar" message printed the secret's value."""
    with pytest.raises(ConfigError) as err:
        load_config(env=env)
    assert "sekritABC" not in str(err.value)
    assert str(err.value).startswith("config key 'catalog.") or "spark.conf" in str(err.value)


@pytest.mark.parametrize(
    "url", ["redis://127.0.0.1:99999/0", "redis://:pw@h:-1/0", "redis://h:x/0"]
)
def test_a_redis_url_with_a_bad_port_is_a_config_error(url: str) -> None:
    """Issue 28 item 9: port 99999 was a ValueError at connect time (exit 1, traceback)."""
    with pytest.raises(ConfigError, match="'redis.url' has a bad port"):
        load_config(env={"ICEFLOE_REDIS__URL": url})


@pytest.mark.parametrize(
    ("policy", "match"),
    [
        ({"actions": ["merge", "zorder"], "zorder": ["x"]}, "'tables.db.t.actions' .*two or more"),
        ({"actions": ["zorder"]}, "zorder names 0 column"),
        ({"clustering_tolerance": 0.5}, "'tables.db.t.clustering_tolerance'.*0.5"),
        ({"clustering_tolerance": "deep"}, "'tables.db.t.clustering_tolerance'"),
        ({"zorder": ["a b"]}, "'tables.db.t.zorder'"),
    ],
)
def test_bad_layout_values_are_one_line_naming_the_key(policy: dict, match: str) -> None:
    with pytest.raises(ConfigError, match=match) as err:
        build_config({"tables": {"db.t": policy}})
    assert "\n" not in str(err.value)


def test_layout_keys_take_their_defaults_and_overrides() -> None:
    cfg = build_config({"tables": {"db.t": {"actions": ["merge", "zorder"], "zorder": ["x", "y"]}}})
    policy = cfg.policy_for("db.t")
    assert policy.zorder == ("x", "y") and policy.clustering_tolerance == 1.25
    assert cfg.defaults.clustering_tolerance == 1.25 and "zorder" in policy.actions
    assert (
        build_config({"defaults": {"clustering_tolerance": 1}}).defaults.clustering_tolerance == 1
    )
