"""Write intents on Redis: one hash (token → JSON) next to the queue's leases, written by a
Lua script (beside this module) that checks the lease first; ad-hoc runs' leases in the
``adhoc`` hash (token → deadline)."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from icefloe.base.keys import Keys
from icefloe.base.redis_client import lua_script, text, translated
from icefloe.state.intents import ADHOC, AdhocLeases, Intent


class RedisIntents(AdhocLeases):
    def __init__(self, client: Any, keys: Keys):
        self.r = client
        self.k = keys
        self._record = lua_script(client, Path(__file__).with_name("intent.lua"))
        self._adhoc_renew = lua_script(client, Path(__file__).with_name("adhoc_renew.lua"))

    def record(
        self,
        item_id: str,
        token: str,
        table: str,
        now: float,
        paths: Sequence[str] = (),
        prefixes: Sequence[str] = (),
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
                    "1" if item_id.startswith(ADHOC) else "0",  # under its deadline
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
