"""The configuration model: frozen pydantic dataclasses with a default for every key.

An empty file is the embedded default (the lakehouse under ``.lakehouse/``, Redis on
localhost); a file holds only what differs. A key set to ``null`` means its default.
Unknown keys are rejected. These are dataclasses, so ``dataclasses.replace`` works on
them (and re-validates).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs, urlsplit

from pydantic import Field, model_validator
from pydantic.dataclasses import dataclass

from icefloe.base.config.airflow_settings import AirflowSettings
from icefloe.base.config.fields import (
    STRICT,
    Actions,
    ArchivePath,
    CatalogType,
    ClusteringDepth,
    Columns,
    Engine,
    Flag,
    Identifier,
    MinInputFiles,
    Namespaces,
    NonEmptyStr,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    Priority,
    RedisUrl,
    ScalarMap,
    Tables,
    TargetSize,
)
from icefloe.base.config.identifiers import is_table
from icefloe.base.config.maintenance_policy import MaintenancePolicy
from icefloe.base.config.messages import FieldProblem, show
from icefloe.base.config.paths import PROJECT_ROOT
from icefloe.base.config.service_settings import DeciderSettings, HistoryConfig, ReadsConfig
from icefloe.base.redact import display_url, is_secret_name, url_password

DEFAULT_TARGET = 128 << 20  # 128 MiB
DEFAULT_BATCH_BYTES = 16 << 30  # a table's batch: one commit per this much rewritten
DEFAULT_SPARK_CONF = {"spark.sql.shuffle.partitions": "8", "spark.ui.enabled": "false"}
TARGET_PROPERTY = "write.target-file-size-bytes"  # a table's own target (Iceberg's property)
NOT_KEYS = ("source", "home")  # Config fields the loader sets, never a file


@dataclass(frozen=True, config=STRICT)
class CatalogConfig:
    name: Identifier = Field(
        default="lake",
        description="The catalog's name in Spark and in PyIceberg (both see the same tables).",
    )
    type: CatalogType = Field(
        default="sql", description="sql (JDBC on SQLite or PostgreSQL), rest, hive or glue."
    )
    uri: NonEmptyStr = Field(
        default="sqlite:///.lakehouse/catalog.db",
        description="sqlite:///relative/or/absolute.db, postgresql://user:pw@host/db, or the "
        "REST or Hive URI; a relative SQLite path resolves against the project folder.",
    )
    warehouse: NonEmptyStr = Field(
        default="file:.lakehouse/warehouse",
        description="The warehouse location: file:relative, file:///absolute or s3://bucket/path.",
    )
    properties: ScalarMap = Field(
        default_factory=dict,
        description="Free catalog properties, passed to Spark (spark.sql.catalog.<name>.<key>) "
        "and to PyIceberg (credentials: better in the environment).",
    )


@dataclass(frozen=True, config=STRICT)
class RedisConfig:
    url: RedisUrl = Field(
        default="redis://127.0.0.1:6379/0",
        description="redis://, rediss:// (TLS) or unix://; a password in it is never printed.",
    )
    key_prefix: NonEmptyStr = Field(default="icefloe", description="The prefix of every Redis key.")
    cluster: Flag = Field(
        default=False,
        description="A Redis Cluster: url names any one node (db 0 only), the client finds "
        "the others.",
    )

    @model_validator(mode="after")
    def _cluster_fits(self) -> RedisConfig:
        if not self.cluster:
            return self
        if not self.url.startswith(("redis://", "rediss://")):
            raise FieldProblem("must be a redis:// or rediss:// URL with cluster: true", key="url")
        parts = urlsplit(self.url)
        dbs = [parts.path.strip("/") or "0", *parse_qs(parts.query).get("db", [])]
        if any(db != "0" for db in dbs):  # the value is not shown: a URL may hold a password
            raise FieldProblem("must name db 0 (or none) with cluster: true", key="url")
        if "{" in self.key_prefix or "}" in self.key_prefix:  # hash tags: icefloe.base.keys
            raise FieldProblem(
                f"must not hold braces with cluster: true, got {show(self.key_prefix)}",
                key="key_prefix",
            )
        return self

    def redacted_url(self) -> str:
        """The URL without credentials, for logs and status output (:mod:`icefloe.base.redact`)."""
        return display_url(self.url)


@dataclass(frozen=True, config=STRICT)
class SparkConfig:
    master: NonEmptyStr = Field(
        default="local[*]",
        description="The master of the sessions icefloe starts itself (ignored under "
        "spark-submit).",
    )
    conf: ScalarMap = Field(
        default_factory=lambda: dict(DEFAULT_SPARK_CONF),
        description="Free Spark conf for every session icefloe starts or submits.",
    )
    executor_deps: ArchivePath = Field(
        default="",
        description="On a cluster, the archive icefloe pack writes (a path or a URI): shipped "
        "with spark.archives and put on the executors' PYTHONPATH, so the Arrow engine runs "
        "there.",
    )


@dataclass(frozen=True, config=STRICT)
class TablePolicy:
    """How one table is optimised.

    Target size precedence (see :meth:`Config.policy_for`): ``tables.<name>`` override, then
    the table's ``write.target-file-size-bytes`` property, then ``defaults``. In a config
    file, ``defaults.tolerance_bytes`` defaults to a third of ``defaults``' target."""

    target_file_size_bytes: TargetSize | None = Field(
        default=DEFAULT_TARGET,
        description="The target size T of data files (1 TiB at most). A table's own "
        "write.target-file-size-bytes comes before defaults, a tables.<name> override first.",
    )
    tolerance_bytes: NonNegativeInt = Field(
        default=DEFAULT_TARGET // 3,
        description="A partition whose file-size MSE is under tolerance² is left alone "
        "(default: a third of the target; an inherited tolerance scales with a table's target).",
    )
    min_input_files: MinInputFiles = Field(
        default=5,
        description="A partition waits for this many small files (under 0.75 of the target) "
        "before it is merged, unless together they hold more than a target (Iceberg's "
        "min-input-files).",
    )
    max_wait_hours: PositiveFloat = Field(
        default=1.0,
        description="... or this long from when it first had two small files; then it is "
        "merged as it stands (Amoro's minor.trigger.interval).",
    )
    priority: Priority = Field(
        default=1, description="The queue's class: 0 is the highest, 1000 the lowest."
    )
    weight: PositiveInt = Field(
        default=1,
        description="The table's share, in bytes rewritten, among the tables of its class.",
    )
    actions: Actions = Field(
        default=("merge",),
        description="What the decider may do to the table: names from the action registry "
        "(see the actions reference).",
    )
    sort_order: Columns = Field(
        default=(),
        description="Columns to keep sorted by (ascending, nulls first) when the table "
        "declares no write order of its own (the sort action).",
    )
    zorder: Columns = Field(
        default=(), description="Two or more columns to z-order by (the zorder action)."
    )
    clustering_tolerance: ClusteringDepth = Field(
        default=1.25,
        description="The mean clustering depth a sorted or z-ordered partition may reach (1: "
        "fully sorted); 1.25 opens about as many files as a full re-sort at under half its "
        "bytes (bench/layout_bench.py).",
    )
    enabled: Flag = Field(default=True, description="false: the decider leaves the table alone.")
    engine: Engine = Field(
        default="auto",
        description="The actors' data engine: auto (Arrow for groups of Parquet files whose "
        "delete files, if any, are Parquet position deletes; else Spark) or spark.",
    )
    batch_max_items: PositiveInt = Field(
        default=1000,
        description="Partitions an actor takes, plans and commits at once (1: one item per "
        "commit).",
    )
    batch_max_bytes: PositiveInt = Field(
        default=DEFAULT_BATCH_BYTES,
        description="... and bytes to rewrite in one batch (the first item always goes).",
    )
    maintenance: MaintenancePolicy = Field(
        default_factory=MaintenancePolicy,
        description="When the maintenance actions pay (layered key by key over "
        "defaults.maintenance).",
    )

    @model_validator(mode="after")
    def _something_runs(self) -> TablePolicy:
        if "sort" in self.actions and "merge" not in self.actions and not self.sort_order:
            raise FieldProblem(
                f"is {[str(a) for a in self.actions]} but sort_order is empty: the decider "
                "would never act (add merge, or set sort_order)",
                key="actions",
            )
        if "zorder" in self.actions and len(self.zorder) < 2:
            raise FieldProblem(
                f"is {[str(a) for a in self.actions]} but zorder names "
                f"{len(self.zorder)} column(s): z-order interleaves two or more "
                "(one column is a sort: use sort and sort_order)",
                key="actions",
            )
        return self

    @property
    def target(self) -> int:
        """The resolved target size (policies from :meth:`Config.policy_for` always have one)."""
        if self.target_file_size_bytes is None:
            raise ValueError("target size not resolved: use Config.policy_for(table)")
        return self.target_file_size_bytes


@dataclasses.dataclass(frozen=True)
class PlanInputs:
    """What planning a table's rewrite takes from its policy (:meth:`Config.plan_inputs`)."""

    policy: TablePolicy  # the effective policy (class, weight, actions, engine, maintenance)
    target: int  # bytes per output file
    tolerance: int  # bytes: a partition whose MSE is under tolerance² is left alone
    min_input_files: int  # small files a partition waits for before it is merged


@dataclass(frozen=True, config=STRICT)
class ManagedConfig:
    namespaces: Namespaces = Field(
        default=(), description="Every table in these namespaces is managed."
    )
    tables: Tables = Field(default=(), description="... and these tables (namespace.table).")


def _without_none(section: Any) -> Any:
    """A key set to null takes its default."""
    if not isinstance(section, Mapping):
        return section
    return {k: v for k, v in section.items() if v is not None}


def _layer_policies(data: dict[str, Any]) -> None:
    """``defaults`` (with a tolerance of a third of its target unless set) under each table."""
    defaults = data.get("defaults", {})
    if not isinstance(defaults, Mapping):
        return
    defaults = dict(defaults)
    if "tolerance_bytes" not in defaults:
        target = defaults.get("target_file_size_bytes", DEFAULT_TARGET)
        if isinstance(target, int) and not isinstance(target, bool) and target > 0:
            defaults["tolerance_bytes"] = target // 3
    data["defaults"] = defaults
    tables = data.get("tables", {})
    if not isinstance(tables, Mapping):
        return
    inherited = {k: v for k, v in defaults.items() if k != "target_file_size_bytes"}
    layered: dict[Any, Any] = {}
    for ident, override in tables.items():
        if not is_table(ident):
            raise FieldProblem(f"has bad table identifier {show(ident)}", key="tables")
        override = _without_none(override if override is not None else {})
        if isinstance(override, Mapping):
            # the per-table target stays None unless set: the table's own property comes next
            merged = {**inherited, "target_file_size_bytes": None, **override}
            below, above = inherited.get("maintenance"), override.get("maintenance")
            if isinstance(below, Mapping) and isinstance(above, Mapping):
                merged["maintenance"] = {**below, **_without_none(above)}  # key by key
            override = merged
        layered[ident] = override
    data["tables"] = layered


@dataclass(frozen=True, config=STRICT)
class Config:
    catalog: CatalogConfig = Field(
        default_factory=CatalogConfig, description="The Iceberg catalog icefloe manages."
    )
    redis: RedisConfig = Field(default_factory=RedisConfig, description="The decider's state.")
    spark: SparkConfig = Field(default_factory=SparkConfig, description="Spark sessions and jobs.")
    defaults: TablePolicy = Field(
        default_factory=TablePolicy, description="Every managed table's policy."
    )
    managed: ManagedConfig = Field(
        default_factory=ManagedConfig, description="Which tables icefloe manages."
    )
    tables: Mapping[str, TablePolicy] = Field(
        default_factory=dict,
        description="Per-table overrides of any defaults key, by namespace.table.",
    )
    source: str = Field(default="<defaults>", description="The file read (set by the loader).")
    home: str = Field(
        default=str(PROJECT_ROOT), description="Where relative paths resolve (set by the loader)."
    )
    decider: DeciderSettings = Field(
        default_factory=DeciderSettings, description="The decider service and its actor pool."
    )
    history: HistoryConfig = Field(
        default_factory=HistoryConfig, description="The durable action history."
    )
    reads: ReadsConfig = Field(
        default_factory=ReadsConfig, description="Readers' scan reports and read statistics."
    )
    airflow: AirflowSettings = Field(
        default_factory=AirflowSettings, description="The Airflow DAGs' spark-submit runs."
    )

    @model_validator(mode="before")
    @classmethod
    def _shape(cls, raw: Any) -> Any:
        """From a YAML-shaped mapping: nulls dropped, ``defaults`` layered under tables."""
        if not isinstance(raw, Mapping):
            return raw  # keyword construction in code: validated field by field
        data = {
            k: v if k == "tables" else _without_none(v) for k, v in raw.items() if v is not None
        }
        spark = data.get("spark")
        if isinstance(spark, Mapping) and spark.get("executor_deps") == "":
            raise FieldProblem(
                "must be a non-empty string (leave it out for none), got ''",
                key="spark.executor_deps",
            )
        _layer_policies(data)
        return data

    def policy_for(
        self, table: str, table_properties: Mapping[str, str] | None = None
    ) -> TablePolicy:
        """The effective policy of ``table``: per-table override, table property, default."""
        override = self.tables.get(table)
        policy = override or self.defaults
        target = override.target_file_size_bytes if override else None
        if target is None and table_properties:
            raw = table_properties.get(TARGET_PROPERTY)
            if raw is not None and str(raw).isdigit() and int(raw) > 0:
                target = int(raw)
        default_target = self.defaults.target
        if target is None:
            target = default_target
        tolerance = policy.tolerance_bytes
        if tolerance == self.defaults.tolerance_bytes and target != default_target:
            # an inherited tolerance is relative: it scales with the table's own target
            tolerance = tolerance * target // default_target
        return dataclasses.replace(policy, target_file_size_bytes=target, tolerance_bytes=tolerance)

    def plan_inputs(
        self,
        table: str,
        table_properties: Mapping[str, str] | None = None,
        tolerance: int | None = None,
        min_input_files: int | None = None,
    ) -> PlanInputs:
        """The target, tolerance and ``min_input_files`` ``table`` is planned with, under
        :meth:`policy_for` (the one place ``plan``, ``optimize``, the decider and ``status``
        take them from). ``tolerance`` overrides the policy's (its ``min_input_files`` then
        2); ``min_input_files`` overrides both."""
        policy = self.policy_for(table, table_properties)
        tol = policy.tolerance_bytes if tolerance is None else tolerance
        min_files = min_input_files or (policy.min_input_files if tolerance is None else 2)
        return PlanInputs(policy, policy.target, tol, min_files)

    def secret_values(self) -> list[str]:
        """Every secret the config holds: URL passwords (Redis, the catalog, any property
        holding a URL) and the values of secret-named catalog properties."""
        values = [url_password(self.redis.url), url_password(self.catalog.uri)]
        for key, value in self.catalog.properties.items():
            values.append(value if is_secret_name(key) else url_password(value))
        return [v for v in values if v]

    def is_managed(self, table: str) -> bool:
        namespace = table.rsplit(".", 1)[0]
        return (
            table in self.managed.tables
            or table in self.tables
            or namespace in self.managed.namespaces
        )
