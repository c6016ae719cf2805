"""What one pass of the decider did (:meth:`icefloe.service.decider.loop.Decider.step`): read by
``icefloe decide``'s output, the tests and the benchmarks."""

from __future__ import annotations

from dataclasses import dataclass, field

from icefloe.state.rolling import ApplyResult


@dataclass
class StepReport:
    leader: bool = False
    tables: int = 0
    events: int = 0
    rejected: list[str] = field(default_factory=list)
    applied: list[ApplyResult] = field(default_factory=list)
    enqueued: int = 0
    unchanged: int = (
        0  # polled tables refreshed without the catalog (icefloe.service.decider.light)
    )
    coalesced: int = 0
    dispatched: int = 0
    reaped: int = 0
    orphans_deleted: int = 0  # files of abandoned attempts (icefloe.state.intents)
    desired_actors: int = 0
    history: int = 0  # action records appended to the history table
    reads: int = 0  # readers' scan reports folded into the read statistics
    holder: str | None = None  # who holds the leader lease, when it is not this decider
    shards: list[int] = field(default_factory=list)  # the shards this decider observes
    polled: bool = False  # every table of its shards was polled (not only evented ones)
    next_lapse: float | None = None  # seconds until another decider's shard lease lapses
    failed: dict[str, str] = field(default_factory=dict)  # tables skipped: why (one line)
    deferred: set[str] = field(default_factory=set)  # not this decider's when their turn came

    def count(self, outcomes: list[int]) -> int:
        """Count enqueue outcomes (1 new, 0 coalesced); their number."""
        self.enqueued += outcomes.count(1)
        self.coalesced += outcomes.count(0)
        return len(outcomes)
