"""``compact_deletes``: a partition whose delete files delete ``delete_ratio`` of its rows or
more is rewritten without them (:func:`icefloe.optimizer.verdict.deletes_verdict`), by the table's
merge, sort or z-order."""

from icefloe.optimizer.actions.spec import PARTITION, ActionSpec

SPEC = ActionSpec(
    "compact_deletes",
    PARTITION,
    "rewrite a partition's data files without the rows its delete files delete",
    rewrites_data=True,
    keys=("maintenance.delete_ratio",),
    history=("files_rewritten", "files_added", "bytes_rewritten"),
)
