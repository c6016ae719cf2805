"""What a table's layout needs: one sort or z-order item per partition clustered too deep.

A table with a layout (:func:`icefloe.base.layoutspec.decided_layout`: the policy's
``zorder``, else ``sort`` with a sort order) has its partitions' data files' key bounds
kept by the decider (:mod:`icefloe.state.layout`, brought up to date with the rolling
stats by :func:`icefloe.state.rolling.scan.catch_up`). Each partition whose layout a
catch-up changed is planned with :meth:`~icefloe.base.layoutspec.LayoutSpec.plan` (the least
rewrite that brings its mean clustering depth within ``clustering_tolerance``); one whose
mean depth is over the tolerance, and that a rewrite helps, becomes one item of the
layout's action, valued by the mean depth removed times the files per byte
rewritten. Its id is the action's lane (``sort:<table>:<partition>``), so it coalesces
with the partition's merge when the policy's data action is a sort too. Beside the merges
of :mod:`icefloe.service.decider.needs`, not instead of them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from functools import partial
from typing import Any

from icefloe.base.config import TablePolicy
from icefloe.base.errors import UsageError
from icefloe.base.layoutspec import LayoutSpec, decided_layout, key_sizes
from icefloe.base.tablestats import current_partitions
from icefloe.base.verdicts import layout_of
from icefloe.optimizer.layout import Depth, FileBounds
from icefloe.optimizer.verdict import Rules, layout_verdict
from icefloe.service.decider.needs import Ordered, verdict_item
from icefloe.state.layout import LayoutStore, kept_and_missing, signature
from icefloe.state.layout.scan import rebuild
from icefloe.state.queue import ActionItem, PriorityQueue

log = logging.getLogger("icefloe.decider")


def table_layout(
    name: str, table: Any, policy: TablePolicy, seen: dict[str, str]
) -> LayoutSpec | None:
    """The layout the decider keeps on the table; None (logged) when the policy's columns
    do not fit the table: its merges and maintenance go on. ``seen``: :func:`new_layout`'s,
    forgets the table without a layout."""
    try:
        spec = decided_layout(table, policy)
    except UsageError as e:
        log.warning("%s: no layout kept: %s", name, e)
        spec = None
    if spec is None:
        seen.pop(name, None)
    return spec


def layout_items(
    name: str,
    rules: Rules,
    priority: int,
    spec: LayoutSpec,
    files_by_partition: Mapping[str, Sequence[FileBounds[str]]],
    now: float,
    measured: dict[str, Depth] | None = None,
    settled: frozenset[str] = frozenset(),
) -> list[ActionItem]:
    """One item per partition whose layout verdict
    (:func:`icefloe.optimizer.verdict.layout_verdict`) is to act: clustered deeper than the
    tolerance, and a rewrite brings it down (cost: the plan's bytes; benefit: the depth excess
    removed). ``measured``: gets each partition's depth. ``settled``: partitions only icefloe's own
    rewrites changed since they were last decided (measured, never queued: their layout is what a
    rewrite of the same rows makes, and re-planning it would churn)."""
    items = []
    for key, files in sorted(files_by_partition.items()):
        layout = layout_of(spec, files, rules.target, settled=key in settled)
        if measured is not None:
            measured[key] = layout.before
        verdict = layout_verdict(rules, layout)
        if verdict.action is None:
            continue
        # the same item as the partition's sorted merge: its floor too
        floor = rules.min_input_files
        items.append(verdict_item(name, key, verdict, priority, now, spec.action, floor))
    return items


def enqueue_layout(
    queue: PriorityQueue,
    layouts: LayoutStore,
    name: str,
    rules: Rules,
    priority: int,
    spec: LayoutSpec,
    keys: Sequence[str] | None,
    now: float,
    read: KeptRead | None = None,
    settled: frozenset[str] = frozenset(),
) -> list[int]:
    """The layout items of ``keys`` (None: every partition) of ``name``, in one pipelined
    enqueue; the outcomes (1 new, 0 coalesced). The depths measured are kept for
    ``status``. ``read``: the kept bounds already read this pass (:func:`kept_read`).
    ``settled``: :func:`layout_items`'."""
    if keys is not None and not keys:
        return []
    measured: dict[str, Depth] = {}
    if read is None:
        read = kept_read(layouts, name, keys)
    generation, kept = read
    files = kept if keys is None else {k: kept[k] for k in keys if k in kept}
    items = layout_items(name, rules, priority, spec, files, now, measured, settled)
    kept_settled = settled & measured.keys()
    layouts.save_depths(name, signature(spec), measured, generation, kept_settled)
    for item in items:
        log.info("%s: %s %s (%s)", name, item.action, item.partition, item.reason)
    return list(queue.enqueue_many(items, now)) if items else []


KeptRead = tuple[int, Mapping[str, Sequence[FileBounds[str]]]]
"""A table's layout generation, then its partitions' kept files (:func:`kept_read`)."""


def kept_read(layouts: LayoutStore, name: str, keys: Iterable[str] | None) -> KeptRead:
    """The layout's generation, read before the files of ``keys`` (None: every partition):
    depths measured on them are kept only if no update came between."""
    generation = layouts.generation(name)
    return generation, layouts.files(name, None if keys is None else sorted(keys))


def ordered_sizes(
    files_by_partition: Mapping[str, Sequence[FileBounds[str]]],
    spec: LayoutSpec,
    keys: Sequence[str],
) -> dict[str, list[int]]:
    """Each of ``keys``' data file sizes in the key order the actor merges them in
    (``icefloe.base.layoutspec.key_sizes``: only neighbours merge, so a table with a layout
    is merged only where its ordered plan finds a run; those without files kept: left
    out)."""
    out = {}
    for key in keys:
        files = files_by_partition.get(key)
        if files:
            out[key] = key_sizes(files, spec.corner_columns)
    return out


def ordered_of(layouts: LayoutStore, name: str, spec: LayoutSpec | None) -> Ordered | None:
    """:func:`ordered_sizes` of the table read from the store when asked, for
    ``icefloe.service.decider.needs`` (None: no layout)."""
    if spec is None:
        return None
    return lambda keys: ordered_sizes(layouts.files(name, keys), spec, keys)


def pass_reads(
    layouts: LayoutStore, name: str, spec: LayoutSpec | None, keys: Iterable[str]
) -> tuple[Ordered | None, KeptRead | None]:
    """One read of ``keys``' kept bounds for a catch-up's merges (their key order) and its
    layout items (their depths); (None, None) without a layout."""
    if spec is None:
        return None, None
    read = kept_read(layouts, name, keys)
    return partial(ordered_sizes, read[1], spec), read


def keep_missing_depths(layouts: LayoutStore, name: str, spec: LayoutSpec) -> None:
    """Measure and keep the depths of the partitions that have none kept (a layout an older
    icefloe built, or a pass that stopped between an update and its measure), so that
    ``status`` need not measure them on every call. Enqueues nothing."""
    generation = layouts.generation(name)
    _, measured = kept_and_missing(layouts, name, spec.corner_columns)
    if measured:
        layouts.save_depths(name, signature(spec), measured, generation)


def new_layout(
    queue: PriorityQueue,
    layouts: LayoutStore,
    name: str,
    table: Any,
    rules: Rules,
    priority: int,
    spec: LayoutSpec,
    now: float,
    seen: dict[str, str],
    everything: bool = False,
) -> list[int]:
    """For a table whose stats are current: when its stored layout is not of ``spec`` (its
    policy changed with no snapshot since, or a pass stopped before rebuilding it), rebuild
    it from the current files and decide its partitions; the enqueue outcomes.
    ``everything``: decide every partition anyway (the pass that applied the last snapshot
    stopped before enqueueing). ``seen``: the signatures this process knows stored (no read
    then: a poll of an unchanged table costs nothing here)."""
    sig = signature(spec)
    keys: list[str] | None = None  # every partition
    if seen.get(name) != sig and layouts.signature(name) != sig:
        log.info("%s: layout %s built from the current files", name, sig)
        keys = sorted(rebuild(layouts, name, spec, current_partitions(table, layout=spec)))
    elif not everything:
        keys = []
        if seen.get(name) != sig:  # first seen by this process: measure what none kept
            keep_missing_depths(layouts, name, spec)
    seen[name] = sig
    return enqueue_layout(queue, layouts, name, rules, priority, spec, keys, now)
