"""First Fit Decreasing bin packing and LPT spreading, knowing nothing of files or tables.

Items are sorted by weight, largest first, and each goes into the first (oldest) bin that
still has room for it, or opens a new bin. FFD never uses more than ``11/9 · OPT + 6/9``
bins (Dósa, 2007), and on the many-small-items shapes of streaming ingest its bins come
out nearly full, which is what a merge planner wants.

"First bin with room", in O(log n) per item without a walk over the bins: the weights
only shrink, so a bin that has room for the current item keeps it for every later one
until it receives an item itself. Closed bins wait in a heap keyed by free space
(*pending*); when the current item fits the most free pending bin, every pending bin it
fits moves to a heap keyed by bin index (*eligible*), whose smallest index is the first
fit. The bin that receives the item goes back to pending with its new free space. The
last, open bin is none of these: most items go there, checked in O(1) (no closed bin has
room, the open one has). Each bin enters eligible at most once per time it enters
pending (when it closes, and after each item it receives), so the heaps see O(n) pushes
in all. The loads and sums of squared weights of the bins are kept on the way
(``ffd_packing``): scoring the bins afterwards needs no second pass over the items.

LPT (``balance``: heaviest first, each into the lightest bin) walks the bins' loads in
sorted epochs instead of one heap step per item (see ``_lpt``); ``lpt_spread`` works
from the sorted weights alone, for a caller that judges a spread before dealing items.

The minimum-replacement rules that turn bins into rewrites (a lone file is not rewritten,
near-target files are not packed) live in ``planner``; this module only packs.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate, compress, count, repeat
from operator import add, gt, lshift


def _heaviest_first(weights: Sequence[int], items: Sequence[int] | None = None) -> list[int]:
    """``items`` (default: every index) by decreasing weight, ties in their given order.

    Raises on a negative weight, naming its position in ``items``.
    """
    order = sorted(
        range(len(weights)) if items is None else items, key=weights.__getitem__, reverse=True
    )
    if order and weights[order[-1]] < 0:
        i = next(i for i in order if weights[i] < 0)
        k = i if items is None else list(items).index(i)
        raise ValueError(f"weights must be >= 0, got {weights[i]} at index {k}")
    return order


@dataclass(frozen=True, slots=True)
class Packing:
    """FFD bins (item indices) with each bin's load and sum of squared weights.

    The sums are taken while packing, so a caller that scores bins (e.g. by squared
    error) needs no second pass over the items in bin order.
    """

    bins: list[list[int]]
    loads: list[int]
    squares: list[int]


def first_fit_decreasing(weights: Sequence[int], capacity: int) -> list[list[int]]:
    """Pack item indices into bins of ``capacity`` by First Fit Decreasing.

    Returns the bins in the order they were opened; each bin lists item indices in the
    order they were placed (decreasing weight, ties by index). An item heavier than
    ``capacity`` gets a bin of its own (placed after the others). Deterministic.
    """
    return ffd_packing(weights, capacity).bins


def ffd_packing(
    weights: Sequence[int], capacity: int, items: Sequence[int] | None = None
) -> Packing:
    """``first_fit_decreasing`` with the bins' loads and sums of squared weights.

    ``items``: the indices of ``weights`` to pack (default: all), as if packing
    ``[weights[i] for i in items]`` and mapping its bins back through ``items``.
    """
    if capacity <= 0:
        raise ValueError(f"capacity must be > 0, got {capacity}")
    order = _heaviest_first(weights, items)
    heavy = 0
    while heavy < len(order) and weights[order[heavy]] > capacity:
        heavy += 1
    fitting = order[heavy:] if heavy else order
    shift = len(fitting).bit_length()  # pending key: (capacity - free) << shift | bin
    mask = (1 << shift) - 1
    pending: list[int] = []
    eligible: list[int] = []
    room: list[int] = []  # free space of each closed bin
    squares: list[int] = []
    bins: list[list[int]] = []
    current: list[int] = []  # the open bin
    free = -1  # its free space; -1: no bin yet
    square = 0  # its sum of squared weights
    top = -1  # the most free space of a pending bin; -1: none
    for i in fitting:
        w = weights[i]
        if top >= w:  # pending bins with room for w become eligible
            limit = (capacity - w + 1) << shift
            while pending and pending[0] < limit:
                heapq.heappush(eligible, heapq.heappop(pending) & mask)
            top = capacity - (pending[0] >> shift) if pending else -1
        if eligible:  # the first closed bin with room
            b = heapq.heappop(eligible)
            bins[b].append(i)
            f = room[b] - w
            room[b] = f
            squares[b] += w * w
            heapq.heappush(pending, (capacity - f) << shift | b)
            if f > top:
                top = f
        elif free >= w:
            current.append(i)
            free -= w
            square += w * w
        else:  # close the open bin, open a new one
            if bins:
                room.append(free)
                squares.append(square)
                heapq.heappush(pending, (capacity - free) << shift | (len(bins) - 1))
                if free > top:
                    top = free
            current = [i]
            bins.append(current)
            free = capacity - w
            square = w * w
    if bins:
        room.append(free)
        squares.append(square)
    heavy_weights = [weights[i] for i in order[:heavy]]
    return Packing(
        bins + [[i] for i in order[:heavy]],
        [capacity - f for f in room] + heavy_weights,
        squares + [w * w for w in heavy_weights],
    )


def balance(weights: Sequence[int], bins: int) -> list[list[int]]:
    """Spread item indices over ``bins`` bins as evenly as possible (LPT).

    Longest Processing Time first: items heaviest first, each into the currently
    lightest bin (ties: the lowest bin). Its heaviest bin is within ``4/3`` of the best
    possible, and with many light items the loads come out nearly equal. No capacity:
    callers check what they need. Deterministic; O(n log n).
    """
    if bins <= 0:
        raise ValueError(f"bins must be > 0, got {bins}")
    order = _heaviest_first(weights)
    spread = lpt_spread([weights[i] for i in order], bins)
    assert spread is not None  # only a capacity stops the spread
    return spread.deal(order)


@dataclass(frozen=True, slots=True)
class Spread:
    """Where ``balance`` puts items, from their weights alone (sorted heaviest first).

    ``places``: the bin of each item, in that order; ``loads`` and ``counts``: each bin's
    total weight and number of items.
    """

    places: list[int]
    loads: list[int]
    counts: list[int]

    def deal(self, items: Sequence[int]) -> list[list[int]]:
        """``items`` (in the weights' order: heaviest first) into their bins."""
        out: list[list[int]] = [[] for _ in self.loads]
        for i, b in zip(items, self.places, strict=True):
            out[b].append(i)
        return out


def lpt_spread(heaviest: Sequence[int], bins: int, capacity: int | None = None) -> Spread | None:
    """``balance`` of items with weights ``heaviest`` (sorted heaviest first), or None.

    Which bin each item goes to depends only on the sorted weights, not on which of
    several equal items is which, so a caller can judge a spread before ordering its
    items (``Spread.deal``). With a ``capacity``, None as soon as a bin's load would
    pass it: loads only grow, so the rest of the spread is not computed.
    """
    if bins <= 0:
        raise ValueError(f"bins must be > 0, got {bins}")
    if heaviest and heaviest[-1] < 0:
        raise ValueError(f"weights must be >= 0, got {heaviest[-1]}")
    shift = bins.bit_length()
    placed = _lpt(heaviest, bins, shift, None if capacity is None else (capacity + 1) << shift)
    if placed is None:
        return None
    first, taken, keys = placed
    mask = (1 << shift) - 1
    loads = [0] * bins
    for key in keys:
        loads[key & mask] = key >> shift
    places = list(range(first))
    places += map(mask.__and__, taken)
    counts = [0] * bins
    for b, many in Counter(places).items():
        counts[b] = many
    return Spread(places, loads, counts)


_CHUNK = 64


def _lpt(
    heaviest: Sequence[int], bins: int, shift: int, over: int | None
) -> tuple[int, list[int], list[int]] | None:
    """Place the items of ``heaviest`` (weights, sorted down) by LPT over ``bins`` bins.

    Returns ``(first, taken, keys)``: item ``j < first`` opens bin ``j``; item
    ``first + m`` goes to the bin of key ``taken[m]`` (that bin's key just before);
    ``keys`` are the bins' final keys. None as soon as a key reaches ``over``.

    The lightest bins are taken in *epochs*: the keys sorted once, then walked in order
    while each is below every key loaded since the epoch began, a chunk at a time with
    C-level ``map``/``min`` instead of one heap operation per item. On the usual shapes
    (many items per bin, loads close together) an epoch is a whole round of the bins. An
    epoch that ends early (a freshly loaded bin is already the lightest again) is
    followed by a round of plain heap steps, which bounds the cost of re-sorting.
    """
    n = len(heaviest)
    first = min(bins, n)
    if first and not heaviest[first - 1]:  # zero weights: a zero-load bin is lighter
        first = list(heaviest[:first]).index(0)
    if over is not None and first and heaviest[0] << shift >= over:
        return None
    heap = [w << shift | b for b, w in enumerate(heaviest[:first])]
    heap += range(first, bins)
    heap.sort()
    above = (sum(heaviest) + 1) << shift  # above every key
    taken: list[int] = []
    t = first
    while t < n:
        start, p, chunk = t, 0, _CHUNK
        fresh: list[int] = []  # keys loaded in this epoch
        low = above  # the least of them
        while t < n:
            size = min(chunk, bins - p, n - t)
            if not size:
                break
            keys = heap[p : p + size]
            new = list(map(add, keys, map(lshift, heaviest[t : t + size], repeat(shift))))
            if not (low > keys[-1] < min(new)):  # some fresh key undercuts the walk
                stops = map(gt, keys, accumulate(new, min, initial=low))
                r = next(compress(count(), stops), size)
                del keys[r:], new[r:]
            if new:
                if over is not None and max(new) >= over:
                    return None
                taken += keys
                fresh += new
                low = min(low, min(new))
                p += len(new)
                t += len(new)
            if len(new) < size:
                break
            chunk *= 2
        heap = sorted(heap[p:] + fresh)
        if t - start < bins // 16 + _CHUNK:  # a short epoch: one round of heap steps
            end = min(n, t + bins + _CHUNK)
            for w in heaviest[t:end]:
                key = heap[0]
                taken.append(key)
                key += w << shift
                if over is not None and key >= over:
                    return None
                heapq.heapreplace(heap, key)
            t = end
            heap.sort()
    return first, taken, heap
