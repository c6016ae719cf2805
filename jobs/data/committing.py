"""Committing an action's verified partitions: which are worth it, then one ``replace``
snapshot for all of them. After a conflict (a change to the table since the rewrite's
start touched some of them: an ad-hoc run's rewrite, a delete), the partitions the change
did not touch still go in one snapshot (:mod:`icefloe.jobs.rewrite.changes`), the others one by
one, so that only those that really conflict are re-planned.

A partition leaves the caller's ``untried`` set the moment it is handed to a commit: from
then on the committer (:class:`icefloe.jobs.rewrite.commit.Committer`) alone owns its outcome, so
a commit whose reply was lost keeps its files (they may be live) and no clean-up path of
the caller deletes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING

from icefloe.base.layoutspec import LayoutSpec
from icefloe.jobs.base.layout import depth_after, depth_allows
from icefloe.jobs.base.plan import PartitionPlan
from icefloe.jobs.base.report import PartitionReport
from icefloe.jobs.rewrite.changes import partition_of, since
from icefloe.jobs.rewrite.exact import CommitConflict
from icefloe.optimizer import stats_from_sizes

if TYPE_CHECKING:
    from icefloe.jobs.rewrite.exact import ExactRewrite, GroupResult


def worth_committing(sizes_before: Sequence[int], sse_after: int, target: int) -> bool:
    """Never waste a rewrite: commit only files that lower the partition's SSE.

    The planner predicts the output; a writer that rolls early (its size estimate is taken
    before compression) can still write files no better than their inputs, and committing
    those would churn the table forever (the decider would see the same entropy again).
    """
    return sse_after < stats_from_sizes(sizes_before, target).sse


@dataclass(frozen=True)
class Ready:
    """One partition's written groups that passed every check, waiting for its commit."""

    plan: PartitionPlan
    results: list[GroupResult]
    new_sizes: list[int]
    mse_after: float

    @property
    def key(self) -> tuple[int, str]:
        return (self.plan.spec_id, self.plan.key)

    def report(
        self, base: PartitionReport, snapshot_id: int, attempt: int, rewrite: ExactRewrite
    ) -> PartitionReport:
        p = self.plan
        replaced = [path for g in p.groups for path in g.paths]
        engines = sorted({r.engine for r in self.results})
        reason = (
            f"written by Spark: the Arrow engine failed ({rewrite.fallback})"
            if rewrite.fallback and "spark" in engines
            else f"written by Spark: {rewrite.spark_only}"
            if rewrite.spark_only and "spark" in engines
            else ""
        )
        return replace(
            base,
            status="rewritten",
            reason=reason,
            snapshot_id=snapshot_id,
            engine="+".join(engines),
            files_rewritten=len(replaced),
            bytes_rewritten=sum(g.bytes for g in p.groups),
            groups=len(p.groups),
            predicted_mse_after=p.predicted_mse_after,
            files_added=len(self.new_sizes),
            bytes_added=sum(self.new_sizes),
            delete_files_removed=len(rewrite.dangling_deletes(sorted(replaced))),
            rows=sum(r.input.rows for r in self.results),
            actual_mse_after=self.mse_after,
            prediction_error=self.mse_after - p.predicted_mse_after,
            attempts=attempt,
        )


def ready_to_commit(
    rewrite: ExactRewrite,
    p: PartitionPlan,
    mine: list[GroupResult],
    target: int,
    layout: LayoutSpec | None = None,
) -> Ready | str:
    """The partition's commit, or why not (its new files deleted): a merge must lower the
    partition's SSE, a re-sort (``p.layout``) its mean clustering depth, measured on the
    new files' written bounds; on a table with a layout, a merge must not take the depth
    past the tolerance either."""
    new_sizes = [s for r in mine for s in r.new_sizes]
    replaced = {path for g in p.groups for path in g.paths}
    kept = [s for path, s in zip(p.paths, p.sizes, strict=True) if path not in replaced]
    after = stats_from_sizes(kept + new_sizes, target)
    dangling = rewrite.dangling_deletes(sorted(replaced))
    if layout is not None and p.files and p.depth_before is not None and not dangling:
        # a re-sort must lower the depth; a merge in key order must not raise it past the
        # tolerance (a merged group's outputs span its hull)
        still = [f for f in p.files if f.id not in replaced]
        new_files = [f for r in mine for f in r.new_files]
        depth = depth_after(still, new_files, layout, rewrite.jvm)
        if not depth_allows(p.depth_before.mean, depth.mean, layout.tolerance, p.layout):
            rewrite.discard(mine)
            return f"depth {depth.mean:.2f}, was {p.depth_before.mean:.2f}"
    if not p.layout and not worth_committing(p.sizes, after.sse, target) and not dangling:
        rewrite.discard(mine)
        return "entropy not lowered"
    return Ready(p, mine, new_sizes, after.mse)


def commit_ready(
    rewrite: ExactRewrite,
    ready: list[Ready],
    untried: set[tuple[int, str]],
    reports: dict[tuple[int, str], PartitionReport],
    attempt: int,
) -> list[tuple[int, str]]:
    """Commit the ready partitions: together; after a conflict, those that the table's
    changes since the start did not touch together again, the others (all, when that
    commit conflicts too) one by one. A partition leaves ``untried`` when handed to a
    commit: the committer alone owns its outcome (an unknown one keeps the files, which
    may be live). Returns the conflicting partitions."""
    if len(ready) > 1:
        untried.difference_update(d.key for d in ready)
        if _commit_together(rewrite, ready, reports, attempt):
            return []
        untried.update(d.key for d in ready)  # a conflict, nothing deleted
        clear = _untouched(rewrite, ready)
        if 1 < len(clear) < len(ready):
            untried.difference_update(d.key for d in clear)
            if _commit_together(rewrite, clear, reports, attempt):
                committed = {d.key for d in clear}
                ready = [d for d in ready if d.key not in committed]
            else:
                untried.update(d.key for d in clear)
    conflicts = []
    for done in ready:  # one by one: a conflict then costs only its own partition
        untried.discard(done.key)
        try:
            snapshot_id = rewrite.commit(done.results)
        except CommitConflict:
            conflicts.append(done.key)
            continue
        reports[done.key] = done.report(reports[done.key], snapshot_id, attempt, rewrite)
    return conflicts


def _commit_together(
    rewrite: ExactRewrite,
    ready: list[Ready],
    reports: dict[tuple[int, str], PartitionReport],
    attempt: int,
) -> bool:
    """Every ready partition in one ``replace`` snapshot (the common case: one metadata
    write instead of one per partition). False on a conflict, with nothing deleted: the
    caller then commits partition by partition, so only the conflicting ones re-plan."""
    try:
        snapshot_id = rewrite.commit(
            [r for d in ready for r in d.results], discard_on_conflict=False
        )
    except CommitConflict:
        return False
    for done in ready:
        reports[done.key] = done.report(reports[done.key], snapshot_id, attempt, rewrite)
    return True


def _untouched(rewrite: ExactRewrite, ready: list[Ready]) -> list[Ready]:
    """The ready partitions that no commit since the rewrite's start touched
    (:func:`icefloe.jobs.rewrite.changes.since`); none when that cannot be told."""
    try:
        changes = since(rewrite.jvm, rewrite.table, rewrite.snapshot_id)
    except Exception:  # noqa: BLE001 - the table's history unreadable: one by one, as before
        return []
    if changes is None:
        return []
    out = []
    for done in ready:
        replaced = [path for g in done.plan.groups for path in g.paths]
        deletes = [str(d.location()) for d in rewrite.dangling_deletes(sorted(replaced))]
        where = partial(partition_of, rewrite.table, rewrite.scan.files[replaced[0]])
        if not changes.touch(replaced + deletes, where):
            out.append(done)
    return out
