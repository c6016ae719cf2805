"""Redis stays behind the adapters: only ``state/<adapter>/redis.py`` and the client
factory ``base/redis_client.py`` talk to it.

Every other module of ``service/`` and ``jobs/`` is read (AST, lazy imports included) for
the two ways Redis leaks: importing ``redis`` (its client, errors or scripts), and calling a
Redis command on a client it holds. A command is recognised by its name: one only Redis
uses (``hgetall``, ``pipeline``, ``register_script``, ``xadd``, ...) on any object, or a
generic one (``get``, ``set``, ``delete``, ``ping``, ...) on an object whose name says it is
a client (``client``, ``r``, ``redis``, ``self.r``, ``*_client``). Closing a client is
allowed: it is no command. A module with a real reason to reach Redis without an adapter
is in :data:`ALLOWED`, with that reason.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
ADAPTERS = "state/*/redis.py"
FACTORY = "base/redis_client.py"
ALLOWED = {
    "app/ops/doctor.py": "the doctor probes a configured Redis with its own short timeouts "
    "and names an authentication failure apart from an unreachable server",
    "app/ops/redis_local.py": "starts a local redis-server and pings its loopback URL "
    "before any config or adapter exists",
}
# names only a Redis client answers to: flagged on any object
REDIS_ONLY = frozenset(
    """
    pipeline register_script evalsha script_load execute_command scan_iter flushdb flushall
    hget hset hmget hgetall hdel hincrby hsetnx hvals hkeys hlen hexists
    lpush rpush lpop rpop lrange ltrim llen lrem lmove brpop blpop
    sadd srem smembers sismember scard
    zadd zrem zrange zrevrange zrangebyscore zscore zcard zincrby zpopmin
    xadd xreadgroup xread xack xautoclaim xclaim xgroup_create xinfo_groups xlen xdel xtrim
    incr incrby decr setnx setex psetex getset mget mset expire pexpire ttl pttl
    """.split()
)
# generic names: flagged only on an object named like a client
GENERIC = frozenset("get set delete exists keys eval ping info time watch multi".split())
CLIENT_NAMES = frozenset({"client", "self.r", "redis", "redis_client", "probe"})


def _receiver(node: ast.expr) -> str:
    """``client`` for ``client.x``, ``self.r`` for ``self.r.x``; "" for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return f"{node.value.id}.{node.attr}"
    return ""


def _clientish(name: str) -> bool:
    last = name.rsplit(".", 1)[-1]
    return name in CLIENT_NAMES or last in CLIENT_NAMES or last.endswith("_client")


def violations(source: str) -> list[str]:
    """Each line of ``source`` that imports ``redis`` or sends a Redis command (or hands a
    client's command on, ``best_effort(client.hdel, ...)``), in line order."""
    tree = ast.parse(source)
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            hits = [a.name for a in node.names if a.name.split(".")[0] == "redis"]
            found += [(node.lineno, f"import {name}") for name in hits]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "redis":
            found.append((node.lineno, f"from {node.module} import"))
        elif isinstance(node, ast.Attribute):
            name, on = node.attr, _receiver(node.value)
            if name in REDIS_ONLY and id(node) in called:  # a Redis-only command, on anything
                found.append((node.lineno, f"{on or '<expr>'}.{name}"))
            elif name in REDIS_ONLY | GENERIC and _clientish(on):  # on a client: called or not
                found.append((node.lineno, f"{on}.{name}"))
    return [f"{line}: {what}" for line, what in sorted(found)]


def _outside_the_adapters() -> list[Path]:
    inside = {*ROOT.glob(ADAPTERS), ROOT / FACTORY, *(ROOT / p for p in ALLOWED)}
    return sorted(
        p for pkg in ("service", "jobs") for p in (ROOT / pkg).rglob("*.py") if p not in inside
    )


def test_the_rule_catches_imports_and_commands() -> None:
    planted = """
import redis
from redis.cluster import RedisCluster

def leak(client, self, cfg):
    client.hgetall("k")
    self.r.pipeline(transaction=False)
    cfg.store.register_script("return 1")
    client.get("k")
    self.r.set("k", 1)
    redis_client.delete("k")
    best_effort(client.hdel, "actors", "a1")
"""
    lines = [int(v.split(":")[0]) for v in violations(planted)]
    assert lines == [2, 3, *range(6, 13)]  # every import and every command, nothing else


def test_the_rule_spares_what_is_not_redis() -> None:
    fine = """
def ok(client, d, table, store):
    d.get("k")
    table.delete("x")
    client.close()
    self.ttl = 3
    store.partitions("db.t")
    props.set("a", 1)
"""
    assert violations(fine) == []


def test_only_the_adapters_and_the_client_factory_talk_to_redis() -> None:
    leaks = {
        str(p.relative_to(ROOT)): found
        for p in _outside_the_adapters()
        if (found := violations(p.read_text()))
    }
    assert leaks == {}, "go through an adapter in state/ (or the client factory)"


def test_the_allowed_modules_still_need_it() -> None:
    """An exception that no longer reaches Redis itself is dropped from :data:`ALLOWED`."""
    assert all(violations((ROOT / path).read_text()) for path in ALLOWED)
    assert list(ROOT.glob(ADAPTERS)) and all(
        p.parent.joinpath("__init__.py").is_file() for p in ROOT.glob(ADAPTERS)
    )
