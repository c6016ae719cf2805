"""``rewrite_manifests``: the manifests regrouped once their MSE is over tolerance² *and* at
least ``min_manifests`` are undersized -- one rewrite per that many commits, not one per
commit (a rewrite of two tiny manifests leaves one tiny manifest: nothing gained)."""

from __future__ import annotations

from icefloe.optimizer.actions.spec import TABLE, ActionSpec
from icefloe.optimizer.entropy import estimate
from icefloe.optimizer.maintenance_rules import MaintenanceRules, MetadataHealth, Need

NAME = "rewrite_manifests"


def due(
    health: MetadataHealth, rules: MaintenanceRules, now_ms: int, last_run_ms: int | None
) -> Need | None:
    m = health.manifests
    if m.undersized < max(2, rules.min_manifests) or not m.needs_work(rules.manifest_tolerance):
        return None
    cost, benefit = estimate(m, health.manifest_target)
    return Need(
        NAME,
        cost,
        max(benefit, 1.0),
        f"{m.undersized} of {m.n} manifests under {health.manifest_target} bytes "
        f"(mse {m.mse:.4g} >= tolerance²)",
    )


SPEC = ActionSpec(
    NAME,
    TABLE,
    "regroup a table's manifests by partition",
    keys=(
        "maintenance.manifest_target_bytes",
        "maintenance.manifest_tolerance_bytes",
        "maintenance.min_manifests",
    ),
    due=due,
    runner="icefloe.jobs.maintenance.runners:rewrite_manifests",
    history=("rewritten_manifests_count", "added_manifests_count"),
    recheck_due=True,
)
