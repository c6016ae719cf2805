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

from pydantic import model_validator
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

    # manifests: None = the table's commit.manifest.target-size-bytes, else Iceberg's 8 MiB
    manifest_target_bytes: PositiveInt | None = None
    manifest_tolerance_bytes: NonNegativeInt | None = None  # None: a third of the target
    min_manifests: PositiveInt = 32  # undersized manifests worth one rewrite
    # snapshots: expire those older than this, always keeping the newest retain_last
    snapshot_max_age_hours: PositiveFloat = 120.0
    retain_last: PositiveInt = 5
    expire_interval_hours: PositiveFloat = 1.0
    # orphan files: scan this often; delete only files older than orphan_min_age_hours
    orphan_interval_hours: PositiveFloat = 24.0
    orphan_min_age_hours: PositiveFloat = 72.0
    # delete files: compact a partition when they delete this share of its rows
    delete_ratio: Fraction = 0.1
    # tables allowed to have files under this table's location: orphan removal is held
    # while any other table overlaps it (icefloe.jobs.maintenance.sharing),
    # unless each such table is named here
    allow_shared_location: Tables = ()

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
    namespace: dict[str, Any] = {s.key: s.default for s in SETTINGS}
    namespace["__annotations__"] = {s.key: _KINDS[s.kind] for s in SETTINGS}
    namespace["__doc__"], namespace["__module__"] = base.__doc__, __name__
    return dataclass(frozen=True, config=STRICT)(type("MaintenancePolicy", (base,), namespace))


if TYPE_CHECKING:
    MaintenancePolicy = _Thresholds
else:
    MaintenancePolicy = _with_settings(_Thresholds)
