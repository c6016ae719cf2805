"""The commit-events contract suite on the in-memory stream.

``TestMemoryEvents`` runs ``EventsContract`` (``tests/support/contracts/events.py``) on the
in-memory stream; ``tests/redis/test_events_redis.py`` runs it on a Redis Stream.
"""

from __future__ import annotations

import pytest

from icefloe.state.events import CommitEvents
from icefloe.state.events.memory import MemoryEvents, MemoryStream
from tests.support.contracts.events import EventsContract

pytestmark = [pytest.mark.unit]


class TestMemoryEvents(EventsContract):
    __test__ = True

    @pytest.fixture(autouse=True)
    def _stream(self) -> None:
        self.stream = MemoryStream()

    def make_events(
        self, consumer: str, claim_idle_ms: int = 60_000, shards: int = 1
    ) -> CommitEvents:
        return MemoryEvents(self.stream, consumer, claim_idle_ms, shards=shards)
