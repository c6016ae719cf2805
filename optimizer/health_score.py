"""A table's health score: 0 to 100, and which of its parts cost how many points.

100 is a table the decider has nothing to do on; every way a table degrades costs points
up to that way's weight, measured against the table's own policy (a table with a loose
tolerance is not marked down for what its policy allows). Each component maps one metric
``x`` to a penalty in ``[0, weight]``, the weights summing to 100:

* ``data_files`` (40): ``x`` = sqrt(removable MSE) / target size, where the removable MSE
  is what merging each partition's small files would take off its file-size MSE
  (:func:`icefloe.optimizer.merge_estimate`, the decider's own estimate), averaged over the data
  files (:func:`removable_mse`); healthy at tolerance / target (the decider leaves the table
  alone), full at 1. A partition whose one small file has nothing to merge with costs
  nothing: there is nothing to do about it;
* ``deletes`` (25): ``x`` = rows the delete files delete per data row; healthy at the
  policy's ``delete_ratio`` (where ``compact_deletes`` starts), full at 3 x that;
* ``manifests`` (20): ``x`` = undersized manifests; healthy at ``min_manifests``, full at
  4 x that, times a size factor (below);
* ``snapshots`` (15): ``x`` = age of the oldest snapshot, once there are more than
  ``retain_last``; healthy at ``snapshot_max_age`` + one expire interval (the decider's
  grace), full one more ``snapshot_max_age`` later.

A penalty is ``weight * ramp(x, healthy, full)``, where ``ramp`` is
``clamp((x - healthy) / (full - healthy), 0, 1)`` (when ``full <= healthy``: 0 up to
``healthy``, 1 above it). The manifests' count ramp is multiplied by a size ramp,
``ramp(manifest RMSE / manifest target, manifest tolerance / manifest target, 1)``: many
small manifests cost points, many nearly full ones hardly any. The data files' RMSE is over
data files' removable MSE is in the same units as the entropy the decider compares with
``tolerance²``.

``score = 100 - Σ penalties``, rounded to one decimal. Each ramp is non-decreasing in its
metric, so a worse table never scores higher; a table with no small files, no deletes,
no backlog of small manifests and its snapshots expired on time scores 100.
The snapshot part scores how overdue expiry is, not the count itself: the policy bounds
snapshots by age and ``retain_last``, and a table committing every minute legitimately
keeps thousands.

Pure: no clocks (ages are passed in), no I/O. ``docs/health-score.md`` has worked examples.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from icefloe.optimizer.entropy import PartitionStats, merge_estimate
from icefloe.optimizer.maintenance_rules import MaintenanceRules, MetadataHealth

WEIGHTS: Mapping[str, float] = {
    "data_files": 40.0,
    "deletes": 25.0,
    "manifests": 20.0,
    "snapshots": 15.0,
}
DELETES_FULL = 3.0  # x the policy's delete_ratio
MANIFESTS_FULL = 4.0  # x the policy's min_manifests


@dataclass(frozen=True)
class HealthInputs:
    """What a table's stats and metadata health say of it, beside its policy's thresholds.

    Sizes in bytes (MSEs in bytes²), times in milliseconds."""

    # data files: the pooled MSE of the current data files against the policy's target
    data_mse: float
    target_bytes: int
    tolerance_bytes: int
    # delete files: rows they delete per data row; the policy's compaction ratio
    delete_ratio: float
    delete_ratio_threshold: float
    # manifests of the current snapshot against the manifest target
    manifests_undersized: int
    manifest_mse: float
    manifest_target: int
    manifest_tolerance: int
    min_manifests: int
    # snapshots: how many, the oldest one's age (None: no snapshot), the expiry policy
    snapshots: int
    oldest_snapshot_age_ms: int | None
    retain_last: int
    snapshot_max_age_ms: int
    expire_interval_ms: int

    def __post_init__(self) -> None:
        for name in ("target_bytes", "manifest_target", "snapshot_max_age_ms"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")
        for name in (
            "data_mse",
            "tolerance_bytes",
            "delete_ratio",
            "delete_ratio_threshold",
            "manifests_undersized",
            "manifest_mse",
            "manifest_tolerance",
            "min_manifests",
            "snapshots",
            "retain_last",
            "expire_interval_ms",
        ):
            value = getattr(self, name)
            if not value >= 0:  # also rejects NaN
                raise ValueError(f"{name} must be >= 0, got {value}")

    @classmethod
    def of(
        cls,
        data_mse: float,
        target_bytes: int,
        tolerance_bytes: int,
        health: MetadataHealth,
        rules: MaintenanceRules,
        now_ms: int,
    ) -> HealthInputs:
        """From a table's removable data-file MSE (:func:`removable_mse` of its partitions'
        stats), its :class:`MetadataHealth` and resolved :class:`MaintenanceRules`, at
        ``now_ms``."""
        oldest = health.oldest_snapshot_ms
        return cls(
            data_mse=data_mse,
            target_bytes=target_bytes,
            tolerance_bytes=tolerance_bytes,
            delete_ratio=health.delete_ratio,
            delete_ratio_threshold=rules.delete_ratio,
            manifests_undersized=health.manifests.undersized,
            manifest_mse=health.manifests.mse,
            manifest_target=health.manifest_target,
            manifest_tolerance=rules.manifest_tolerance,
            min_manifests=rules.min_manifests,
            snapshots=health.snapshots,
            oldest_snapshot_age_ms=None if oldest is None else max(0, now_ms - oldest),
            retain_last=rules.retain_last,
            snapshot_max_age_ms=rules.snapshot_max_age_ms,
            expire_interval_ms=rules.expire_interval_ms,
        )


@dataclass(frozen=True)
class Score:
    """``total`` in [0, 100] (one decimal); ``components``: each part's penalty in points
    (one decimal), keyed as :data:`WEIGHTS`."""

    total: float
    components: Mapping[str, float] = field(default_factory=dict)

    @property
    def worst(self) -> str | None:
        """The component that costs the most points, None for a perfect score."""
        name = max(self.components, key=lambda k: self.components[k], default=None)
        return name if name is not None and self.components[name] > 0 else None

    def to_dict(self) -> dict[str, object]:
        return {"score": self.total, "penalties": dict(self.components), "worst": self.worst}


def removable_mse(parts: Iterable[PartitionStats], target: int) -> float:
    """The file-size MSE that merging each partition's small files would remove, averaged
    over the table's data files: ``Σ n_p · reduction_p / Σ n_p`` (``reduction_p`` from
    :func:`icefloe.optimizer.merge_estimate`); 0 for a table with nothing to merge."""
    files = 0
    removed = 0.0
    for p in parts:
        files += p.n
        removed += p.n * merge_estimate(p, target)[1]
    return removed / files if files else 0.0


def ramp(x: float, healthy: float, full: float) -> float:
    """0 at or below ``healthy``, 1 at or above ``full``, linear between."""
    if x <= healthy:
        return 0.0
    if x >= full:
        return 1.0
    return (x - healthy) / (full - healthy)


def _data_files(i: HealthInputs) -> float:
    return ramp(math.sqrt(i.data_mse) / i.target_bytes, i.tolerance_bytes / i.target_bytes, 1.0)


def _deletes(i: HealthInputs) -> float:
    threshold = i.delete_ratio_threshold
    return ramp(i.delete_ratio, threshold, DELETES_FULL * threshold)


def _manifests(i: HealthInputs) -> float:
    count = ramp(i.manifests_undersized, i.min_manifests, MANIFESTS_FULL * i.min_manifests)
    t = i.manifest_target
    return count * ramp(math.sqrt(i.manifest_mse) / t, i.manifest_tolerance / t, 1.0)


def _snapshots(i: HealthInputs) -> float:
    if i.oldest_snapshot_age_ms is None or i.snapshots <= i.retain_last:
        return 0.0
    healthy = i.snapshot_max_age_ms + i.expire_interval_ms
    return ramp(i.oldest_snapshot_age_ms, healthy, healthy + i.snapshot_max_age_ms)


_PARTS = {
    "data_files": _data_files,
    "deletes": _deletes,
    "manifests": _manifests,
    "snapshots": _snapshots,
}


def steady_ages(inputs: HealthInputs) -> tuple[int | None, int | None]:
    """The oldest snapshot's ages (ms, both ends included; None: unbounded) over which
    :func:`health_score` of ``inputs`` stays the same as the snapshot ages: nothing else in
    it ages, and the snapshot part is flat up to its healthy age and from its full one.
    ``(None, None)``: the score does not age at all; ``(age, age)``: it changes with every
    millisecond (the snapshot part is on its ramp)."""
    age = inputs.oldest_snapshot_age_ms
    if age is None or inputs.snapshots <= inputs.retain_last:
        return (None, None)
    healthy = inputs.snapshot_max_age_ms + inputs.expire_interval_ms
    full = healthy + inputs.snapshot_max_age_ms
    if age <= healthy:
        return (None, healthy)
    return (full, None) if age >= full else (age, age)


def health_score(inputs: HealthInputs) -> Score:
    """The table's score and each component's penalty (see the module's formula)."""
    penalties = {name: WEIGHTS[name] * part(inputs) for name, part in _PARTS.items()}
    total = min(100.0, max(0.0, 100.0 - sum(penalties.values())))
    return Score(round(total, 1), {k: round(v, 1) for k, v in penalties.items()})


def rank_worst(scores: Mapping[str, Score], n: int | None = None) -> list[tuple[str, Score]]:
    """``(table, score)`` worst first (lowest total; ties by table name), the first ``n``."""
    if n is not None and n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    ranked = sorted(scores.items(), key=lambda kv: (kv[1].total, kv[0]))
    return ranked if n is None else ranked[:n]
