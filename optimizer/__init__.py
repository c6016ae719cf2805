"""Layer 6 of 6, the pure core: entropy stats, minimum-replacement planning, layout,
scheduling.

Standard library only; no Spark, Redis, PyIceberg or other icefloe imports (a
contract enforces it), no clocks, no I/O. Adapters pass data and ``now`` in.
"""

from icefloe.optimizer.binpack import first_fit_decreasing
from icefloe.optimizer.entropy import (
    PartitionStats,
    apply_delta,
    estimate,
    file_error,
    is_small,
    merge_estimate,
    merge_need,
    merge_stats,
    one_file_max,
    output_count,
    output_sse,
    predict_output_sizes,
    stats_from_sizes,
)
from icefloe.optimizer.fairqueue import (
    DeficitWeightedRoundRobin,
    FlowView,
    PriorityScheduler,
    Scheduler,
    WeightedRoundRobin,
    fair_priority_scheduler,
)
from icefloe.optimizer.layout import Depth, FileBounds, clustering_depth
from icefloe.optimizer.layoutplan import LayoutPlan, plan_layout
from icefloe.optimizer.linebreak import best_runs
from icefloe.optimizer.planner import (
    DEFAULT_TOLERANCE_FRACTION,
    NEAR_TARGET_FRACTION,
    Plan,
    default_tolerance,
    plan_partition,
)
from icefloe.optimizer.zorder import ordered_value, zorder_bytes, zorder_key

__all__ = [
    "DEFAULT_TOLERANCE_FRACTION",
    "NEAR_TARGET_FRACTION",
    "DeficitWeightedRoundRobin",
    "Depth",
    "FileBounds",
    "FlowView",
    "LayoutPlan",
    "PartitionStats",
    "Plan",
    "PriorityScheduler",
    "Scheduler",
    "WeightedRoundRobin",
    "apply_delta",
    "estimate",
    "merge_estimate",
    "merge_need",
    "best_runs",
    "clustering_depth",
    "default_tolerance",
    "fair_priority_scheduler",
    "file_error",
    "is_small",
    "first_fit_decreasing",
    "merge_stats",
    "ordered_value",
    "output_sse",
    "plan_layout",
    "plan_partition",
    "one_file_max",
    "output_count",
    "predict_output_sizes",
    "stats_from_sizes",
    "zorder_bytes",
    "zorder_key",
]
