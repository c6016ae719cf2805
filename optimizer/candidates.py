"""Where merge candidates come from: FFD bins, spill groups and Knuth-Plass runs.

A candidate is a group of file indices with what merging it would do under the output
model (``predict_output_sizes``): the bytes it reads, the bytes it writes, its SSE gain
(inputs' Σ e² minus outputs' Σ e²) and its output file count. The planner decides which
candidates to do.

What a merge writes is not what it reads: merged rows compress better than many small
files of them (one dictionary and one set of pages instead of many). Every function here
takes ``merged``, each file's bytes once merged (:mod:`icefloe.optimizer.output_model`; default:
its size), and packs, balances and predicts outputs by it, while a file's own error and
the bytes a group reads come from its size.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from operator import mul

from icefloe.optimizer.binpack import ffd_packing, lpt_spread
from icefloe.optimizer.entropy import is_short, one_file_max, output_count, output_sse
from icefloe.optimizer.linebreak import best_runs

SPILL_GROUP_TARGETS = 32
"""A spill group rewrites at most this many targets' worth of bytes (16 GiB at 512 MiB):
one actor task stays bounded, and the essential plan can take spill work piecemeal."""

_SPILL_TRIM_PASSES = 4


@dataclass(frozen=True, slots=True)
class Group:
    """Files to merge (sorted indices) and the predicted effect of merging them."""

    members: tuple[int, ...]
    total: int  # bytes the group writes (its files' merged bytes)
    gain: int  # SSE of the inputs minus SSE of the predicted outputs
    outputs: int
    read: int  # bytes the group reads (its files' sizes): the bytes it rewrites

    @property
    def removed(self) -> int:
        return len(self.members) - self.outputs


def make_group(
    members: Sequence[int],
    sizes: Sequence[int],
    target: int,
    merged: Sequence[int] | None = None,
) -> Group:
    """Evaluate merging ``members`` under the output model (:func:`output_count` files of
    even size, of their ``merged`` bytes)."""
    written = sizes if merged is None else merged
    total = read = before = biggest = 0
    for i in members:
        s = sizes[i]
        read += s
        total += written[i]
        biggest = max(biggest, s)
        if s < target:
            e = target - s
            before += e * e
    if merged is not None:  # never less than its largest input (output_model.group_bytes)
        total = max(total, biggest)
    outputs = output_count(total, target)
    gain = before - output_sse(total, target)
    return Group(tuple(sorted(members)), total, gain, outputs, read)


def spill_group(
    lone: list[int], sizes: Sequence[int], target: int, merged: Sequence[int] | None = None
) -> Group | None:
    """One group of the files FFD left alone, trimmed while trimming helps; None unless it
    lowers the SSE and writes fewer files than it reads (even outputs would lower the SSE
    of two files rewritten as two: churn)."""
    written = sizes if merged is None else merged
    members = sorted(lone, key=sizes.__getitem__)
    if len(members) < 2:
        return None
    group = make_group(members, sizes, target, merged)
    for _ in range(_SPILL_TRIM_PASSES):
        if len(members) <= 2:
            break
        best, best_gain, seen = -1, group.gain, set()
        for pos, i in enumerate(members):
            s, w = sizes[i], written[i]
            if (s, w) in seen:
                continue
            seen.add((s, w))
            if output_count(group.total - w, target) >= len(members) - 1:
                continue  # the rest would be rewritten into as many files: churn
            e = target - s
            gain = (
                group.gain
                - e * e
                + output_sse(group.total, target)
                - output_sse(group.total - w, target)
            )
            if gain > best_gain:
                best, best_gain = pos, gain
        if best < 0:
            break
        members.pop(best)
        group = make_group(members, sizes, target, merged)
    return group if group.gain > 0 and group.removed > 0 else None


def ffd_groups(
    movable: Sequence[int],
    sizes: Sequence[int],
    target: int,
    merged: Sequence[int] | None = None,
) -> tuple[list[Group], list[int]]:
    """FFD bins (of ``merged`` bytes) of 2+ files as groups, and the files left alone in
    their bins."""
    if merged is not None:
        packing = ffd_packing(merged, target, movable)
        lone = [b[0] for b in packing.bins if len(b) < 2]
        return [make_group(b, sizes, target, merged) for b in packing.bins if len(b) >= 2], lone
    packing = ffd_packing(sizes, target, movable)
    groups: list[Group] = []
    lone = []
    full = target * target
    for b, total, square in zip(packing.bins, packing.loads, packing.squares, strict=True):
        if len(b) >= 2:  # make_group's Σ (T - s)², expanded: every packed s is <= T
            before = len(b) * full - 2 * target * total + square
            b.sort()
            members = tuple(b)
            gain = before - output_sse(total, target)
            groups.append(Group(members, total, gain, output_count(total, target), total))
        else:
            lone.append(b[0])
    return groups, lone


def candidate_groups(
    sizes: Sequence[int],
    target: int,
    limit: float,
    preserve_order: bool,
    merged: Sequence[int] | None = None,
) -> list[Group]:
    """Every candidate group that lowers the SSE; files ``>= limit`` are never included.

    Unordered: FFD bins of 2+ files, then spill groups over the files FFD left alone.
    Ordered: Knuth-Plass runs of 2+ consecutive files (of their merged bytes; a file
    ``>= limit`` stays a barrier).
    """
    if preserve_order:
        weights = (
            sizes
            if merged is None
            else [s if s >= limit else min(w, s) for s, w in zip(sizes, merged, strict=True)]
        )
        runs = best_runs(weights, target, limit=math.ceil(limit))
        return [make_group(range(a, b), sizes, target, merged) for a, b in runs if b - a >= 2]
    movable = [i for i, s in enumerate(sizes) if s < limit]
    groups, lone = ffd_groups(movable, sizes, target, merged)
    lone.sort(key=sizes.__getitem__)
    chunk: list[int] = []
    chunk_bytes = 0
    for k, i in enumerate(lone):  # spill groups of at most SPILL_GROUP_TARGETS · T bytes
        chunk.append(i)
        chunk_bytes += sizes[i]
        last = k + 1 == len(lone)
        if last or chunk_bytes + sizes[lone[k + 1]] > SPILL_GROUP_TARGETS * target:
            spill = spill_group(chunk, sizes, target, merged)
            if spill is not None:
                groups.append(spill)
            chunk, chunk_bytes = [], 0
    return [g for g in groups if g.gain > 0]


def balanced(
    groups: Sequence[Group],
    sizes: Sequence[int],
    target: int,
    fewer: bool = True,
    merged: Sequence[int] | None = None,
) -> list[Group]:
    """The same files in as few one-output groups as they fit, with their loads evened out.

    FFD fills bins of ``T`` one after another: ``k`` full bins and a remainder. For a fixed
    set of files in ``m`` outputs, ``Σ (T - L_j)²`` is smallest when the loads ``L_j`` are
    equal (``Σ L_j`` is fixed, so only ``Σ L_j²`` varies), e.g. 1.5·T of small files as
    0.75 + 0.75 instead of 1.0 + 0.5 halves the SSE; and it falls as ``m`` falls, down to
    files of ``T`` and more, which carry no error. A file holds up to 1.1·T
    (:func:`one_file_max`), as Iceberg folds a remainder into its other outputs: 5.28·T of
    small files are five files of 1.06·T, not five of ``T`` and one of 0.28·T that is
    small again, nor six of 0.88·T.

    The one-output groups' files are spread by LPT over the fewest bins that could hold them
    (``ceil(Σ L / one_file_max)``), then one more, then as many as there were (only the last
    when not ``fewer``); the first spread is kept whose every bin is still one output file
    with 2+ files, whose SSE is lower, and that leaves no more outputs under 0.8·T
    (:func:`is_short`) than the bins did: 1.46·T as 0.73 + 0.73·T has the lower SSE now,
    but both files are small and merged again with the next small files, where T + 0.46·T
    leaves only 0.46·T to merge again. Same files rewritten, fewer or as many files
    after. Groups with several outputs are left as they are. A spread is judged from the
    sorted sizes alone (``lpt_spread``: LPT's bins do not depend on which of equal files is
    which), and the files are dealt out into groups only once one is kept.
    """
    bins = [g for g in groups if g.outputs == 1]
    if len(bins) < 2:
        return list(groups)
    written = sizes if merged is None else merged
    heaviest = [written[i] for g in bins for i in g.members]
    heaviest.sort(reverse=True)
    total = sum(heaviest)
    if merged is None and heaviest[0] <= target:  # Σ (T - s)², expanded
        squares = sum(map(mul, heaviest, heaviest))
        before = len(heaviest) * target * target - 2 * target * total + squares
    else:
        own = (sizes[i] for g in bins for i in g.members)
        before = sum((target - s) ** 2 for s in own if s < target)
    most = one_file_max(target)
    fewest = -(-total // most)
    short = sum(is_short(g.total, target) for g in bins)
    for count in sorted({fewest, fewest + 1, len(bins)} if fewer else {len(bins)}):
        if count > len(bins) or count * 2 > len(heaviest):
            continue
        spread = lpt_spread(heaviest, count, most)
        if spread is None or min(spread.counts) < 2 or 0 in spread.loads:
            continue  # a bin past one file, a lone file, or a bin with no output
        if sum(is_short(x, target) for x in spread.loads) > short:
            continue  # more outputs near the small line than the bins had: merged again
        gain = before - sum(output_sse(x, target) for x in spread.loads)
        if gain <= sum(g.gain for g in bins):
            continue
        members = [i for g in bins for i in g.members]
        dealt = spread.deal(sorted(members, key=written.__getitem__, reverse=True))
        kept = [make_group(b, sizes, target, merged) for b in dealt]
        return [g for g in groups if g.outputs != 1] + kept
    return list(groups)


def absorbed(
    groups: Sequence[Group],
    sizes: Sequence[int],
    target: int,
    limit: float,
    candidates: Sequence[Group],
    merged: Sequence[int] | None = None,
) -> list[Group]:
    """``groups`` with a small file left out of them folded into each one-output group it
    would take from under the target to one file of ``T`` up to 1.1·T (:func:`output_count`:
    Iceberg's fold of a remainder).

    FFD fills bins of ``T``: 0.54 and 0.27·T share one, and the 0.21·T file that would take
    it past ``T`` is left alone. Their merge writes 0.81·T, small again once compressed,
    and merged once more at the next pass; Iceberg writes all three as one file. Folding a
    file of ``s`` into a group removes the file and its error ``(T - s)²`` and the output's,
    for ``s`` more bytes. Files ``< limit`` in no group and no ``candidates`` (alone in
    their FFD bin, and in no spill group) are taken largest first, each into the fullest
    group it fits; a group takes one. A file of a candidate the plan did not choose, or one
    that would leave a group under ``T``, is not folded: the plan left it out for fewer
    bytes, not for want of room.
    """
    taken = {i for g in [*groups, *candidates] for i in g.members}
    left = [i for i, s in enumerate(sizes) if s < limit and i not in taken]
    ones = [g for g in groups if g.outputs == 1]
    if not left or not ones:
        return list(groups)
    written = sizes if merged is None else merged
    most = one_file_max(target)
    loads = sorted((g.total, k) for k, g in enumerate(ones) if g.total < target)
    extra: dict[int, int] = {}  # group -> the one file folded into it
    for i in sorted(left, key=written.__getitem__, reverse=True):
        at = bisect_right(loads, (most - written[i], len(ones))) - 1
        if at < 0 or loads[at][0] + written[i] <= target:
            continue  # no room, or room within T: the plan left the file out on purpose
        _, k = loads.pop(at)
        extra[k] = i
    if not extra:
        return list(groups)
    grown = [
        make_group([*g.members, extra[k]], sizes, target, merged) if k in extra else g
        for k, g in enumerate(ones)
    ]
    return [g for g in groups if g.outputs != 1] + grown
