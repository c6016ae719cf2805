"""Shard leases: the managed tables are split among the running deciders.

Each table belongs to one of ``decider.shards`` shards (:func:`service.base.keys.shard_of`, a
CRC-32 of its identifier). A decider observes only the tables of the shards it holds a lease
on, so no table is observed by two deciders at once, and a warehouse too big for one
process is shared by several.

Every step a decider *claims*: it renews its membership among the live deciders and its
leases, and takes its fair share of the free shards, ``shards // live deciders`` (one more
for the first ``shards % live`` tokens in sorted order), or hands its highest shards back
when a decider joined and it holds more. A decider that dies
stops renewing: its membership and its leases lapse together (after
:data:`LEASE_FRACTION` of ``leader_ttl_seconds``), and the survivors take its shards: a
claim says how long until the first foreign lease lapses, and a survivor claims again then
rather than a poll later, so the tables are observed again within one
``leader_ttl_seconds``. A
clean shutdown hands its shards back at once (:meth:`Shards.release`).

On Redis (:class:`RedisShards`) one Lua script does a claim atomically against the server's
clock (``service/state/lua/shards_claim.lua``); in memory (:class:`MemoryShards`) the same rules
on a shared :class:`ShardBoard`, for unit tests. One contract suite
(``tests/unit/service/test_shards.py``) runs against both.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from service.base.keys import Keys
from service.base.redis_client import lua_script, text, translated

# a shard lease lasts this share of ``leader_ttl_seconds``: the survivors' reaction (they wake
# when the lease lapses, ~50 ms) fits in the rest, so a dead decider's tables are observed
# again within one ``leader_ttl_seconds`` of its death
LEASE_FRACTION = 0.9


@dataclass(frozen=True)
class Claim:
    """The shards a decider holds after a claim, and the seconds until the first lease held
    by another decider lapses (None: no other decider holds one)."""

    owned: frozenset[int]
    next_lapse: float | None = None


class Shards(Protocol):
    """One decider's handle on the shard leases."""

    token: str
    count: int

    def claim(self) -> Claim:
        """Renew, rebalance and return the shards this decider now holds."""
        ...

    def release(self) -> None:
        """Hand back every shard this decider holds and leave (a clean shutdown)."""
        ...

    def holders(self) -> dict[int, str]:
        """shard → token of the decider holding it (lapsed leases left out)."""
        ...


class RedisShards:
    """Shard leases in the ``{d}`` slot: a members zset and a leases hash, one Lua claim."""

    def __init__(
        self, client: Any, keys: Keys, count: int, ttl_seconds: float, token: str | None = None
    ):
        self.r = client
        self.k = keys
        self.count = count
        self.ttl_ms = max(1, int(ttl_seconds * 1000 * LEASE_FRACTION))
        self.token = token or uuid.uuid4().hex
        self._claim = lua_script(client, "shards_claim")
        self._release = lua_script(client, "shards_release")

    @property
    def _keys(self) -> list[str]:
        return [self.k.deciders, self.k.shard_leases]

    @translated("shard claim")
    def claim(self) -> Claim:
        args = [self.token, self.ttl_ms, self.count]
        wait_ms, *owned = (int(v) for v in self._claim(keys=self._keys, args=args))
        return Claim(frozenset(owned), None if wait_ms < 0 else wait_ms / 1000)

    @translated("shard release")
    def release(self) -> None:
        self._release(keys=self._keys, args=[self.token])

    @translated("shard holders")
    def holders(self) -> dict[int, str]:
        now_s, now_us = self.r.time()
        now_ms = int(now_s) * 1000 + int(now_us) // 1000
        out = {}
        for shard, value in self.r.hgetall(self.k.shard_leases).items():
            deadline, _, token = text(value).partition(" ")
            if int(deadline) > now_ms:
                out[int(shard)] = token
        return out


@dataclass
class ShardBoard:
    """The shared state of :class:`MemoryShards`: member deadlines and shard leases."""

    members: dict[str, float] = field(default_factory=dict)
    leases: dict[int, tuple[float, str]] = field(default_factory=dict)


class MemoryShards:
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
