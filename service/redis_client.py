"""The one Redis client factory, and the one way to turn a Redis reply into text."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from service.config import Config
from service.errors import ServiceUnavailable


def connect(cfg: Config, block_seconds: float = 0.0) -> Any:
    """A Redis client for ``cfg.redis.url`` (redis://, rediss:// with TLS, passwords).

    ``block_seconds``: the longest blocking read the caller makes (the decider's XREADGROUP
    waits up to one poll interval); the socket timeout must outlast it.
    """
    import redis

    client = redis.Redis.from_url(
        cfg.redis.url,
        socket_timeout=max(30.0, block_seconds + 10),
        socket_connect_timeout=5,
        health_check_interval=30,
    )
    try:
        client.ping()
    except redis.exceptions.RedisError as e:
        raise ServiceUnavailable(
            f"redis at {cfg.redis.redacted_url()} is unreachable ({type(e).__name__})"
        ) from None
    return client


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
