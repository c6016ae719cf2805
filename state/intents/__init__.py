"""Write intents: the files an action's attempt is about to write, recorded under its lease.

An actor records the new files' paths (or the one prefix its Spark writer writes under)
*before* anything is written, through :meth:`Intents.record`, which refuses unless
the actor still holds the item's lease. The record stays until the attempt ends well
(:meth:`forget`). An attempt that failed, was rejected, or whose actor died leaves its
record behind; once its token no longer holds the lease, the record is *abandoned*, and
the next attempt of the item or the decider's reaper deletes whichever of its files no
snapshot references (:mod:`icefloe.jobs.maintenance.orphans`) and then forgets it. So a ``kill -9``
at any point leaves no file behind for long, and a committed file is never touched.

Two implementations of one Protocol, as for the queue:
:class:`icefloe.state.intents.redis.RedisIntents` (one Lua script for the checked write,
``intent.lua``, beside it) and :class:`icefloe.state.intents.memory.MemoryIntents` (unit
tests); one contract suite (``tests/support/contracts/intents.py``) runs against both.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

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
    ) -> bool:
        """Add ``paths``/``prefixes`` to the attempt's intent; False when the lease is gone."""
        ...

    def forget(self, token: str) -> None: ...

    def all(self) -> list[Intent]: ...

    def abandoned(self, item_id: str | None = None, now: float | None = None) -> list[Intent]:
        """Intents whose token no longer holds their item's lease (of ``item_id``: one
        item's only); an ad-hoc run's, once its deadline has passed."""
        ...


class AdhocLeases(Intents, Protocol):
    """What an ad-hoc run (:mod:`icefloe.service.actor.adhoc`) needs: a lease of its own, a deadline
    it renews, and its intent recorded under it."""

    def begin_adhoc(self, token: str, now: float, seconds: float) -> None: ...

    def renew_adhoc(self, token: str, now: float, seconds: float) -> bool: ...

    def end_adhoc(self, token: str) -> None: ...

    def record_adhoc(
        self, token: str, table: str, now: float, paths: Sequence[str], prefixes: Sequence[str]
    ) -> bool:
        """Add to the ad-hoc run's intent; False when its lease has expired."""
        return self.record(ADHOC + token, token, table, now, paths, prefixes)


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
