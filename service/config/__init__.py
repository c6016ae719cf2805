"""Configuration: loaded once at the edge, validated, frozen; a default for every key.

* :mod:`~service.config.model`: the frozen pydantic dataclasses and their defaults;
* :mod:`~service.config.fields`: strict field types, the :class:`Action` enum;
* :mod:`~service.config.load`: YAML file + ``ICEFLOE_<SECTION>__<KEY>`` overrides → model;
* :mod:`~service.config.paths`: the project root and relative-path resolution;
* :mod:`~service.config.identifiers`: table, namespace and column identifiers;
* :mod:`~service.config.messages`, :mod:`~service.config.validate`: pydantic's errors as
  one :class:`ConfigError` line naming the dotted key and the bad value.
"""

from __future__ import annotations

from service.config.fields import ACTIONS, CATALOG_TYPES, ENGINES, MAINTENANCE_ACTIONS, Action
from service.config.identifiers import NAMESPACE_RE, TABLE_RE, parse_table_identifier
from service.config.load import (
    ENV_PREFIX,
    PROFILES,
    apply_env,
    apply_profile,
    build_config,
    config_path,
    dev_root,
    load_config,
    read_config_file,
)
from service.config.model import (
    DEFAULT_SHARDS,
    DEFAULT_SPARK_CONF,
    DEFAULT_TARGET,
    CatalogConfig,
    Config,
    DeciderSettings,
    ManagedConfig,
    RedisConfig,
    SparkConfig,
    TablePolicy,
)
from service.config.paths import DEFAULT_CONFIG, PROJECT_ROOT
from service.errors import ConfigError

__all__ = [
    "ACTIONS",
    "CATALOG_TYPES",
    "DEFAULT_CONFIG",
    "DEFAULT_SPARK_CONF",
    "DEFAULT_SHARDS",
    "DEFAULT_TARGET",
    "ENGINES",
    "ENV_PREFIX",
    "MAINTENANCE_ACTIONS",
    "NAMESPACE_RE",
    "PROFILES",
    "PROJECT_ROOT",
    "TABLE_RE",
    "Action",
    "CatalogConfig",
    "Config",
    "ConfigError",
    "DeciderSettings",
    "ManagedConfig",
    "RedisConfig",
    "SparkConfig",
    "TablePolicy",
    "apply_env",
    "apply_profile",
    "build_config",
    "config_path",
    "dev_root",
    "load_config",
    "parse_table_identifier",
    "read_config_file",
]
