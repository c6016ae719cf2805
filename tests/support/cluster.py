"""A real 3-master Redis Cluster on loopback, from Debian's ``redis-server`` and
``redis-cli``, for the contract suites (``tests/redis/conftest.py`` starts one per run).

Each node is ``redis-server --cluster-enabled yes`` (:mod:`tests.support.redis_server`) on
a free port below the ephemeral range (its cluster bus on the port + 10000 must be free and
below it too) in its own folder, without persistence; ``redis-cli
--cluster create ... --cluster-replicas 0`` splits the 16384 slots over the three, and the
cluster is ready once every node reports ``cluster_state:ok``.

``LocalCluster(..., persistent=True)`` (the fault suite's) gives every node an append-only
file fsynced on every write in its own folder: :meth:`LocalCluster.kill` SIGKILLs one
master (a crashed process, not a lost disk) and :meth:`LocalCluster.restart` starts it
again on the same port and folder, where it finds its node id, its slots and every write
it acknowledged. :meth:`LocalCluster.owner` names the master that holds a key's slot.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from icefloe.app.ops import servers
from tests.support.redis_server import server_argv, spawn, why_not_started

MASTERS = 3
BUS_OFFSET = 10_000  # Redis Cluster's bus port is the client port + 10000


def _free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_ports(count: int) -> list[int]:
    """``count`` distinct free ports whose cluster bus ports are free as well, both below the
    ephemeral range when the first 200 picks find such (:func:`servers.free_port`)."""
    ports: list[int] = []
    below = servers.ephemeral_start()
    tries = 0
    while len(ports) < count:
        port, tries = servers.free_port(), tries + 1
        bus = port + BUS_OFFSET
        if bus >= 65536 or port in ports or not _free(bus) or (bus >= below and tries < 200):
            continue
        ports.append(port)
    return ports


@dataclass
class LocalCluster:
    """The nodes of one loopback cluster; :meth:`start`, then :meth:`stop`."""

    workdir: Path
    persistent: bool = False
    ports: list[int] = field(default_factory=list)
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def url(self) -> str:
        """A URL of one node: the client discovers the others from it."""
        return f"redis://127.0.0.1:{self.ports[0]}/0"

    def start(self, timeout: float = 30.0) -> None:
        self.ports = free_ports(MASTERS)
        self.procs = [self._spawn(port) for port in self.ports]
        deadline = time.monotonic() + timeout
        for port in self.ports:
            self._wait(port, "PING", "PONG", deadline)
        create = subprocess.run(
            ["redis-cli", "--cluster", "create"]
            + [f"127.0.0.1:{p}" for p in self.ports]
            + ["--cluster-replicas", "0", "--cluster-yes"],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if create.returncode != 0:
            raise RuntimeError(f"redis-cli --cluster create failed: {create.stdout[-2000:]}")
        for port in self.ports:
            self._wait(port, "CLUSTER INFO", "cluster_state:ok", deadline)

    def _spawn(self, port: int) -> subprocess.Popen[bytes]:
        cluster = ["--cluster-enabled", "yes", "--cluster-config-file", f"nodes-{port}.conf"]
        node = self.workdir / str(port)
        return spawn(server_argv(port, node, persistent=self.persistent, extra=cluster))

    def owner(self, key: str) -> int:
        """The port of the master that holds ``key``'s slot (from ``CLUSTER NODES``: id,
        ``host:port@bus``, flags, ..., then the node's slot ranges from the 9th field)."""
        slot = int(self._ask(self.ports[0], "CLUSTER", "KEYSLOT", key))
        for line in self._ask(self.ports[0], "CLUSTER", "NODES").splitlines():
            fields = line.split()
            for served in fields[8:]:
                first, _, last = served.partition("-")
                if first.isdigit() and int(first) <= slot <= int(last or first):
                    return int(fields[1].split("@")[0].rsplit(":", 1)[1])
        raise RuntimeError(f"no master holds slot {slot}")

    def kill(self, port: int) -> None:
        """SIGKILL the node on ``port`` (no shutdown, no final write) and wait for it."""
        proc = self.procs[self.ports.index(port)]
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)

    def restart(self, port: int, timeout: float = 30.0) -> None:
        """Start the node on ``port`` again, same folder (its node id, slots and, when
        persistent, data), and wait until every node reports the cluster ok again."""
        index = self.ports.index(port)
        assert self.procs[index].poll() is not None, f"node {port} is running"
        self.procs[index] = self._spawn(port)
        deadline = time.monotonic() + timeout
        self._wait(port, "PING", "PONG", deadline)
        for p in self.ports:
            self._wait(p, "CLUSTER INFO", "cluster_state:ok", deadline)

    def _ask(self, port: int, *command: str) -> str:
        return subprocess.run(
            ["redis-cli", "-p", str(port), *command],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout

    def _wait(self, port: int, command: str, expect: str, deadline: float) -> None:
        while True:
            out = subprocess.run(
                ["redis-cli", "-p", str(port), *command.split()],
                capture_output=True,
                text=True,
                timeout=10,
            ).stdout
            if expect in out:
                return
            if time.monotonic() > deadline or any(p.poll() is not None for p in self.procs):
                log = self.workdir / str(port) / "redis.log"
                raise RuntimeError(
                    f"cluster node {port} never answered {expect}: "
                    f"{why_not_started(log, port)} (log: {log})"
                )
            time.sleep(0.05)

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        self.procs.clear()


def primaries(client: Any) -> list[Any]:
    """One plain client per master of a ``RedisCluster``; ``[client]`` for a single Redis."""
    from redis.cluster import RedisCluster

    if isinstance(client, RedisCluster):
        return [node.redis_connection for node in client.get_primaries()]
    return [client]


def all_keys(client: Any) -> list[bytes]:
    """Every key, on every master (``KEYS`` on a cluster client asks one node only)."""
    return sorted(k for node in primaries(client) for k in node.keys("*"))
