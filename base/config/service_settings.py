"""The service sections of the configuration: ``history:`` (the durable action history),
``reads:`` (what readers' scan reports are kept as) and ``decider:`` (the decider service and
its actor pool); :mod:`icefloe.base.config.model`
holds them in :class:`~icefloe.base.config.model.Config`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field, model_validator
from pydantic.dataclasses import dataclass

from icefloe.base.config.fields import (
    STRICT,
    Flag,
    NonEmptyStr,
    NonNegativeInt,
    Port,
    PositiveFloat,
    PositiveInt,
    ShardCount,
)
from icefloe.base.config.identifiers import is_table
from icefloe.base.config.messages import FieldProblem, show
from icefloe.base.config.validate import validate_section

DEFAULT_SHARDS = 16  # decider.shards


@dataclass(frozen=True, config=STRICT)
class HistoryConfig:
    """The durable action history (config section ``history:``): an Iceberg table in the
    managed catalog, created on first use and managed like the other tables."""

    enabled: Flag = Field(default=True, description="false: no action history table.")
    table: NonEmptyStr = Field(
        default="icefloe.action_history",
        description="The history table (namespace.table) in the managed catalog.",
    )
    flush_seconds: PositiveFloat = Field(
        default=60.0, description="The leader appends what actors recorded this often."
    )
    flush_records: PositiveInt = Field(
        default=10_000, description="At most this many records per commit."
    )

    @model_validator(mode="after")
    def _table_named(self) -> HistoryConfig:
        if not is_table(self.table):
            raise FieldProblem(
                f"must be a table identifier (namespace.name), got {show(self.table)}", key="table"
            )
        return self


@dataclass(frozen=True, config=STRICT)
class ReadsConfig:
    """Readers' scan reports (config section ``reads:``): ``dev.icefloe.iceberg.ReadReporter``
    in a reader's catalog, or icefloe's REST catalog server, appends them to a Redis stream;
    the decider folds them into each table's read statistics."""

    half_life_hours: PositiveFloat = Field(
        default=24.0,
        description="A scan's weight in the read statistics halves every this many hours.",
    )
    max_per_step: PositiveInt = Field(
        default=10_000, description="Scan reports the decider folds in per step at most."
    )
    stream_max_len: PositiveInt = Field(
        default=100_000,
        description="The reports stream's cap (the reporter's icefloe.reads.max-len).",
    )
    queue_size: PositiveInt = Field(
        default=10_000,
        description="Reports a reader holds for Redis at most before it drops them "
        "(the reporter's icefloe.reads.queue-size).",
    )


@dataclass(frozen=True, config=STRICT)
class DeciderSettings:
    """The decider service and its actor pool (config section ``decider:``)."""

    poll_seconds: PositiveFloat = Field(
        default=10.0, description="Every table is polled when no commit event came for this long."
    )
    poll_budget_seconds: PositiveFloat = Field(
        default=0.5, description="Seconds of polling per step, between batches of commit events."
    )
    lease_seconds: PositiveFloat = Field(
        default=300.0, description="An actor's lease on a dequeued item (renewed while it runs)."
    )
    max_attempts: PositiveInt = Field(
        default=3,
        description="Attempts before an item goes to the dead-letter set with its last error.",
    )
    actors_min: NonNegativeInt = Field(
        default=0, description="The fewest actors the pool asks for."
    )
    actors_max: PositiveInt = Field(default=4, description="The most actors the pool asks for.")
    backlog_per_actor: PositiveInt = Field(
        default=8, description="Queued items per actor the pool is sized by."
    )
    ready_depth: NonNegativeInt = Field(
        default=8,
        description="Items the fair dispatch keeps ready (0: enqueue only, never dispatch).",
    )
    aging_seconds: PositiveFloat = Field(
        default=3600.0,
        description="Aging of pending items: one enqueued this much earlier ranks as if it "
        "were worth twice as much.",
    )
    quantum_bytes: PositiveInt = Field(
        default=1 << 30, description="The deficit round robin's quantum, in bytes to rewrite."
    )
    leader_ttl_seconds: PositiveFloat = Field(
        default=30.0,
        description="The leader lease and each shard lease (must exceed poll_seconds).",
    )
    shards: ShardCount = Field(
        default=DEFAULT_SHARDS,
        description="Shards the tables are split into among live deciders (set it before the "
        "first decider starts).",
    )
    claim_idle_ms: PositiveInt = Field(
        default=60_000,
        description="A commit event unacked this long is claimed by another decider.",
    )
    backoff_initial_seconds: PositiveFloat = Field(
        default=1.0, description="The first wait after Redis or the catalog failed a step."
    )
    backoff_max_seconds: PositiveFloat = Field(default=60.0, description="... doubled up to this.")
    recent_cap: PositiveInt = Field(default=200, description="Recent actions kept for status.")
    metrics_port: Port = Field(
        default=0, description="The default of decide --metrics-port (0: no metrics endpoint)."
    )

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
