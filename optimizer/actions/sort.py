"""``sort``: a partition's files rewritten in the table's sort order -- its small files merged
in key order, or its overlapping files re-sorted when its clustering depth is over
``clustering_tolerance`` (:func:`icefloe.optimizer.verdict.layout_verdict`)."""

from icefloe.optimizer.actions.spec import PARTITION, ActionSpec

SPEC = ActionSpec(
    "sort",
    PARTITION,
    "rewrite a partition's files in the table's sort order",
    rewrites_data=True,
    layout=True,
    requestable=True,
    keys=("sort_order", "clustering_tolerance", "min_input_files"),
    history=("files_rewritten", "files_added", "bytes_rewritten", "depth_before", "depth_after"),
)
