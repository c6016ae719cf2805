"""Shard leases: the managed tables are split among the running deciders.

Each table belongs to one of ``decider.shards`` shards (:func:`icefloe.base.keys.shard_of`, a
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

On Redis (:class:`icefloe.state.shards.redis.RedisShards`) one Lua script does a claim
atomically against the server's clock (``shards_claim.lua``, beside it); in memory
(:class:`icefloe.state.shards.memory.MemoryShards`) the same rules on a shared
:class:`~icefloe.state.shards.memory.ShardBoard`, for unit tests. One contract suite
(``tests/unit/state/test_shards.py``) runs against both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

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
