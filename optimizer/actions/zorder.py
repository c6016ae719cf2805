"""``zorder``: a partition's files rewritten along the Z-curve of the policy's ``zorder``
columns when their boxes overlap deeper than ``clustering_tolerance``."""

from icefloe.optimizer.actions.spec import PARTITION, ActionSpec

SPEC = ActionSpec(
    "zorder",
    PARTITION,
    "rewrite a partition's files along the Z-curve of the policy's zorder columns",
    rewrites_data=True,
    layout=True,
    requestable=True,
    keys=("zorder", "clustering_tolerance", "min_input_files"),
    history=("files_rewritten", "files_added", "bytes_rewritten", "depth_before", "depth_after"),
)
