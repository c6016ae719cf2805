"""Connecting to Redis: fast, clear failures, and a back-off for long-running services.

Nothing listens on port 1 of the loopback: a refused connection needs no Redis server."""

from __future__ import annotations

from pathlib import Path

import pytest

from icefloe.base.errors import ConfigError, ServiceUnavailable
from icefloe.base.redis_client import connect, connect_retrying
from tests.support.config import make_config

pytestmark = pytest.mark.unit


def test_an_unreachable_redis_is_one_line_without_the_password(tmp_path: Path) -> None:
    cfg = make_config(tmp_path, redis={"url": "rediss://:s3cret@127.0.0.1:1/15"})
    with pytest.raises(ServiceUnavailable) as err:
        connect(cfg)
    message = str(err.value)
    assert "s3cret" not in message and "\n" not in message
    assert "rediss:// URL needs a TLS server" in message


def test_a_url_redis_cannot_use_is_a_config_error_without_the_password(tmp_path: Path) -> None:
    """Issue 28 item 9: redis-py's ValueError was a traceback, exit 1 (a config error: 2)."""
    cfg = make_config(tmp_path, redis={"url": "redis://:s3cret@127.0.0.1:6379/0?db=x"})
    with pytest.raises(ConfigError, match="config key 'redis.url'") as err:
        connect(cfg)
    assert "s3cret" not in str(err.value) and "\n" not in str(err.value)


def test_connect_retrying_backs_off_then_gives_up(tmp_path: Path) -> None:
    cfg = make_config(tmp_path, redis={"url": "redis://127.0.0.1:1/15"})
    slept: list[float] = []
    with pytest.raises(ServiceUnavailable):
        connect_retrying(cfg, 1.0, initial=1.0, maximum=3.0, sleep=slept.append, attempts=4)
    assert slept == [1.0, 2.0, 3.0]
