"""A backend goes down at a step of a rewrite (issue #28): S3 (s3proxy killed) once the new
files are recorded and about to be written, the REST catalog or PostgreSQL right before
the commit — on the ad-hoc path (``icefloe optimize``'s wiring: ``optimize_table`` under
the run's write intents, :mod:`icefloe.service.actor.adhoc`) and on an actor's.

Each run fails in one line with nothing committed, every row stays, and once the service
is back the sweep the decider's leader runs leaves no file that no snapshot references
(listed through the table's FileIO: the bucket on S3).
"""

from __future__ import annotations

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
