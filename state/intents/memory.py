"""Write intents in memory, for unit tests: the semantics of
:class:`icefloe.state.intents.redis.RedisIntents` in dicts."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from icefloe.state.intents import ADHOC, AdhocLeases, Intent


@dataclass
class MemoryIntents(AdhocLeases):
    """The same in a dict; ``holder(item_id)`` gives the token holding an item's lease."""

    holder: Callable[[str], str | None]
    records: dict[str, Intent] = field(default_factory=dict)
    deadlines: dict[str, float] = field(default_factory=dict)  # ad-hoc runs' leases

    def record(
        self,
        item_id: str,
        token: str,
        table: str,
        now: float,
        paths: Sequence[str] = (),
        prefixes: Sequence[str] = (),
    ) -> bool:
        if item_id.startswith(ADHOC):  # an ad-hoc run's: under its deadline
            if self.deadlines.get(token, float("-inf")) < now:
                return False
        elif self.holder(item_id) != token:
            return False
        old = self.records.get(token) or Intent(item_id, token, table, now)
        paths, prefixes = old.paths + tuple(paths), old.prefixes + tuple(prefixes)
        self.records[token] = Intent(old.item, token, table, old.started, paths, prefixes)
        return True

    def forget(self, token: str) -> None:
        self.records.pop(token, None)
        self.deadlines.pop(token, None)

    def all(self) -> list[Intent]:
        return list(self.records.values())

    def abandoned(self, item_id: str | None = None, now: float | None = None) -> list[Intent]:
        now = time.time() if now is None else now

        def gone(i: Intent) -> bool:
            if i.item.startswith(ADHOC):
                return self.deadlines.get(i.token, float("-inf")) < now
            return self.holder(i.item) != i.token

        return [i for i in self.records.values() if item_id in (None, i.item) and gone(i)]

    def begin_adhoc(self, token: str, now: float, seconds: float) -> None:
        self.deadlines[token] = now + seconds

    def renew_adhoc(self, token: str, now: float, seconds: float) -> bool:
        if self.deadlines.get(token, float("-inf")) < now:
            return False
        self.deadlines[token] = now + seconds
        return True

    def end_adhoc(self, token: str) -> None:
        self.deadlines.pop(token, None)
