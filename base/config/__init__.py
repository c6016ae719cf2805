"""Configuration: loaded once at the edge, validated, frozen; a default for every key.

* :mod:`~icefloe.base.config.model`: the frozen pydantic dataclasses and their defaults;
* :mod:`~icefloe.base.config.fields`: strict field types (the action names:
  ``icefloe.optimizer.actions``);
* :mod:`~icefloe.base.config.airflow_settings`: the ``airflow:`` section (the DAGs' runs);
* :mod:`~icefloe.base.config.service_settings`: the ``decider:`` and ``history:`` sections;
* :mod:`~icefloe.base.config.load`: YAML file + ``ICEFLOE_<SECTION>__<KEY>`` overrides → model;
* :mod:`~icefloe.base.config.paths`: the project root and relative-path resolution;
* :mod:`~icefloe.base.config.identifiers`: table, namespace and column identifiers;
* :mod:`~icefloe.base.config.messages`, :mod:`~icefloe.base.config.validate`: pydantic's errors as
  one :class:`ConfigError` line naming the dotted key and the bad value.
"""

from __future__ import annotations

from icefloe.base.config.airflow_settings import AirflowSettings
from icefloe.base.config.fields import (
    ACTIONS,
    CATALOG_TYPES,
    ENGINES,
    MAINTENANCE_ACTIONS,
    MAX_LONG,
    MAX_PRIORITY,
    MAX_TARGET,
)
from icefloe.base.config.identifiers import NAMESPACE_RE, TABLE_RE, parse_table_identifier
from icefloe.base.config.load import (
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
from icefloe.base.config.model import (
    DEFAULT_SPARK_CONF,
    DEFAULT_TARGET,
    TARGET_PROPERTY,
    CatalogConfig,
    Config,
    ManagedConfig,
    PlanInputs,
    RedisConfig,
    SparkConfig,
    TablePolicy,
)
from icefloe.base.config.paths import DEFAULT_CONFIG, PROJECT_ROOT
from icefloe.base.config.service_settings import (
    DEFAULT_SHARDS,
    DeciderSettings,
    HistoryConfig,
    ReadsConfig,
)
from icefloe.base.errors import ConfigError

__all__ = [
    "ACTIONS",
    "CATALOG_TYPES",
    "MAX_LONG",
    "MAX_PRIORITY",
    "MAX_TARGET",
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
    "TARGET_PROPERTY",
    "AirflowSettings",
    "CatalogConfig",
    "Config",
    "ConfigError",
    "DeciderSettings",
    "HistoryConfig",
    "ReadsConfig",
    "ManagedConfig",
    "PlanInputs",
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
