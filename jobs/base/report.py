"""What an action reports: per partition and for the whole table (``--json`` prints it)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from icefloe.base.partition_key import display_key
from icefloe.jobs.base.plan import PartitionPlan


@dataclass(frozen=True)
class PartitionReport:
    """What happened to one partition. MSEs in bytes²; ``prediction_error`` = actual -
    predicted MSE after; ``predicted_bytes_added``: what the plan predicted its new files
    hold (``bytes_added``: what they do)."""

    key: str  # the encoded PartitionKey (the partition's identity)
    spec_id: int
    status: str  # planned | rewritten | skipped | failed
    reason: str
    files: int
    bytes: int
    delete_files: int
    mse_before: float
    predicted_mse_after: float
    actual_mse_after: float | None = None
    prediction_error: float | None = None
    groups: int = 0
    files_rewritten: int = 0
    bytes_rewritten: int = 0
    files_added: int = 0
    bytes_added: int = 0
    delete_files_removed: int = 0
    rows: int = 0
    snapshot_id: int | None = None
    attempts: int = 0
    engine: str = ""  # arrow | spark | arrow+spark: what wrote the partition's new files
    predicted_bytes_added: int = 0

    @classmethod
    def from_plan(cls, p: PartitionPlan, dry_run: bool) -> PartitionReport:
        return cls(
            key=p.key,
            spec_id=p.spec_id,
            status=("planned" if dry_run else "pending") if p.groups else "skipped",
            reason=p.reason,
            files=len(p.paths),
            bytes=sum(p.sizes),
            delete_files=p.delete_files,
            mse_before=p.mse_before,
            predicted_mse_after=p.predicted_mse_after,
            groups=len(p.groups),
            files_rewritten=sum(len(g.paths) for g in p.groups),
            bytes_rewritten=sum(g.bytes for g in p.groups),
            predicted_bytes_added=sum(g.output_bytes for g in p.groups),
        )


@dataclass(frozen=True)
class OptimizeReport:
    """The result of one ``optimize_table`` call; ``to_dict()`` is its JSON form."""

    table: str
    action: str
    dry_run: bool
    target_file_size_bytes: int
    tolerance_bytes: int
    start_snapshot_id: int | None
    partitions_scanned: int
    partitions_skipped: int
    partitions_rewritten: int
    partitions_failed: int
    files_rewritten: int
    bytes_rewritten: int
    files_added: int
    bytes_added: int
    delete_files_removed: int
    rows_verified: int
    snapshot_ids: tuple[int, ...]
    prediction_error: float | None  # mean |actual - predicted| MSE, over target²
    expectations: dict[str, Any] | None
    seconds: float
    timings: dict[str, float] = field(default_factory=dict)  # seconds per phase
    partitions: tuple[PartitionReport, ...] = field(default_factory=tuple)
    # what the plan took a merged row to take, and from where (icefloe.optimizer.output_model)
    bytes_per_row: float | None = None
    bytes_per_row_source: str = ""
    predicted_bytes_added: int = 0  # of the rewritten partitions'; ``bytes_added``: measured

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON: each partition's ``key`` (its identity) and ``partition``
        (the key for people, ``day=2026-11-01``)."""
        out = asdict(self)
        for part in out["partitions"]:
            part["partition"] = display_key(part["key"])
        return out


def build_report(
    base: dict[str, Any],
    parts: list[PartitionReport],
    suite: Any,
    secs: float,
    target: int,
    timings: dict[str, float],
) -> OptimizeReport:
    done = [p for p in parts if p.status == "rewritten"]
    counted = done if not base["dry_run"] else [p for p in parts if p.status == "planned"]
    errors = [abs(p.prediction_error) for p in done if p.prediction_error is not None]
    return OptimizeReport(
        **base,
        partitions_scanned=len(parts),
        partitions_skipped=sum(p.status == "skipped" for p in parts),
        partitions_rewritten=len(done),
        partitions_failed=sum(p.status == "failed" for p in parts),
        files_rewritten=sum(p.files_rewritten for p in counted),
        bytes_rewritten=sum(p.bytes_rewritten for p in counted),
        files_added=sum(p.files_added for p in done),
        bytes_added=sum(p.bytes_added for p in done),
        predicted_bytes_added=sum(p.predicted_bytes_added for p in done),
        delete_files_removed=sum(p.delete_files_removed for p in done),
        rows_verified=sum(p.rows for p in done),
        snapshot_ids=tuple(dict.fromkeys(p.snapshot_id for p in done if p.snapshot_id is not None)),
        prediction_error=(sum(errors) / len(errors) / target**2) if errors else None,
        expectations=suite,
        seconds=round(secs, 3),
        timings={k: round(v, 3) for k, v in timings.items()},
        partitions=tuple(parts),
    )
