"""Start or ping the local Redis the embedded default uses (called by the bootstrap).

``python -m icefloe.app.ops.redis_local ping URL`` exits 0 when Redis answers PING.
``python -m icefloe.app.ops.redis_local start URL DIR`` starts ``redis-server`` for a loopback URL,
with append-only persistence in DIR so queue items survive a restart.
"""

from __future__ import annotations

import subprocess
import sys
import time
from urllib.parse import urlsplit

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def ping(url: str, timeout: float = 1.0) -> bool:
    # redis-py, slow to import: only when Redis is used
    import redis

    try:
        return bool(
            redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout).ping()
        )
    except Exception:
        return False


def start(url: str, data_dir: str, wait: float = 10.0) -> None:
    parts = urlsplit(url)
    host = parts.hostname or "127.0.0.1"
    if host not in LOOPBACK:
        raise SystemExit(
            f"redis at {host} does not answer, and only a loopback Redis is started here"
        )
    port = parts.port or 6379
    subprocess.run(["mkdir", "-p", data_dir], check=True)
    cmd = [
        "redis-server",
        "--bind",
        "127.0.0.1",
        "--port",
        str(port),
        "--daemonize",
        "yes",
        "--dir",
        data_dir,
        "--appendonly",
        "yes",
        "--save",
        "",
        "--logfile",
        f"{data_dir}/redis.log",
    ]
    if parts.password:
        cmd += ["--requirepass", parts.password]
    subprocess.run(cmd, check=True)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if ping(url):
            print(f"[bootstrap] redis: started on 127.0.0.1:{port}")
            return
        time.sleep(0.1)
    raise SystemExit(f"redis-server did not answer on port {port} within {wait:.0f}s")


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "ping":
        sys.exit(0 if ping(sys.argv[2]) else 1)
    if len(sys.argv) >= 4 and sys.argv[1] == "start":
        start(sys.argv[2], sys.argv[3])
        sys.exit(0)
    sys.exit("usage: python -m icefloe.app.ops.redis_local ping URL | start URL DIR")
