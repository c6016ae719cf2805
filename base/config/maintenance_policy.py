"""The ``maintenance:`` policy: when the decider schedules a table's metadata maintenance.

Which actions run is the policy's ``actions`` list (``rewrite_manifests``,
``expire_snapshots``, ``remove_orphan_files``, ``compact_deletes`` beside ``merge`` and
``sort``); this section only says *when* (``icefloe.optimizer.maintenance_rules`` has the rules).
Every default is safe: snapshots younger than five days and the newest five are kept, orphan files
younger than three days are never touched, and both floors are hard
(``icefloe.jobs.maintenance.procedures.MIN_SNAPSHOT_AGE`` and ``MIN_ORPHAN_AGE``).

In a config file a table's ``maintenance`` keys are layered over ``defaults.maintenance``
key by key (a table that sets one key keeps the others' defaults).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import Field, model_validator
from pydantic.dataclasses import dataclass

from icefloe.base.config.fields import (
    STRICT,
    Columns,
    Fraction,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    Tables,
)
from icefloe.base.config.messages import FieldProblem
from icefloe.optimizer.actions import SETTINGS
from icefloe.optimizer.actions.spec import COLUMNS
from icefloe.optimizer.maintenance_rules import DEFAULT_MANIFEST_TARGET, MaintenanceRules

MANIFEST_TARGET_PROPERTY = "commit.manifest.target-size-bytes"
HOUR_MS = 3_600_000
MIN_SNAPSHOT_AGE_HOURS = 1.0  # icefloe.jobs.maintenance.procedures.MIN_SNAPSHOT_AGE
MIN_ORPHAN_AGE_HOURS = 24.0  # icefloe.jobs.maintenance.procedures.MIN_ORPHAN_AGE


@dataclass(frozen=True, config=STRICT)
class _Thresholds:
    """Thresholds of the maintenance actions (``defaults.maintenance``,
    ``tables.<name>.maintenance``); with every registered action's own settings
    (``icefloe.optimizer.actions``: :data:`MaintenancePolicy`)."""

    manifest_target_bytes: PositiveInt | None = Field(
        default=None,
        description="The manifests' target size (none: the table's "
        "commit.manifest.target-size-bytes, else Iceberg's 8 MiB).",
    )
    manifest_tolerance_bytes: NonNegativeInt | None = Field(
        default=None,
        description="rewrite_manifests is due once the manifests' MSE is over tolerance² "
        "(none: a third of the manifest target) ...",
    )
    min_manifests: PositiveInt = Field(
        default=32, description="... and at least this many manifests are undersized."
    )
    snapshot_max_age_hours: PositiveFloat = Field(
        default=120.0,
        description="expire_snapshots expires snapshots older than this (1 at least) ...",
    )
    retain_last: PositiveInt = Field(
        default=5, description="... always keeping the newest this many (and every branch and tag)."
    )
    expire_interval_hours: PositiveFloat = Field(
        default=1.0, description="At most one expiry a table this often."
    )
    orphan_interval_hours: PositiveFloat = Field(
        default=24.0,
        description="remove_orphan_files runs this often, from when the table was first seen.",
    )
    orphan_min_age_hours: PositiveFloat = Field(
        default=72.0,
        description="It deletes only files older than this (24 at least: a write in flight "
        "is never an orphan).",
    )
    delete_ratio: Fraction = Field(
        default=0.1,
        description="compact_deletes is due in a partition whose delete files delete this "
        "share of its data rows.",
    )
    allow_shared_location: Tables = Field(
        default=(),
        description="Other tables allowed to have files under this table's location: orphan "
        "removal is held while any table not named here overlaps it.",
    )

    @model_validator(mode="after")
    def _floors(self) -> _Thresholds:
        if self.snapshot_max_age_hours < MIN_SNAPSHOT_AGE_HOURS:
            raise FieldProblem(
                f"must be >= {MIN_SNAPSHOT_AGE_HOURS} (readers and time travel in flight), "
                f"got {self.snapshot_max_age_hours}",
                key="snapshot_max_age_hours",
            )
        if self.orphan_min_age_hours < MIN_ORPHAN_AGE_HOURS:
            raise FieldProblem(
                f"must be >= {MIN_ORPHAN_AGE_HOURS} (a write in flight is not an orphan), "
                f"got {self.orphan_min_age_hours}",
                key="orphan_min_age_hours",
            )
        return self

    def manifest_target(self, table_properties: Mapping[str, str] | None = None) -> int:
        """This policy's, else the table's ``commit.manifest.target-size-bytes``, else 8 MiB."""
        if self.manifest_target_bytes is not None:
            return self.manifest_target_bytes
        raw = (table_properties or {}).get(MANIFEST_TARGET_PROPERTY)
        if raw is not None and str(raw).isdigit() and int(raw) > 0:
            return int(raw)
        return DEFAULT_MANIFEST_TARGET

    def rules(self, manifest_target: int) -> MaintenanceRules:
        """The thresholds in bytes and milliseconds, for ``icefloe.optimizer.maintenance_rules``."""
        tolerance = self.manifest_tolerance_bytes
        return MaintenanceRules(
            manifest_tolerance=manifest_target // 3 if tolerance is None else tolerance,
            min_manifests=self.min_manifests,
            snapshot_max_age_ms=int(self.snapshot_max_age_hours * HOUR_MS),
            retain_last=self.retain_last,
            expire_interval_ms=int(self.expire_interval_hours * HOUR_MS),
            orphan_interval_ms=int(self.orphan_interval_hours * HOUR_MS),
            delete_ratio=self.delete_ratio,
            settings=self.settings(),
            columns=self.column_settings(),
        )

    def settings(self) -> dict[str, float]:
        """The registered actions' numeric settings (``icefloe.optimizer.actions.SETTINGS``), as
        set."""
        return {s.key: float(getattr(self, s.key)) for s in SETTINGS if s.kind != COLUMNS}

    def column_settings(self) -> dict[str, tuple[str, ...]]:
        """The registered actions' settings of column names, as set."""
        return {s.key: tuple(getattr(self, s.key)) for s in SETTINGS if s.kind == COLUMNS}


_KINDS: dict[str, Any] = {
    "fraction": Fraction,
    "hours": PositiveFloat,
    "count": PositiveInt,
    COLUMNS: Columns,
}


def _with_settings(base: type) -> type:
    """``base`` with one field per registered action setting (its key, its kind's strict
    type, its default): a new action's keys are validated like every other."""
    namespace: dict[str, Any] = {
        s.key: Field(default=s.default, description=s.doc) for s in SETTINGS
    }
    namespace["__annotations__"] = {s.key: _KINDS[s.kind] for s in SETTINGS}
    namespace["__doc__"], namespace["__module__"] = base.__doc__, __name__
    return dataclass(frozen=True, config=STRICT)(type("MaintenancePolicy", (base,), namespace))


if TYPE_CHECKING:
    MaintenancePolicy = _Thresholds
else:
    MaintenancePolicy = _with_settings(_Thresholds)
