"""What an actor runs: the runners (one item, or a batch of a table's items) and what a
run's report says in an action's record.

A *runner* is ``(item, guard) -> report dict``, a *batch runner* ``(items, guard) ->``
:class:`BatchResult`; both are injected into :class:`icefloe.service.actor.loop.Actor` (tests pass
fakes). The production ones (:func:`spark_runners`) share one SparkSession: a data item
or a batch is ``icefloe.jobs.data.optimize.optimize_table`` over exactly its partitions (one plan,
one commit; then the table's manifests rewritten in the same lease when due), a table-level
maintenance item ``icefloe.jobs.maintenance.run.run_table_action`` (the procedure, verified).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from icefloe.base.catalog import load_catalog, load_table
from icefloe.base.config import Config
from icefloe.base.errors import OperationFailed, describe
from icefloe.base.partition_key import is_key
from icefloe.base.spark import build_spark
from icefloe.jobs.data.optimize import optimize_table
from icefloe.jobs.history.table import commit_facts
from icefloe.jobs.maintenance.due import assess
from icefloe.jobs.maintenance.run import run_table_action
from icefloe.jobs.rewrite.exact import Collaborators
from icefloe.jobs.rewrite.guard import NO_GUARD, WriteGuard
from icefloe.optimizer.actions import BY_NAME
from icefloe.optimizer.actions import TABLE_ACTIONS as TABLE_MAINTENANCE
from icefloe.optimizer.actions.rewrite_manifests import NAME as REWRITE_MANIFESTS
from icefloe.state.queue import REQUESTED, ActionItem

log = logging.getLogger("icefloe.actor")

Runner = Callable[[ActionItem, WriteGuard], dict[str, Any]]
"""Runs one item; tells the guard its new files before writing them
(``icefloe.jobs.rewrite.guard``)."""


@dataclass
class BatchResult:
    """What a batch run did: its report, and the items it could not do (item id → why),
    which are nacked and retried alone; every other item of the batch is acked."""

    report: dict[str, Any]
    failed: dict[str, str]


BatchRunner = Callable[[Sequence[ActionItem], WriteGuard], BatchResult]
"""Runs several items of one table and action together (one plan, one commit)."""


def batch_figures(result: dict[str, Any], items: int, seconds: float) -> dict[str, Any]:
    """A batch in figures: items, partitions rewritten, commits, bytes, seconds each."""
    parts = result.get("partitions") or []
    rewritten = sum(1 for p in parts if p.get("status") == "rewritten")
    commits = len(result.get("snapshot_ids") or [])
    return {
        "items": items,
        "partitions_rewritten": rewritten,
        "commits": commits,
        "partitions_per_commit": round(rewritten / commits, 1) if commits else 0,
        "bytes": int(result.get("bytes_rewritten") or 0),
        "seconds_per_partition": round(seconds / max(1, items), 3),
    }


def summary(result: dict[str, Any]) -> dict[str, Any]:
    """Before/after MSE and bytes from an ``OptimizeReport.to_dict()`` (or a fake's dict)."""
    parts = result.get("partitions") or []
    done = [p for p in parts if p.get("status") == "rewritten"]
    before = [p["mse_before"] for p in done]
    after = [p.get("actual_mse_after") for p in done if p.get("actual_mse_after") is not None]
    predicted = [p["predicted_mse_after"] for p in done if p.get("predicted_mse_after") is not None]
    engines = {e for p in done for e in str(p.get("engine") or "").split("+") if e}
    extra = {}
    if "verified" in result:  # a maintenance action: its counts and what was verified
        raw = result.get("result") or {}
        counts = {k: v for k, v in raw.items() if isinstance(v, int)}
        spec = BY_NAME.get(str(result.get("action")))
        kept = {k: raw[k] for k in (spec.history if spec else ()) if k in raw}  # its fields
        extra = {"procedure": counts | kept, "verified": result["verified"]}
    facts = {
        k: result[k] for k in ("manifests_before", "manifests_after", "rewrite_id") if k in result
    }
    return (
        extra
        | facts
        | {
            "partitions": [p.get("partition") for p in done],
            "keys": [p.get("key") for p in done],
            "files_added": int(result.get("files_added") or 0),
            "mse_before": result.get("mse_before", max(before, default=None)),
            "mse_after": result.get("mse_after", max(after, default=None)),
            # the plan's prediction beside what was measured (#46): MSE and new bytes
            "mse_predicted": max(predicted, default=None),
            "bytes_added": int(result.get("bytes_added") or 0),
            "bytes_added_predicted": int(result.get("predicted_bytes_added") or 0),
            "bytes_rewritten": int(result.get("bytes_rewritten") or 0),
            "files_rewritten": int(result.get("files_rewritten") or 0),
            "snapshot_ids": list(result.get("snapshot_ids") or []),
            "partitions_rewritten": len(done),
            "engine": "+".join(sorted(engines)),  # what wrote the new files: arrow, spark, both
        }
    )


def spark_runner(cfg: Config, spark: Any = None) -> Runner:
    """The production runner of one item (:func:`spark_runners`)."""
    return spark_runners(cfg, spark)[0]


def spark_runners(cfg: Config, spark: Any = None) -> tuple[Runner, BatchRunner]:
    """The production runners, on one SparkSession: ``icefloe.jobs.data.optimize.optimize_table``
    per data item, or per batch of a table's items (one plan, one commit, then its manifests
    rewritten in the same lease when that is due: :func:`_manifests_after`);
    ``icefloe.jobs.maintenance.run.run_table_action`` (the procedure, verified) per table-level
    maintenance item."""
    state: dict[str, Any] = {"spark": spark}

    def session() -> Any:
        if state["spark"] is None:
            state["spark"] = build_spark(cfg, app_name="icefloe-actor")
        return state["spark"]

    def run(item: ActionItem, guard: WriteGuard = NO_GUARD) -> dict[str, Any]:
        if item.action in TABLE_MAINTENANCE:
            if BY_NAME[item.action].recheck_due and item.reason != REQUESTED:
                if not _still_due(cfg, item.table, item.action):  # e.g. done after a batch
                    return {"partitions": [], "skipped": f"{item.action} no longer due"}
            return run_table_action(session(), cfg, item.table, item.action)
        if item.partition and not is_key(item.partition):
            # queued before typed keys: its ``day=1`` may name several partitions as one;
            # acked unrun (the decider rebuilds such stats by a full scan and queues anew)
            return {"partitions": [], "skipped": f"older partition text {item.partition!r}"}
        out = _optimize(session(), cfg, [item], guard)
        if out.get("partitions_failed"):
            # e.g. a commit that kept conflicting: nack, so the action is retried (or dead-
            # lettered with this reason) instead of acked as if the work were done
            failed = [p for p in out.get("partitions", []) if p.get("status") == "failed"]
            reasons = "; ".join(f"{p.get('partition')}: {p.get('reason')}" for p in failed[:3])
            raise OperationFailed(f"{out['partitions_failed']} partition(s) failed: {reasons}")
        return out

    def run_batch(items: Sequence[ActionItem], guard: WriteGuard = NO_GUARD) -> BatchResult:
        usable = [it for it in items if it.partition and is_key(it.partition)]
        out = _optimize(session(), cfg, usable, guard) if usable else {"partitions": []}
        why = {
            p.get("key"): f"{p.get('partition')}: {p.get('reason')}"
            for p in out.get("partitions", [])
            if p.get("status") == "failed"
        }
        failed = {it.id: why[it.partition] for it in usable if it.partition in why}
        if out.get("snapshot_ids"):
            out["maintenance"] = _manifests_after(session(), cfg, items[0].table)
        return BatchResult(out, failed)

    return run, run_batch


def _optimize(
    spark: Any, cfg: Config, items: Sequence[ActionItem], guard: WriteGuard
) -> dict[str, Any]:
    """``optimize_table`` over exactly the items' partitions (one table, one action)."""
    keys = [it.partition for it in items if it.partition]
    report = optimize_table(
        spark,
        cfg,
        items[0].table,
        keys=keys or None,
        action=items[0].action,
        collaborators=Collaborators(guard=guard),
        min_input_files=items[0].min_input_files,  # the decider's (2 after max_wait_hours)
    )
    out: dict[str, Any] = report.to_dict()
    if out.get("snapshot_ids"):  # for the action's record (the history): best effort
        try:
            table = load_table(load_catalog(cfg), items[0].table)
            out |= commit_facts(table, out.get("start_snapshot_id"), out["snapshot_ids"][-1])
        except Exception as e:
            log.warning("could not read %s's commit for its record: %s", items[0].table, e)
    return out


def _still_due(cfg: Config, name: str, action: str) -> bool:
    """Whether ``action`` is due on ``name`` now: its policy enables it and its rule holds
    (``ActionSpec.due``, on the table's metadata as it is now)."""
    table = load_table(load_catalog(cfg), name)
    policy = cfg.policy_for(name, table.properties)
    if not policy.enabled or action not in policy.actions:
        return False
    return bool(assess(table, policy, time.time(), {}, actions=(action,))[1])


def _manifests_after(spark: Any, cfg: Config, name: str) -> dict[str, Any] | None:
    """After a batch committed: the table's manifests rewritten in the same lease when
    they are due (one more round trip saved: the decider would queue it next); None when
    not due. Best effort: the batch is done whatever happens here."""
    try:
        if not _still_due(cfg, name, REWRITE_MANIFESTS):
            return None

        return run_table_action(spark, cfg, name, REWRITE_MANIFESTS)
    except Exception as e:  # the decider queues it as usual next pass
        log.warning("manifest rewrite after the batch of %s failed: %s", name, describe(e))
        return {"error": describe(e)}
