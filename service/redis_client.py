"""The one Redis client factory, and the one way to turn a Redis reply into text."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from service.config import Config
from service.errors import ServiceUnavailable

log = logging.getLogger("icefloe.redis")
PROBE_SECONDS = 5.0


def connect(cfg: Config, block_seconds: float = 0.0) -> Any:
    """A Redis client for ``cfg.redis.url`` (redis://, rediss:// with TLS, passwords).

    ``block_seconds``: the longest blocking read the caller makes (the decider's XREADGROUP
    waits up to one poll interval); the socket timeout must outlast it. The server is
    probed first with a short timeout, so a wrong URL (a ``rediss://`` URL against a plain
    server waits for a TLS handshake that never comes) fails in seconds, not half a minute.
    """
    import redis

    url = cfg.redis.url
    probe = redis.Redis.from_url(url, socket_timeout=PROBE_SECONDS, socket_connect_timeout=5)
    try:
        probe.ping()
    except redis.exceptions.RedisError as e:
        hint = " (a rediss:// URL needs a TLS server)" if url.startswith("rediss://") else ""
        raise ServiceUnavailable(
            f"redis at {cfg.redis.redacted_url()} is unreachable ({type(e).__name__}){hint}"
        ) from None
    finally:
        probe.close()
    return redis.Redis.from_url(
        url,
        socket_timeout=max(30.0, block_seconds + 10),
        socket_connect_timeout=5,
        health_check_interval=30,
    )


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
    import redis

    try:
        yield
    except redis.exceptions.RedisError as e:
        kind = (
            "unreachable"
            if isinstance(e, (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError))
            else "failed"
        )
        raise ServiceUnavailable(
            f"redis {kind} during {what} ({type(e).__name__}: {str(e)[:200]})"
        ) from e
