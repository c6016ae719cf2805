"""Configuration: loaded once at the edge, validated, frozen.

Sources, later wins:
1. the YAML file: ``--config PATH``, else ``$ICEFLOE_CONFIG``, else ``conf/icefloe.yaml``;
2. ``ICEFLOE_<SECTION>__<KEY>`` environment variables (values parsed as YAML scalars), e.g.
   ``ICEFLOE_REDIS__URL=rediss://:secret@host:6380/0`` or
   ``ICEFLOE_DEFAULTS__TARGET_FILE_SIZE_BYTES=268435456``.

Relative paths in ``catalog.uri`` (``sqlite:///relative``) and ``catalog.warehouse``
(``file:relative``) resolve against the project home: the folder above ``conf/`` when the
file lives in a ``conf/`` folder, else the file's own folder.

Every problem is reported as one :class:`ConfigError` naming the key and the bad value.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import yaml

from service.errors import ConfigError, UsageError

PROJECT_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CONFIG = PROJECT_ROOT / "conf" / "icefloe.yaml"
ENV_PREFIX = "ICEFLOE_"

_IDENT_PART = r"[A-Za-z_][A-Za-z0-9_]*"
_TABLE_RE = re.compile(rf"^{_IDENT_PART}(\.{_IDENT_PART})+$")
_NAMESPACE_RE = re.compile(rf"^{_IDENT_PART}(\.{_IDENT_PART})*$")

CATALOG_TYPES = ("sql", "rest", "hive", "glue")
ACTIONS = ("merge", "sort", "expire_snapshots", "rewrite_manifests", "remove_orphan_files")


def parse_table_identifier(text: str, what: str = "table") -> tuple[str, ...]:
    """``"ns.tbl"`` → ``("ns", "tbl")``; anything else is a :class:`UsageError`.

    Identifiers are letters, digits and underscores only, so they are safe to quote into
    Spark SQL as ``catalog.`ns`.`tbl```; user text is never pasted into SQL otherwise.
    """
    if not isinstance(text, str) or not _TABLE_RE.match(text):
        raise UsageError(
            f"bad {what} identifier {text!r}: expected namespace.table "
            "(letters, digits and underscores)"
        )
    return tuple(text.split("."))


@dataclass(frozen=True)
class CatalogConfig:
    name: str
    type: str
    uri: str
    warehouse: str
    properties: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RedisConfig:
    url: str
    key_prefix: str = "icefloe"

    def redacted_url(self) -> str:
        """The URL with any password replaced, for logs and status output."""
        return re.sub(r"//([^:/@]*):[^@]*@", r"//\1:***@", self.url)


@dataclass(frozen=True)
class SparkConfig:
    master: str
    conf: Mapping[str, str] = field(default_factory=dict)
    executor_deps: str = ""  # the Arrow engine's archive for a cluster (``icefloe pack``)


@dataclass(frozen=True)
class TablePolicy:
    """How one table is optimised.

    Target size precedence (see :meth:`Config.policy_for`): ``tables.<name>`` override, then
    the table's ``write.target-file-size-bytes`` property, then ``defaults``."""

    target_file_size_bytes: int | None
    tolerance_bytes: int
    priority: int
    weight: int
    actions: tuple[str, ...]
    sort_order: tuple[str, ...]
    enabled: bool = True
    engine: str = "auto"  # the actors' data engine: auto (Arrow where exact) | spark

    @property
    def target(self) -> int:
        """The resolved target size (policies from :meth:`Config.policy_for` always have one)."""
        if self.target_file_size_bytes is None:
            raise ValueError("target size not resolved: use Config.policy_for(table)")
        return self.target_file_size_bytes


@dataclass(frozen=True)
class ManagedConfig:
    namespaces: tuple[str, ...] = ()
    tables: tuple[str, ...] = ()


@dataclass(frozen=True)
class DeciderSettings:
    """Decider knobs (proposed config section ``decider:``; defaults here)."""

    poll_seconds: float = 10.0
    lease_seconds: float = 300.0
    max_attempts: int = 3
    actors_min: int = 0
    actors_max: int = 4
    backlog_per_actor: int = 8
    ready_depth: int = 8
    aging_seconds: float = 3600.0
    quantum_bytes: int = 1 << 30
    leader_ttl_seconds: float = 30.0
    claim_idle_ms: int = 60_000
    backoff_initial_seconds: float = 1.0
    backoff_max_seconds: float = 60.0
    recent_cap: int = 200
    metrics_port: int = 0  # 0 = no endpoint

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any] | None) -> DeciderSettings:
        """Validate a ``decider:`` config section; errors name the key and the value."""
        data = dict(raw or {})
        known = {f.name: f for f in fields(cls)}
        values: dict[str, Any] = {}
        for key, value in data.items():
            if key not in known:
                raise ConfigError(f"unknown config key 'decider.{key}' "
                                  f"(allowed: {', '.join(known)})")
            default = known[key].default
            if isinstance(value, bool) or not isinstance(value, (int, float)) or (
                    isinstance(default, int) and not isinstance(value, int)):
                kind = "an integer" if isinstance(default, int) else "a number"
                raise ConfigError(f"config key 'decider.{key}' must be {kind}, got {value!r}")
            if value < 0 or (value == 0 and key not in ("actors_min", "metrics_port")):
                raise ConfigError(f"config key 'decider.{key}' must be positive, got {value!r}")
            values[key] = value
        settings = cls(**values)
        if settings.actors_max < settings.actors_min:
            raise ConfigError("config key 'decider.actors_max' must be >= decider.actors_min")
        if settings.leader_ttl_seconds <= settings.poll_seconds:
            raise ConfigError("config key 'decider.leader_ttl_seconds' must exceed poll_seconds")
        return settings


@dataclass(frozen=True)
class Config:
    catalog: CatalogConfig
    redis: RedisConfig
    spark: SparkConfig
    defaults: TablePolicy
    managed: ManagedConfig
    tables: Mapping[str, TablePolicy]
    source: str = "<defaults>"
    home: str = str(PROJECT_ROOT)
    decider: DeciderSettings = field(default_factory=lambda: DeciderSettings())

    def policy_for(
        self, table: str, table_properties: Mapping[str, str] | None = None
    ) -> TablePolicy:
        """The effective policy of ``table``: per-table override, table property, default."""
        override = self.tables.get(table)
        policy = override or self.defaults
        target = override.target_file_size_bytes if override else None
        if target is None and table_properties:
            raw = table_properties.get("write.target-file-size-bytes")
            if raw is not None and str(raw).isdigit() and int(raw) > 0:
                target = int(raw)
        default_target = self.defaults.target
        if target is None:
            target = default_target
        tolerance = policy.tolerance_bytes
        if tolerance == self.defaults.tolerance_bytes and target != default_target:
            # an inherited tolerance is relative: it scales with the table's own target
            tolerance = tolerance * target // default_target
        return replace(policy, target_file_size_bytes=target, tolerance_bytes=tolerance)

    def is_managed(self, table: str) -> bool:
        namespace = table.rsplit(".", 1)[0]
        return (
            table in self.managed.tables
            or table in self.tables
            or namespace in self.managed.namespaces
        )


# --------------------------------------------------------------------------------------
# validation helpers: each names the dotted key and the value


def _section(raw: Any, key: str, allowed: tuple[str, ...]) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ConfigError(f"config key {key!r} must be a mapping, got {raw!r}")
    for name in raw:
        if name not in allowed:
            raise ConfigError(f"unknown config key '{key}.{name}' (allowed: {', '.join(allowed)})")
    return dict(raw)


def _str(raw: Any, key: str) -> str:
    if not isinstance(raw, str) or not raw:
        raise ConfigError(f"config key {key!r} must be a non-empty string, got {raw!r}")
    return raw


def _int(raw: Any, key: str, minimum: int) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise ConfigError(f"config key {key!r} must be an integer, got {raw!r}")
    if raw < minimum:
        what = "positive" if minimum == 1 else f">= {minimum}"
        raise ConfigError(f"config key {key!r} must be {what}, got {raw!r}")
    return int(raw)


def _str_map(raw: Any, key: str) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ConfigError(f"config key {key!r} must be a mapping, got {raw!r}")
    out = {}
    for k, v in raw.items():
        if not isinstance(k, str) or isinstance(v, (Mapping, list)) or v is None:
            raise ConfigError(f"config key '{key}.{k}' must be a scalar, got {v!r}")
        out[k] = str(v).lower() if isinstance(v, bool) else str(v)
    return out


def _str_list(raw: Any, key: str) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(x, str) and x for x in raw):
        raise ConfigError(f"config key {key!r} must be a list of strings, got {raw!r}")
    return tuple(raw)


_POLICY_KEYS = (
    "target_file_size_bytes",
    "tolerance_bytes",
    "priority",
    "weight",
    "actions",
    "sort_order",
    "enabled",
    "engine",
)
ENGINES = ("auto", "spark")


def _policy(raw: Any, key: str, base: TablePolicy | None) -> TablePolicy:
    data = _section(raw, key, _POLICY_KEYS)
    if base is None:
        for required in ("target_file_size_bytes", "tolerance_bytes"):
            if required not in data:
                raise ConfigError(f"config key '{key}.{required}' is required")
        base = TablePolicy(None, 0, 1, 1, ("merge",), ())
    target = base.target_file_size_bytes
    if "target_file_size_bytes" in data:
        target = _int(data["target_file_size_bytes"], f"{key}.target_file_size_bytes", 1)
    tolerance = base.tolerance_bytes
    if "tolerance_bytes" in data:
        tolerance = _int(data["tolerance_bytes"], f"{key}.tolerance_bytes", 0)
    actions = base.actions
    if "actions" in data:
        actions = _str_list(data["actions"], f"{key}.actions")
        for action in actions:
            if action not in ACTIONS:
                raise ConfigError(
                    f"config key '{key}.actions' has unknown action {action!r} "
                    f"(known: {', '.join(ACTIONS)})"
                )
    sort_order = base.sort_order
    if "sort_order" in data:
        sort_order = _str_list(data["sort_order"], f"{key}.sort_order")
        for col in sort_order:
            if not re.match(rf"^{_IDENT_PART}$", col):
                raise ConfigError(f"config key '{key}.sort_order' has bad column {col!r}")
    enabled = data.get("enabled", base.enabled)
    if not isinstance(enabled, bool):
        raise ConfigError(f"config key '{key}.enabled' must be true or false, got {enabled!r}")
    engine = data.get("engine", base.engine)
    if engine not in ENGINES:
        raise ConfigError(
            f"config key '{key}.engine' must be one of {', '.join(ENGINES)}, got {engine!r}"
        )
    return TablePolicy(
        target_file_size_bytes=target,
        tolerance_bytes=tolerance,
        priority=_int(data.get("priority", base.priority), f"{key}.priority", 0),
        weight=_int(data.get("weight", base.weight), f"{key}.weight", 1),
        actions=actions,
        sort_order=sort_order,
        enabled=enabled,
        engine=engine,
    )


def _resolve_paths(catalog: dict[str, Any], home: Path) -> None:
    uri = catalog.get("uri")
    if isinstance(uri, str) and uri.startswith("sqlite:///") and not uri.startswith("sqlite:////"):
        catalog["uri"] = "sqlite:///" + str(home / uri[len("sqlite:///") :])
    wh = catalog.get("warehouse")
    if isinstance(wh, str) and wh.startswith("file:") and not wh.startswith("file:/"):
        catalog["warehouse"] = "file://" + str(home / wh[len("file:") :])


def _executor_deps(raw: Any, home: Path) -> str:
    """``spark.executor_deps``: "" (none), a URI Spark fetches, or a local path (relative
    ones resolve against the project home)."""
    if raw is None:
        return ""
    path = _str(raw, "spark.executor_deps")
    if not path.endswith((".tar.gz", ".tgz")):
        raise ConfigError(
            "config key 'spark.executor_deps' must name a .tar.gz or .tgz archive "
            f"(built by `icefloe pack`), got {path!r}"
        )
    return path if "://" in path or Path(path).is_absolute() else str(home / path)


def build_config(raw: Any, source: str = "<dict>", home: Path = PROJECT_ROOT) -> Config:
    """Validate a raw (YAML-shaped) mapping into a frozen :class:`Config`."""
    top = _section(
        raw, "<root>", ("catalog", "redis", "spark", "defaults", "managed", "tables", "decider")
    )
    cat = _section(
        top.get("catalog"), "catalog", ("name", "type", "uri", "warehouse", "properties")
    )
    _resolve_paths(cat, home)
    name = _str(cat.get("name"), "catalog.name")
    if not re.match(rf"^{_IDENT_PART}$", name):
        raise ConfigError(f"config key 'catalog.name' must be an identifier, got {name!r}")
    ctype = cat.get("type", "sql")
    if ctype not in CATALOG_TYPES:
        raise ConfigError(
            f"config key 'catalog.type' must be one of {', '.join(CATALOG_TYPES)}, got {ctype!r}"
        )
    catalog = CatalogConfig(
        name=name,
        type=ctype,
        uri=_str(cat.get("uri"), "catalog.uri"),
        warehouse=_str(cat.get("warehouse"), "catalog.warehouse"),
        properties=_str_map(cat.get("properties"), "catalog.properties"),
    )
    red = _section(top.get("redis"), "redis", ("url", "key_prefix"))
    url = _str(red.get("url"), "redis.url")
    if not re.match(r"^(redis|rediss|unix)://", url):
        raise ConfigError("config key 'redis.url' must start with redis://, rediss:// or unix://")
    redis_cfg = RedisConfig(
        url=url, key_prefix=_str(red.get("key_prefix", "icefloe"), "redis.key_prefix")
    )
    spk = _section(top.get("spark"), "spark", ("master", "conf", "executor_deps"))
    spark = SparkConfig(
        master=_str(spk.get("master", "local[*]"), "spark.master"),
        conf=_str_map(spk.get("conf"), "spark.conf"),
        executor_deps=_executor_deps(spk.get("executor_deps"), home),
    )
    defaults = _policy(top.get("defaults"), "defaults", None)
    man = _section(top.get("managed"), "managed", ("namespaces", "tables"))
    managed = ManagedConfig(
        namespaces=_str_list(man.get("namespaces"), "managed.namespaces"),
        tables=_str_list(man.get("tables"), "managed.tables"),
    )
    for ns in managed.namespaces:
        if not _NAMESPACE_RE.match(ns):
            raise ConfigError(f"config key 'managed.namespaces' has bad namespace {ns!r}")
    for t in managed.tables:
        if not _TABLE_RE.match(t):
            raise ConfigError(f"config key 'managed.tables' has bad table identifier {t!r}")
    tables_raw = top.get("tables") or {}
    if not isinstance(tables_raw, Mapping):
        raise ConfigError(f"config key 'tables' must be a mapping, got {tables_raw!r}")
    tables: dict[str, TablePolicy] = {}
    for ident, override in tables_raw.items():
        if not isinstance(ident, str) or not _TABLE_RE.match(ident):
            raise ConfigError(f"config key 'tables' has bad table identifier {ident!r}")
        # the per-table target stays None unless set: the table's own property comes next
        inherited = replace(defaults, target_file_size_bytes=None)
        tables[ident] = _policy(override, f"tables.{ident}", inherited)
    decider = DeciderSettings.from_mapping(_section_or_none(top.get("decider"), "decider"))
    return Config(catalog, redis_cfg, spark, defaults, managed, tables, source, str(home), decider)


def _section_or_none(raw: Any, key: str) -> Mapping[str, Any] | None:
    if raw is not None and not isinstance(raw, Mapping):
        raise ConfigError(f"config key {key!r} must be a mapping, got {raw!r}")
    return raw


def _apply_env(raw: dict[str, Any], env: Mapping[str, str]) -> None:
    for name, value in sorted(env.items()):
        if not name.startswith(ENV_PREFIX) or "__" not in name:
            continue
        path = [p.lower() for p in name[len(ENV_PREFIX) :].split("__")]
        if not all(path):
            raise ConfigError(f"bad environment override {name!r}")
        node = raw
        for part in path[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ConfigError(f"environment override {name!r}: '{part}' is not a section")
            node = child
        try:
            node[path[-1]] = yaml.safe_load(value) if value != "" else ""
        except yaml.YAMLError:
            node[path[-1]] = value


def config_path(path: str | os.PathLike[str] | None, env: Mapping[str, str]) -> Path:
    if path:
        return Path(path)
    if env.get("ICEFLOE_CONFIG"):
        return Path(env["ICEFLOE_CONFIG"])
    return DEFAULT_CONFIG


def load_config(
    path: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None
) -> Config:
    """Load, override from the environment, validate. Raises :class:`ConfigError`."""
    env = os.environ if env is None else env
    file = config_path(path, env)
    try:
        text = file.read_text()
    except OSError as e:
        raise ConfigError(f"cannot read config file {str(file)!r}: {e.strerror}") from None
    try:
        raw = yaml.safe_load(text) or {}
    except yaml.YAMLError as e:
        where = getattr(e, "problem_mark", None)
        line = f" line {where.line + 1}" if where is not None else ""
        raise ConfigError(f"config file {str(file)!r}{line} is not valid YAML") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"config file {str(file)!r} must hold a mapping at the top level")
    _apply_env(raw, env)
    resolved = file.resolve()
    home = resolved.parent.parent if resolved.parent.name == "conf" else resolved.parent
    return build_config(raw, source=str(file), home=home)
