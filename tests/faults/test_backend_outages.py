"""A backend goes down at a step of a rewrite (issue #28): S3 (s3proxy killed) once the new
files are recorded and about to be written, the REST catalog or PostgreSQL right before
the commit — on the ad-hoc path (``icefloe optimize``'s wiring: ``optimize_table`` under
the run's write intents, :mod:`icefloe.service.actor.adhoc`) and on an actor's.

Each run fails in one line with nothing committed, every row stays, and once the service
is back the sweep the decider's leader runs leaves no file that no snapshot references
(listed through the table's FileIO: the bucket on S3).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from icefloe.base.config import build_config
from icefloe.base.errors import IcefloeError
from icefloe.base.spark import register_catalog
from icefloe.jobs.data.optimize import optimize_table
from icefloe.jobs.rewrite.exact import Collaborators
from icefloe.service.actor.adhoc import adhoc_run, open_adhoc
from icefloe.service.actor.loop import run_actor
from icefloe.service.decider.wiring import open_decider
from tests.contract.checks import table_contents
from tests.faults.backends import profile_tables, settle

pytestmark = [pytest.mark.faults, pytest.mark.spark, pytest.mark.redis, pytest.mark.integration]

CASES = [
    ("rest_s3", "s3proxy", "write"),
    ("rest_s3", "rest", "commit"),
    ("postgres", "postgres", "commit"),
]


class Outage:
    """Stops ``service`` of ``profile`` once, at the step the test names."""

    def __init__(self, profile: Any, service: str, ledger: Any) -> None:
        self.profile, self.service, self.ledger = profile, service, ledger
        self.done = False

    def __call__(self, *args: Any) -> None:
        if not self.done:
            self.done = True
            self.profile.stop(self.service)
            self.ledger.fault(f"{self.profile.name}: {self.service} down mid-rewrite")


class DownBeforeWrite:
    """A write guard: records the new files (the inner guard), then the storage goes."""

    def __init__(self, inner: Any, outage: Outage) -> None:
        self.inner, self.outage = inner, outage

    def before_write(self, paths: Sequence[str], prefixes: Sequence[str]) -> None:
        self.inner.before_write(paths, prefixes)
        self.outage()

    def before_commit(self) -> None:
        self.inner.before_commit()


def collaborators(guard: Any, outage: Outage, step: str) -> Collaborators:
    if step == "write":
        return Collaborators(guard=DownBeforeWrite(guard, outage))
    return Collaborators(guard=guard, before_commit=outage)


def setup(request: Any, spark: Any, redis_server: Any, tmp_path: Path, ledger: Any) -> Any:
    profile = request.getfixturevalue(request.node.callspec.params["profile"])
    ledger.secrets = (*ledger.secrets, *profile.secrets)
    path, catalog, (name,) = profile_tables(profile, redis_server.url(), tmp_path)
    cfg = build_config(yaml.safe_load(path.read_text()), home=tmp_path / "home")
    register_catalog(spark, cfg)
    return profile, cfg, catalog, name, table_contents(catalog.load_table(name))


@pytest.mark.parametrize(("profile", "service", "step"), CASES)
def test_an_outage_mid_optimize_loses_nothing(
    request: Any,
    spark: Any,
    redis_server: Any,
    tmp_path: Path,
    ledger: Any,
    profile: str,
    service: str,
    step: str,
) -> None:
    backend, cfg, _, name, before = setup(request, spark, redis_server, tmp_path, ledger)
    outage = Outage(backend, service, ledger)
    try:
        with pytest.raises(IcefloeError) as failure, adhoc_run(open_adhoc(cfg), name) as guard:
            optimize_table(spark, cfg, name, collaborators=collaborators(guard, outage, step))
    finally:
        backend.ensure_up()
    assert outage.done and "\n" not in str(failure.value)
    ledger.clean(str(failure.value))
    settle(backend, cfg, redis_server.client(), name, before, ledger)


@pytest.mark.parametrize(("profile", "service", "step"), CASES)
def test_an_outage_mid_action_loses_nothing(
    request: Any,
    spark: Any,
    redis_server: Any,
    tmp_path: Path,
    ledger: Any,
    profile: str,
    service: str,
    step: str,
) -> None:
    backend, cfg, catalog, name, before = setup(request, spark, redis_server, tmp_path, ledger)
    client = redis_server.client()
    decider = open_decider(cfg, catalog, client)
    assert decider.step(dispatch_all=True).dispatched == 2
    outage = Outage(backend, service, ledger)

    def runner(item: Any, guard: Any) -> dict[str, Any]:  # spark_runner, the outage injected
        report = optimize_table(
            spark,
            cfg,
            item.table,
            keys=[item.partition],
            collaborators=collaborators(guard, outage, step),
        )
        return dict(report.to_dict())

    try:
        first = run_actor(cfg, max_actions=1, idle_exit=0, spark=spark, runner=runner)
    finally:
        backend.ensure_up()
    assert outage.done and (first.done, first.failed) == (0, 1), first
    settle(backend, cfg, client, name, before, ledger)


class PortThief:
    """Wraps ``servers.start_s3proxy``: right before s3proxy starts, another process (this
    one) takes its port, as a client's connection may while it is down; ``keep`` holds the
    port until :meth:`release`, else it is let go once that s3proxy has exited."""

    def __init__(self, start: Any, keep: bool) -> None:
        self.start, self.keep, self.starts = start, keep, 0
        self.sock: socket.socket | None = None

    def __call__(self, base: Path, port: int, *args: Any) -> int:
        self.starts += 1
        if self.starts == 1:
            self.sock = socket.create_server(("127.0.0.1", port))
        pid = self.start(base, port, *args)
        if self.starts == 1 and not self.keep:
            threading.Thread(target=self._release_after, args=(pid,), daemon=True).start()
        return int(pid)

    def _release_after(self, pid: int) -> None:
        from icefloe.app.ops import servers

        while servers.alive(pid, "s3proxy"):
            time.sleep(0.05)
        self.release()

    def release(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None


def test_a_port_taken_while_s3proxy_restarts_is_retried_then_named(
    rest_s3: Any, monkeypatch: pytest.MonkeyPatch, ledger: Any
) -> None:
    """Issue 61 item 14: s3proxy stopped and started again on its port failed once under
    load with "s3proxy exited while starting" (the port taken meanwhile)."""
    from icefloe.app.ops import servers

    start = servers.start_s3proxy
    rest_s3.stop("s3proxy")
    ledger.fault("s3proxy's port taken by another process while it restarts")
    held = PortThief(start, keep=True)
    monkeypatch.setattr(servers, "start_s3proxy", held)
    try:
        with pytest.raises(AssertionError) as named:
            rest_s3.ensure_up(attempts=2)
    finally:
        held.release()
    address = next(s.address for s in rest_s3.status() if s.name == "s3proxy")
    assert f"{address} held by" in str(named.value) and "python" in str(named.value)
    assert "another process took it while it was down" in str(named.value)

    brief = PortThief(start, keep=False)  # let go once the first start failed
    monkeypatch.setattr(servers, "start_s3proxy", brief)
    rest_s3.ensure_up()
    assert brief.starts == 2
    assert all(s.running for s in rest_s3.status())
