"""Loading: the YAML file, then ``ICEFLOE_<SECTION>__<KEY>`` overrides, then validation.

Sources, later wins:
1. the defaults of :mod:`icefloe.base.config.model`;
2. the YAML file: ``--config PATH``, else ``$ICEFLOE_CONFIG``, else ``conf/icefloe.yaml``;
3. with ``$ICEFLOE_PROFILE`` (``postgres``, ``rest-s3``; ``embedded`` is the file alone), the
   overlay that ``icefloe dev up --profile NAME`` wrote for its local services
   (``.dev/NAME/icefloe.yaml``, or under ``$ICEFLOE_DEV_ROOT``): their catalog section;
4. ``ICEFLOE_<SECTION>__<KEY>`` environment variables (values parsed as YAML scalars), e.g.
   ``ICEFLOE_REDIS__URL=rediss://:secret@host:6380/0`` or
   ``ICEFLOE_DEFAULTS__TARGET_FILE_SIZE_BYTES=268435456``.

Every problem is one :class:`ConfigError` line naming the key and the bad value.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from icefloe.base.config.messages import INTERNAL_FIELDS, ROOT
from icefloe.base.config.model import Config
from icefloe.base.config.paths import (
    DEFAULT_CONFIG,
    PROJECT_ROOT,
    home_of,
    resolve_archive,
    resolve_uri,
    resolve_warehouse,
)
from icefloe.base.config.validate import validate
from icefloe.base.config.yamlfile import env_value, load_yaml, read_text
from icefloe.base.errors import ConfigError
from icefloe.base.redact import register_secrets

ENV_PREFIX = "ICEFLOE_"
PROFILES = ("embedded", "postgres", "rest-s3")
"""The backend profiles ``icefloe dev`` runs locally (:mod:`icefloe.app.ops.dev`)."""


def _resolve_paths(cfg: Config, home: Path) -> Config:
    catalog = dataclasses.replace(
        cfg.catalog,
        uri=resolve_uri(cfg.catalog.uri, home),
        warehouse=resolve_warehouse(cfg.catalog.warehouse, home),
    )
    spark = dataclasses.replace(
        cfg.spark, executor_deps=resolve_archive(cfg.spark.executor_deps, home)
    )
    return dataclasses.replace(cfg, catalog=catalog, spark=spark)


def build_config(raw: Any, source: str = "<dict>", home: Path = PROJECT_ROOT) -> Config:
    """Validate a raw (YAML-shaped) mapping into a frozen :class:`Config`; missing keys take
    their defaults, relative paths resolve against ``home``."""
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise ConfigError(f"config key {ROOT!r} must be a mapping, got {raw!r}")
    for name in INTERNAL_FIELDS:
        if name in raw:
            raise ConfigError(f"unknown config key '{ROOT}.{name}'")
    cfg = validate(Config, {**raw, "source": source, "home": str(home)})
    return _resolve_paths(cfg, home)


def apply_env(raw: dict[str, Any], env: Mapping[str, str]) -> None:
    """Merge ``ICEFLOE_<SECTION>__<KEY>=value`` overrides into ``raw`` (in place)."""
    for name, value in sorted(env.items()):
        if not name.startswith(ENV_PREFIX) or "__" not in name:
            continue
        path = [p.lower() for p in name[len(ENV_PREFIX) :].split("__")]
        if not all(path):
            raise ConfigError(f"bad environment override {name!r}")
        node = raw
        for part in path[:-1]:
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            if not isinstance(child, dict):
                raise ConfigError(f"environment override {name!r}: '{part}' is not a section")
            node = child
        node[path[-1]] = env_value(name, value)


def dev_root(env: Mapping[str, str]) -> Path:
    """Where ``icefloe dev`` keeps its services' data, state and overlays."""
    return Path(env.get("ICEFLOE_DEV_ROOT") or PROJECT_ROOT / ".dev")


def apply_profile(raw: dict[str, Any], env: Mapping[str, str]) -> None:
    """Merge the ``$ICEFLOE_PROFILE`` overlay into ``raw`` (in place; the overlay wins)."""
    profile = env.get("ICEFLOE_PROFILE", "").strip()
    if not profile or profile == "embedded":
        return
    if profile not in PROFILES:
        raise ConfigError(
            f"ICEFLOE_PROFILE {profile!r} is not a profile: choose one of {', '.join(PROFILES)}"
        )
    overlay = dev_root(env) / profile / "icefloe.yaml"
    if not overlay.is_file():
        raise ConfigError(
            f"ICEFLOE_PROFILE {profile!r}: its services are not set up ({overlay} is missing); "
            f"run `icefloe dev up --profile {profile}`"
        )
    _merge(raw, read_config_file(overlay))


def _merge(into: dict[str, Any], overlay: Mapping[str, Any]) -> None:
    for key, value in overlay.items():
        if isinstance(value, Mapping) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value


def config_path(path: str | os.PathLike[str] | None, env: Mapping[str, str]) -> Path:
    if path:
        return Path(path)
    if env.get("ICEFLOE_CONFIG"):
        return Path(env["ICEFLOE_CONFIG"])
    return DEFAULT_CONFIG


def read_config_file(file: Path) -> dict[str, Any]:
    """The file's top-level mapping (``{}`` for an empty file), read within bounds
    (:mod:`icefloe.base.config.yamlfile`)."""
    raw = load_yaml(read_text(file), f"config file {str(file)!r}")
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(f"config file {str(file)!r} must hold a mapping at the top level")
    return raw


def load_config(
    path: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None
) -> Config:
    """Load, override from the environment, validate. Raises :class:`ConfigError`."""
    env = os.environ if env is None else env
    file = config_path(path, env)
    raw = read_config_file(file)
    apply_profile(raw, env)
    apply_env(raw, env)
    cfg = build_config(raw, source=str(file), home=home_of(file))
    register_secrets(cfg.secret_values())  # scrubbed from every error and log line
    return cfg
