"""The leader lease: only the leader decides; the other deciders stand by.

On Redis (:class:`icefloe.state.leader.redis.RedisLeader`): ``SET NX PX`` takes the lease, a
Lua compare-and-extend (``leader_extend.lua``) keeps it, a compare-and-delete
(``leader_release.lua``) hands it over at once on a clean shutdown. A leader that dies
stops extending: its lease lapses within the TTL and another decider takes over. In memory
(:class:`icefloe.state.leader.memory.MemoryLeader`): the same semantics on a shared
:class:`~icefloe.state.leader.memory.LeaderBoard`, for unit tests.
One contract suite (``tests/unit/state/test_leader.py``) runs against both.
"""

from __future__ import annotations

from typing import Protocol


class Leader(Protocol):
    """One candidate's handle on the lease."""

    token: str

    def acquire(self) -> bool:
        """True while this candidate is (or just became) the leader; extends its lease."""
        ...

    def release(self) -> None:
        """Give the lease up if this candidate holds it (else nothing happens)."""
        ...

    def holder(self) -> str | None:
        """The token of the current leader, if any."""
        ...
