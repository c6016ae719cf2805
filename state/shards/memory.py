"""The shard leases in memory, for unit tests: the rules of ``shards_claim.lua`` on a shared
:class:`ShardBoard`."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from icefloe.state.shards import LEASE_FRACTION, Claim, Shards


@dataclass
class ShardBoard:
    """The shared state of :class:`MemoryShards`: member deadlines and shard leases."""

    members: dict[str, float] = field(default_factory=dict)
    leases: dict[int, tuple[float, str]] = field(default_factory=dict)


class MemoryShards(Shards):
    """The shard leases in memory, by the rules of ``shards_claim.lua``; ``clock`` decides
    expiry."""

    def __init__(
        self,
        board: ShardBoard | None = None,
        count: int = 16,
        ttl_seconds: float = 30.0,
        token: str | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.board = board if board is not None else ShardBoard()
        self.count = count
        self.ttl = ttl_seconds * LEASE_FRACTION
        self.token = token or uuid.uuid4().hex
        self.clock = clock

    def claim(self) -> Claim:
        b, now = self.board, self.clock()
        b.members = {t: d for t, d in b.members.items() if d > now}
        b.members[self.token] = now + self.ttl
        live, rank = len(b.members), sorted(b.members).index(self.token)
        want = self.count // live + (rank < self.count % live)
        mine, free, lapses = [], [], []
        for s in range(self.count):
            lease = b.leases.get(s)
            if lease is None or lease[0] <= now:
                free.append(s)
            elif lease[1] == self.token:
                mine.append(s)
            else:
                lapses.append(lease[0] - now)
        for s in [s for s, (_, t) in b.leases.items() if s >= self.count and t == self.token]:
            del b.leases[s]
        while len(mine) > want:
            del b.leases[mine.pop()]
        mine = sorted(mine + free[: max(0, want - len(mine))])
        for s in mine:
            b.leases[s] = (now + self.ttl, self.token)
        return Claim(frozenset(mine), min(lapses) if lapses else None)

    def release(self) -> None:
        b = self.board
        for s in [s for s, (_, t) in b.leases.items() if t == self.token]:
            del b.leases[s]
        b.members.pop(self.token, None)

    def holders(self) -> dict[int, str]:
        now = self.clock()
        return {s: t for s, (d, t) in self.board.leases.items() if d > now}
