"""``merge``: a partition's small files merged into files of the target size (FFD bin packing,
``icefloe.optimizer.planner``), decided by :func:`icefloe.optimizer.verdict.merge_verdict`."""

from icefloe.optimizer.actions.spec import PARTITION, ActionSpec

SPEC = ActionSpec(
    "merge",
    PARTITION,
    "merge a partition's small files into files of the target size",
    rewrites_data=True,
    requestable=True,
    keys=("target_file_size_bytes", "tolerance_bytes", "min_input_files", "max_wait_hours"),
    history=("files_rewritten", "files_added", "bytes_rewritten", "mse_before", "mse_after"),
)
