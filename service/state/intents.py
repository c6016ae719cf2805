"""Write intents: the files an action's attempt is about to write, recorded under its lease.

An actor records the new files' paths (or the one prefix its Spark writer writes under)
*before* anything is written, through :meth:`RedisIntents.record`, which refuses unless
the actor still holds the item's lease. The record stays until the attempt ends well
(:meth:`forget`). An attempt that failed, was rejected, or whose actor died leaves its
record behind; once its token no longer holds the lease, the record is *abandoned*, and
the next attempt of the item or the decider's reaper deletes whichever of its files no
snapshot references (:mod:`jobs.maintenance.orphans`) and then forgets it. So a ``kill -9`` at any
point leaves no file behind for long, and a committed file is never touched.

Two implementations of one shape, as for the queue: :class:`RedisIntents` (one Lua script
for the checked write) and :class:`MemoryIntents` (unit tests).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from service.base.keys import Keys
from service.base.redis_client import lua_script, text, translated

log = logging.getLogger("icefloe.intents")

ADHOC = "adhoc:"
"""The item id of an ad-hoc run's intent: ``adhoc:<token>`` (no queue item; its lease is
a deadline in the ``adhoc`` hash)."""


@dataclass(frozen=True)
class Intent:
    """The files one attempt (lease ``token`` of ``item``) may have written to ``table``."""

    item: str
    token: str
    table: str
    started: float
    paths: tuple[str, ...] = ()
    prefixes: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, raw: str | bytes) -> Intent:
        d = json.loads(raw)

        def strings(value: Any) -> tuple[str, ...]:
            # Lua's cjson writes an empty array as {}
            return tuple(str(v) for v in value) if isinstance(value, list) else ()

        return cls(
            str(d["item"]),
            str(d["token"]),
            str(d["table"]),
            float(d["started"]),
            strings(d.get("paths")),
            strings(d.get("prefixes")),
        )


class RedisIntents:
    """Intents in one Redis hash (token → JSON), next to the queue's leases."""

    def __init__(self, client: Any, keys: Keys):
        self.r = client
        self.k = keys
        self._record = lua_script(client, "intent")
        self._adhoc_renew = lua_script(client, "adhoc_renew")

    def record(
        self,
        item_id: str,
        token: str,
        table: str,
        now: float,
        paths: Sequence[str] = (),
        prefixes: Sequence[str] = (),
    ) -> bool:
        """Add ``paths``/``prefixes`` to the attempt's intent; False when the lease is gone."""
        return self._run_record(item_id, token, table, now, paths, prefixes, adhoc=False)

    def _run_record(
        self,
        item_id: str,
        token: str,
        table: str,
        now: float,
        paths: Sequence[str],
        prefixes: Sequence[str],
        adhoc: bool,
    ) -> bool:
        with translated("intent record"):
            got = self._record(
                keys=[self.k.leases, self.k.intents, self.k.adhoc],
                args=[
                    item_id,
                    token,
                    table,
                    repr(now),
                    json.dumps(list(paths)),
                    json.dumps(list(prefixes)),
                    "1" if adhoc else "0",
                ],
            )
        return bool(got)

    @translated("intent forget")
    def forget(self, token: str) -> None:
        pipe = self.r.pipeline(transaction=False)
        pipe.hdel(self.k.intents, token)
        pipe.hdel(self.k.adhoc, token)  # an ad-hoc run's lease, if it was one
        pipe.execute()

    @translated("intents")
    def all(self) -> list[Intent]:
        return [Intent.from_json(raw) for raw in self.r.hvals(self.k.intents)]

    @translated("intents abandoned")
    def abandoned(self, item_id: str | None = None, now: float | None = None) -> list[Intent]:
        """Intents whose token no longer holds their item's lease (of ``item_id``: one
        item's only); an ad-hoc run's, once its deadline has passed."""
        now = time.time() if now is None else now
        intents = [i for i in self.all() if item_id is None or i.item == item_id]
        queued = [i for i in intents if not i.item.startswith(ADHOC)]
        adhoc = [i for i in intents if i.item.startswith(ADHOC)]
        holders = self.r.hmget(self.k.leases, [i.item for i in queued]) if queued else []
        deadlines = self.r.hmget(self.k.adhoc, [i.token for i in adhoc]) if adhoc else []
        return [
            i for i, h in zip(queued, holders, strict=True) if h is None or text(h) != i.token
        ] + [i for i, d in zip(adhoc, deadlines, strict=True) if d is None or float(d) < now]

    # ---- ad-hoc runs: a lease of their own (a deadline), no queue item -------------------
    @translated("ad-hoc lease")
    def begin_adhoc(self, token: str, now: float, seconds: float) -> None:
        self.r.hset(self.k.adhoc, token, repr(now + seconds))

    @translated("ad-hoc lease renew")
    def renew_adhoc(self, token: str, now: float, seconds: float) -> bool:
        return bool(self._adhoc_renew(keys=[self.k.adhoc], args=[token, now, repr(now + seconds)]))

    @translated("ad-hoc lease end")
    def end_adhoc(self, token: str) -> None:
        self.r.hdel(self.k.adhoc, token)

    def record_adhoc(
        self, token: str, table: str, now: float, paths: Sequence[str], prefixes: Sequence[str]
    ) -> bool:
        """Add to the ad-hoc run's intent; False when its lease has expired."""
        return self._run_record(ADHOC + token, token, table, now, paths, prefixes, adhoc=True)


@dataclass
class MemoryIntents:
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
        if self.holder(item_id) != token:
            return False
        self._add(item_id, token, table, now, paths, prefixes)
        return True

    def _add(
        self,
        item_id: str,
        token: str,
        table: str,
        now: float,
        paths: Sequence[str],
        prefixes: Sequence[str],
    ) -> None:
        old = self.records.get(token) or Intent(item_id, token, table, now)
        paths, prefixes = old.paths + tuple(paths), old.prefixes + tuple(prefixes)
        self.records[token] = Intent(old.item, token, table, old.started, paths, prefixes)

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

    def record_adhoc(
        self, token: str, table: str, now: float, paths: Sequence[str], prefixes: Sequence[str]
    ) -> bool:
        if self.deadlines.get(token, float("-inf")) < now:
            return False
        self._add(ADHOC + token, token, table, now, paths, prefixes)
        return True


class Intents(Protocol):
    """What :func:`sweep` and the actors need (Redis or in-memory)."""

    def record(
        self,
        item_id: str,
        token: str,
        table: str,
        now: float,
        paths: Sequence[str] = (),
        prefixes: Sequence[str] = (),
    ) -> bool: ...

    def forget(self, token: str) -> None: ...

    def abandoned(self, item_id: str | None = None, now: float | None = None) -> list[Intent]: ...


class AdhocLeases(Intents, Protocol):
    """What an ad-hoc run (:mod:`service.actor.adhoc`) needs: a lease of its own, a deadline it
    renews, and its intent recorded under it."""

    def begin_adhoc(self, token: str, now: float, seconds: float) -> None: ...

    def renew_adhoc(self, token: str, now: float, seconds: float) -> bool: ...

    def end_adhoc(self, token: str) -> None: ...

    def record_adhoc(
        self, token: str, table: str, now: float, paths: Sequence[str], prefixes: Sequence[str]
    ) -> bool: ...


def sweep(
    intents: Intents,
    clean: Callable[[Intent], int],
    item_id: str | None = None,
    items: Collection[str] | None = None,
) -> int:
    """Clean (``clean``: delete what no snapshot references, return how many files) and
    forget every abandoned intent (of ``item_id`` only, or of ``items``: a batch's, whose
    intent is recorded under its first item). An intent whose cleaning fails (catalog
    down) is kept for the next sweep. Returns files deleted."""
    deleted = 0
    found = intents.abandoned(item_id)
    for intent in found if items is None else [i for i in found if i.item in items]:
        try:
            deleted += clean(intent)
        except Exception as e:  # one line: drivers' messages can span many (SQL, parameters)
            first = (str(e).strip().splitlines() or [""])[0][:300]
            log.warning(
                "could not clean up after an abandoned attempt of %s (kept for the next "
                "sweep): %s: %s",
                intent.item,
                type(e).__name__,
                first,
            )
            continue
        intents.forget(intent.token)
    return deleted
