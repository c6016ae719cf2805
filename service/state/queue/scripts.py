"""The queue's Lua scripts (``service/state/lua/``), run once or many times in one pipelined
round trip, on a single Redis or on the master of the queue's slot of a Redis Cluster."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from service.base.errors import ServiceUnavailable
from service.base.redis_client import lua_script, translated


class LuaScripts:
    """Named scripts registered on ``client``; ``route_key``: a key of the queue's slot."""

    def __init__(self, client: Any, names: Sequence[str], route_key: str):
        self.r = client
        self.route_key = route_key
        self._lua = {name: lua_script(client, name) for name in names}

    def run(self, name: str, keys: list[str], args: list[Any]) -> Any:
        """Script ``name`` once, atomic; a Redis error as ServiceUnavailable."""
        with translated(f"queue {name}"):
            return self._lua[name](keys=keys, args=args)

    def run_many(self, name: str, calls: Sequence[tuple[list[str], list[Any]]]) -> list[Any]:
        """Script ``name`` once per ``(keys, args)``, in order, in one pipelined round trip
        (each call atomic by itself, as :meth:`run`). EVALSHA goes through
        ``execute_command``: redis-py's cluster pipeline has no ``evalsha`` method, but the
        command is sent like any other, to the master of the queue's one slot
        (:meth:`_slot_node`). A server that lost its scripts (restarted, flushed) answers
        NOSCRIPT for every call: the script is loaded (on every master) and those calls
        run again."""
        import redis

        script = self._lua[name]
        results: list[Any] = [None] * len(calls)
        todo = list(range(len(calls)))
        with translated(f"queue {name}"):
            route = self._slot_node()
            for _ in range(2):
                if not todo:
                    break
                pipe = self.r.pipeline(transaction=False)
                for i in todo:
                    keys, args = calls[i]
                    pipe.execute_command("EVALSHA", script.sha, len(keys), *keys, *args, **route)
                missed = []
                for i, got in zip(todo, pipe.execute(raise_on_error=False), strict=True):
                    if isinstance(got, redis.exceptions.NoScriptError):
                        missed.append(i)
                    elif isinstance(got, Exception):
                        raise got
                    else:
                        results[i] = got
                if missed:
                    self.r.script_load(script.script)
                todo = missed
        if todo:
            raise ServiceUnavailable(f"queue {name}: the server keeps losing its scripts")
        return results

    def _slot_node(self) -> dict[str, Any]:
        """On a Redis Cluster, the master of the queue's slot, named to the pipeline:
        redis-py's cluster pipeline would otherwise ask a server for the keys of every
        EVALSHA it queues (COMMAND GETKEYS, a round trip each). A slot that moved since
        answers MOVED, which the pipeline follows. On a single Redis: nothing."""
        find = getattr(self.r, "get_node_from_key", None)
        return {} if find is None else {"target_nodes": find(self.route_key)}
