"""The RPQ contract suite on the in-memory stub, and ``take_batch``.

``TestMemoryQueue`` runs ``QueueContract`` (``tests/support/contracts/queue.py``) on the
in-memory stub; ``tests/redis/test_queue_redis.py`` runs it on Redis.
"""

from __future__ import annotations

import pytest

from icefloe.state.queue import ActionItem, Budget, PriorityQueue, take_batch
from icefloe.state.queue.memory import MemoryQueue
from tests.support.contracts.queue import QueueContract, item

pytestmark = [pytest.mark.unit]


def test_take_batch_joins_the_leading_run_of_one_table_and_action() -> None:
    a = [item(partition=f"p{i}", cost=100) for i in range(4)]
    other = item(table="db.o")
    sort = item(partition="s", action="sort")
    budget = Budget(3, 250)
    assert take_batch([], budget) == []
    assert take_batch(a, Budget(3, 10_000)) == a[:3]
    assert take_batch(a, budget) == a[:2]  # 300 bytes would pass 250
    assert take_batch([a[0], other, a[1]], Budget(9)) == [a[0]]  # the run stops
    assert take_batch([a[0], sort], Budget(9)) == [a[0]]
    whole = item(partition=None)
    upkeep = item(partition=None, action="rewrite_manifests")
    assert take_batch([whole, a[0]], Budget(9)) == [whole]
    assert take_batch([upkeep, a[0]], Budget(9)) == [upkeep]
    big = item(partition="big", cost=10_000)
    assert take_batch([big, a[0]], budget) == [big]  # the first always goes
    failed = ActionItem(**{**vars(a[1]), "attempts": 1, "last_error": "boom"})
    expired = ActionItem(**{**vars(a[1]), "attempts": 1, "last_error": "lease expired"})
    assert take_batch([a[0], failed], Budget(9)) == [a[0]]
    assert take_batch([failed, a[0]], Budget(9)) == [failed]
    assert take_batch([a[0], expired], Budget(9)) == [a[0], expired]


class TestMemoryQueue(QueueContract):
    __test__ = True

    def make_queue(self, max_attempts: int = 3) -> PriorityQueue:
        return MemoryQueue(max_attempts=max_attempts)
