"""The ledger contract suite on the in-memory ledger (``tests/support/contracts/ledger.py``;
``tests/redis/test_ledger_redis.py`` runs it on Redis)."""

from __future__ import annotations

import pytest

from icefloe.state.ledger import Ledger
from icefloe.state.ledger.memory import MemoryLedger
from tests.support.contracts.ledger import T0, LedgerContract

pytestmark = [pytest.mark.unit]


class TestMemoryLedger(LedgerContract):
    __test__ = True

    def make_ledger(self) -> Ledger:
        return MemoryLedger()


def test_memory_launch_guard_expires() -> None:
    ledger = MemoryLedger()
    assert ledger.claim_launch(T0, 10) and not ledger.claim_launch(T0 + 9, 10)
    assert ledger.claim_launch(T0 + 10, 10)
