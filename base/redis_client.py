"""The one Redis client factory, the one way to turn a Redis reply into text, and the one
loader and runner of the adapters' Lua scripts (each ``.lua`` file sits beside the
``state/<adapter>/redis.py`` that runs it)."""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from icefloe.base.config import Config
from icefloe.base.errors import ConfigError, ServiceUnavailable
from icefloe.base.redact import scrub

log = logging.getLogger("icefloe.redis")
PROBE_SECONDS = 5.0


def lua_script(client: Any, path: Path) -> Any:
    """The Lua script at ``path`` (an adapter passes ``Path(__file__).with_name("x.lua")``),
    registered on ``client`` (a ``redis.Redis`` or ``RedisCluster``; called with ``keys=``
    and ``args=``)."""
    return client.register_script(_source(path))


@functools.cache
def _source(path: Path) -> str:
    """A script's text, read once a process (adapters are built per request, e.g. by the
    dashboard: ``icefloe.state.open.open_state``)."""
    return path.read_text()


def connect(cfg: Config, block_seconds: float = 0.0) -> Any:
    """A Redis client for ``cfg.redis.url`` (redis://, rediss:// with TLS, passwords): a
    ``redis.Redis``, or with ``redis.cluster: true`` a ``redis.cluster.RedisCluster`` that
    discovers the other nodes from the one the URL names. Both answer the same commands,
    scripts and single-slot transactions, so every adapter takes either.

    ``block_seconds``: the longest blocking read the caller makes (the decider's XREADGROUP
    waits up to one poll interval); the socket timeout must outlast it. The server is
    probed first with a short timeout, so a wrong URL (a ``rediss://`` URL against a plain
    server waits for a TLS handshake that never comes) fails in seconds, not half a minute,
    and a ``redis.cluster`` setting that does not match the server is named at once.
    """
    # redis-py, slow to import: only when Redis is used
    import redis

    url = cfg.redis.url
    enabled = _probe(cfg)
    if enabled is not None and enabled != cfg.redis.cluster:
        fix = (
            "a Redis Cluster node: set redis.cluster: true"
            if enabled
            else "not a Redis Cluster node: leave redis.cluster out (false)"
        )
        raise ConfigError(f"redis at {cfg.redis.redacted_url()} is {fix}")
    timeouts = {"socket_timeout": max(30.0, block_seconds + 10), "socket_connect_timeout": 5}
    if not cfg.redis.cluster:
        return redis.Redis.from_url(url, health_check_interval=30, **timeouts)
    # redis-py, slow to import: only when Redis is used
    from redis.cluster import RedisCluster

    try:
        return RedisCluster.from_url(url, **timeouts)
    except (redis.exceptions.RedisError, redis.exceptions.RedisClusterException) as e:
        raise ServiceUnavailable(
            f"redis cluster at {cfg.redis.redacted_url()} is unusable ({type(e).__name__})"
        ) from None


def _probe(cfg: Config) -> bool | None:
    """Ping the node the URL names (a few seconds at most); whether it runs in cluster mode
    (None: it would not say)."""
    # redis-py, slow to import: only when Redis is used
    import redis

    url = cfg.redis.url
    try:
        probe = redis.Redis.from_url(url, socket_timeout=PROBE_SECONDS, socket_connect_timeout=5)
    except ValueError as e:  # a URL redis-py cannot use (db, port, query): the config's fault
        raise ConfigError(
            f"config key 'redis.url' {cfg.redis.redacted_url()!r} is unusable: {scrub(str(e))}"
        ) from None
    try:
        probe.ping()
        try:
            return bool(int(probe.info("cluster").get("cluster_enabled", 0)))
        except redis.exceptions.ResponseError:  # INFO not allowed to this user
            return None
    except redis.exceptions.RedisError as e:
        hint = " (a rediss:// URL needs a TLS server)" if url.startswith("rediss://") else ""
        raise ServiceUnavailable(
            f"redis at {cfg.redis.redacted_url()} is unreachable ({type(e).__name__}){hint}"
        ) from None
    finally:
        probe.close()


def connect_retrying(
    cfg: Config,
    block_seconds: float,
    initial: float,
    maximum: float,
    sleep: Callable[[float], None] = time.sleep,
    attempts: int | None = None,
) -> Any:
    """:func:`connect`, backing off (``initial`` doubling up to ``maximum`` seconds) while
    Redis is down, as a long-running service does when Redis goes away later; one log
    line per attempt. ``attempts``: give up after this many (None: never)."""
    delay, tried = initial, 0
    while True:
        try:
            return connect(cfg, block_seconds)
        except ServiceUnavailable as e:
            tried += 1
            if attempts is not None and tried >= attempts:
                raise
            log.error("%s; retrying in %.1fs", e, delay)
            sleep(delay)
            delay = min(delay * 2, maximum)


def text(value: Any) -> str:
    """A Redis reply (bytes, or str from a ``decode_responses`` client) as ``str``."""
    return value.decode() if isinstance(value, bytes) else str(value)


@contextmanager
def translated(what: str) -> Iterator[None]:
    """The adapters' boundary: a Redis library error becomes :class:`ServiceUnavailable`.

    Usable as ``with translated("queue enqueue"):`` or as a method decorator. The message
    names the failing operation and the error class, never a URL (so never a password):
    callers above the adapters catch ``ServiceUnavailable`` and never look at Redis types.
    """
    # redis-py, slow to import: only when Redis is used
    import redis

    unreachable = (
        redis.exceptions.ConnectionError,
        redis.exceptions.TimeoutError,
        redis.exceptions.ClusterDownError,
        redis.exceptions.SlotNotCoveredError,
    )
    try:
        yield
    except (redis.exceptions.RedisError, redis.exceptions.RedisClusterException) as e:
        # RedisClusterException is no RedisError: a cluster whose nodes are all gone
        kind = "unreachable" if isinstance(e, unreachable) else "failed"
        raise ServiceUnavailable(
            f"redis {kind} during {what} ({type(e).__name__}: {str(e)[:200]})"
        ) from e


class LuaScripts:
    """Scripts registered on ``client``, named by their files' stems, run once or many
    times in one pipelined round trip, on a single Redis or on the master of the slot of
    ``route_key`` on a Redis Cluster. ``what``: the adapter, named in errors."""

    def __init__(self, client: Any, paths: Sequence[Path], route_key: str, what: str):
        self.r = client
        self.route_key = route_key
        self.what = what
        self._lua = {path.stem: lua_script(client, path) for path in paths}

    def run(self, name: str, keys: list[str], args: list[Any]) -> Any:
        """Script ``name`` once, atomic; a Redis error as ServiceUnavailable."""
        with translated(f"{self.what} {name}"):
            return self._lua[name](keys=keys, args=args)

    def run_many(self, name: str, calls: Sequence[tuple[list[str], list[Any]]]) -> list[Any]:
        """Script ``name`` once per ``(keys, args)``, in order, in one pipelined round trip
        (each call atomic by itself, as :meth:`run`). EVALSHA goes through
        ``execute_command``: redis-py's cluster pipeline has no ``evalsha`` method, but the
        command is sent like any other, to the master of the one slot (:meth:`_slot_node`).
        A server that lost its scripts (restarted, flushed) answers NOSCRIPT for every
        call: the script is loaded (on every master) and those calls run again."""
        # redis-py, slow to import: only when Redis is used
        import redis

        script = self._lua[name]
        results: list[Any] = [None] * len(calls)
        todo = list(range(len(calls)))
        with translated(f"{self.what} {name}"):
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
            raise ServiceUnavailable(f"{self.what} {name}: the server keeps losing its scripts")
        return results

    def _slot_node(self) -> dict[str, Any]:
        """On a Redis Cluster, the master of the scripts' slot, named to the pipeline:
        redis-py's cluster pipeline would otherwise ask a server for the keys of every
        EVALSHA it queues (COMMAND GETKEYS, a round trip each). A slot that moved since
        answers MOVED, which the pipeline follows. On a single Redis: nothing."""
        find = getattr(self.r, "get_node_from_key", None)
        return {} if find is None else {"target_nodes": find(self.route_key)}
