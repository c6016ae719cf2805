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

from pydantic import model_validator
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
    Port,
    PositiveFloat,
    PositiveInt,
    Priority,
    RedisUrl,
    ScalarMap,
    ShardCount,
    Tables,
    TargetSize,
)
from icefloe.base.config.identifiers import is_table
from icefloe.base.config.maintenance_policy import MaintenancePolicy
from icefloe.base.config.messages import FieldProblem, show
from icefloe.base.config.paths import PROJECT_ROOT
from icefloe.base.config.validate import validate_section
from icefloe.base.redact import display_url, is_secret_name, url_password

DEFAULT_TARGET = 128 << 20  # 128 MiB
DEFAULT_SHARDS = 16  # decider.shards
DEFAULT_BATCH_BYTES = 16 << 30  # a table's batch: one commit per this much rewritten
DEFAULT_SPARK_CONF = {"spark.sql.shuffle.partitions": "8", "spark.ui.enabled": "false"}
TARGET_PROPERTY = "write.target-file-size-bytes"  # a table's own target (Iceberg's property)


@dataclass(frozen=True, config=STRICT)
class CatalogConfig:
    name: Identifier = "lake"  # the Spark catalog and the PyIceberg catalog share it
    type: CatalogType = "sql"
    uri: NonEmptyStr = "sqlite:///.lakehouse/catalog.db"
    warehouse: NonEmptyStr = "file:.lakehouse/warehouse"
    properties: ScalarMap = dataclasses.field(default_factory=dict)  # to Spark and PyIceberg


@dataclass(frozen=True, config=STRICT)
class RedisConfig:
    url: RedisUrl = "redis://127.0.0.1:6379/0"
    key_prefix: NonEmptyStr = "icefloe"
    cluster: Flag = False  # a Redis Cluster: ``url`` names any one node (db 0 only)

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
    master: NonEmptyStr = "local[*]"
    conf: ScalarMap = dataclasses.field(default_factory=lambda: dict(DEFAULT_SPARK_CONF))
    executor_deps: ArchivePath = ""  # the Arrow engine's archive for a cluster (``icefloe pack``)


@dataclass(frozen=True, config=STRICT)
class TablePolicy:
    """How one table is optimised.

    Target size precedence (see :meth:`Config.policy_for`): ``tables.<name>`` override, then
    the table's ``write.target-file-size-bytes`` property, then ``defaults``. In a config
    file, ``defaults.tolerance_bytes`` defaults to a third of ``defaults``' target."""

    target_file_size_bytes: TargetSize | None = DEFAULT_TARGET  # 1 TiB at most
    tolerance_bytes: NonNegativeInt = DEFAULT_TARGET // 3  # T/3: MSE < tolerance² is left alone
    min_input_files: MinInputFiles = 5  # a partition waits for this many small files
    max_wait_hours: PositiveFloat = 1.0  # ... or this long (from 2 small files), then merges
    priority: Priority = 1  # 0 is the highest class (1000 the lowest)
    weight: PositiveInt = 1
    actions: Actions = ("merge",)
    sort_order: Columns = ()
    zorder: Columns = ()  # z-order columns (the zorder action; two or more)
    # mean depth a sorted partition may reach: 1.25 opens about as many files as a full
    # re-sort at under half its bytes (bench/layout_bench.py; 2.0 opened 1.3x as many)
    clustering_tolerance: ClusteringDepth = 1.25
    enabled: Flag = True
    engine: Engine = "auto"  # the actors' data engine: auto (Arrow where exact) | spark
    batch_max_items: PositiveInt = 1000  # partitions an actor rewrites and commits at once
    batch_max_bytes: PositiveInt = DEFAULT_BATCH_BYTES  # ... and bytes (the first always)
    maintenance: MaintenancePolicy = dataclasses.field(default_factory=MaintenancePolicy)

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
    namespaces: Namespaces = ()  # every table in these namespaces is managed
    tables: Tables = ()  # and these tables


@dataclass(frozen=True, config=STRICT)
class HistoryConfig:
    """The durable action history (config section ``history:``): an Iceberg table in the
    managed catalog, created on first use and managed like the other tables."""

    enabled: Flag = True
    table: NonEmptyStr = "icefloe.action_history"
    flush_seconds: PositiveFloat = 60.0  # the leader appends what actors recorded this often
    flush_records: PositiveInt = 10_000  # at most this many records per commit

    @model_validator(mode="after")
    def _table_named(self) -> HistoryConfig:
        if not is_table(self.table):
            raise FieldProblem(
                f"must be a table identifier (namespace.name), got {show(self.table)}", key="table"
            )
        return self


@dataclass(frozen=True, config=STRICT)
class DeciderSettings:
    """The decider service and its actor pool (config section ``decider:``)."""

    poll_seconds: PositiveFloat = 10.0
    poll_budget_seconds: PositiveFloat = 0.5  # of a poll per step, between event batches
    lease_seconds: PositiveFloat = 300.0
    max_attempts: PositiveInt = 3
    actors_min: NonNegativeInt = 0
    actors_max: PositiveInt = 4
    backlog_per_actor: PositiveInt = 8
    ready_depth: NonNegativeInt = 8  # 0: enqueue only, never dispatch (benchmarks)
    aging_seconds: PositiveFloat = 3600.0
    quantum_bytes: PositiveInt = 1 << 30
    leader_ttl_seconds: PositiveFloat = 30.0  # the leader lease and each shard lease
    shards: ShardCount = DEFAULT_SHARDS  # tables split among live deciders
    claim_idle_ms: PositiveInt = 60_000
    backoff_initial_seconds: PositiveFloat = 1.0
    backoff_max_seconds: PositiveFloat = 60.0
    recent_cap: PositiveInt = 200
    metrics_port: Port = 0  # 0 = no endpoint

    @model_validator(mode="after")
    def _consistent(self) -> DeciderSettings:
        if self.actors_max < self.actors_min:
            raise FieldProblem(
                f"must be >= decider.actors_min ({self.actors_min}), got {self.actors_max}",
                key="actors_max",
            )
        if self.leader_ttl_seconds <= self.poll_seconds:
            raise FieldProblem(
                f"must exceed poll_seconds ({self.poll_seconds}), got {self.leader_ttl_seconds}",
                key="leader_ttl_seconds",
            )
        return self

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any] | None) -> DeciderSettings:
        """Validate a ``decider:`` config section; errors name the key and the value."""
        return validate_section(cls, raw, "decider")


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
    catalog: CatalogConfig = dataclasses.field(default_factory=CatalogConfig)
    redis: RedisConfig = dataclasses.field(default_factory=RedisConfig)
    spark: SparkConfig = dataclasses.field(default_factory=SparkConfig)
    defaults: TablePolicy = dataclasses.field(default_factory=TablePolicy)
    managed: ManagedConfig = dataclasses.field(default_factory=ManagedConfig)
    tables: Mapping[str, TablePolicy] = dataclasses.field(default_factory=dict)
    source: str = "<defaults>"
    home: str = str(PROJECT_ROOT)
    decider: DeciderSettings = dataclasses.field(default_factory=DeciderSettings)
    history: HistoryConfig = dataclasses.field(default_factory=HistoryConfig)
    airflow: AirflowSettings = dataclasses.field(default_factory=AirflowSettings)  # the DAGs' runs

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
