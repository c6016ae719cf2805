"""A backend down at the other steps of a rewrite (issue #28; the write and the commit are
:mod:`tests.faults.test_backend_outages`'): while planning reads the manifests (S3) or loads
the table (PostgreSQL), while Spark plans the scan of the planned files (S3, ``planFiles``),
while the written files are verified (S3; the Spark engine, whose verification reads them
back), and while a failed attempt deletes its files (S3; the attempt fails verification).

Each outage spans exactly that step: the service is killed when the step starts and started
again once it returned or raised (:func:`outage_around`), so the test pays for one restart
and no retry timeouts. ``icefloe optimize`` (the command, in this process, on the session's
SparkSession) must fail in one line with exit 1; an actor (production wiring and runner) must
nack. Then every row is kept and, once the sweep of write intents ran, no file is left that
no snapshot references (listed through the table's FileIO: the bucket on S3).
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

import icefloe.base.catalog
import icefloe.jobs.base.plan
import icefloe.jobs.data.optimize
from icefloe.app.cli import main as icefloe_main
from icefloe.base.catalog import load_catalog
from icefloe.base.config import build_config
from icefloe.base.errors import OperationFailed
from icefloe.base.keys import Keys
from icefloe.base.spark import register_catalog
from icefloe.jobs.rewrite.exact import ExactRewrite
from icefloe.jobs.rewrite.tasks import ScanTasks
from icefloe.service.actor.loop import run_actor
from icefloe.service.decider.wiring import open_decider
from icefloe.state.queue.redis import RedisQueue
from tests.contract.checks import Contents, table_contents
from tests.faults.backends import profile_tables, settle

pytestmark = [pytest.mark.faults, pytest.mark.spark, pytest.mark.redis, pytest.mark.integration]

# step → the calls the outage spans (each name patched where the code calls it from)
STEPS: dict[str, list[tuple[Any, str]]] = {
    "plan": [(icefloe.jobs.base.plan, "plan_table"), (icefloe.jobs.data.optimize, "plan_table")],
    "load": [
        (icefloe.base.catalog, "load_table"),
        (icefloe.jobs.base.plan, "load_table"),
        (icefloe.jobs.data.optimize, "load_table"),
    ],
    "scan": [(ScanTasks, "load")],
    "verify": [(ExactRewrite, "_verify")],
    "cleanup": [(ExactRewrite, "discard")],
}
# S3FileIO retries a refused connection 5 times, 2 s to 20 s apart: an outage outlasts the
# step whatever the wait, so the tests wait little (the outcome is the same, sooner)
FAST_S3_RETRIES = {"s3.retry.num-retries": "1", "s3.retry.min-wait-ms": "100"}
CASES = [
    ("rest_s3", "s3proxy", "plan"),
    ("postgres", "postgres", "load"),
    ("rest_s3", "s3proxy", "scan"),
    ("rest_s3", "s3proxy", "verify"),
    ("rest_s3", "s3proxy", "cleanup"),
]

# what the one error line names, per step
NAMED = {
    "plan": "NETWORK_CONNECTION",
    "load": "catalog 'f_postgres' is unreachable",
    "scan": "planning the scan of",
    "verify": "Unable to execute HTTP request",  # refused, or a pooled connection cut
    "cleanup": "verification failed (injected)",
}


def outage_around(
    monkeypatch: pytest.MonkeyPatch, profile: Any, service: str, step: str, ledger: Any
) -> list[str]:
    """``service`` down for the first call of ``step``'s functions, up again after it
    (``cleanup``: the attempt fails verification first). Returns the outages done."""
    done: list[str] = []

    def spanning(original: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(original)
        def call(*args: Any, **kwargs: Any) -> Any:
            if done:
                return original(*args, **kwargs)
            profile.stop(service)
            done.append(f"{profile.name}: {service} down at the {step}")
            ledger.fault(done[-1])
            try:
                return original(*args, **kwargs)
            finally:
                profile.ensure_up()

        return call

    for owner, name in STEPS[step]:
        monkeypatch.setattr(owner, name, spanning(getattr(owner, name)))
    if step == "cleanup":

        def unverified(self: ExactRewrite, *args: Any) -> None:
            raise OperationFailed("verification failed (injected); nothing committed")

        monkeypatch.setattr(ExactRewrite, "_verify", unverified)
    return done


@dataclass(frozen=True)
class Shared:
    """One profile's table (two days, two small files each), shared by the module's tests:
    none of them may change it."""

    raw: dict[str, Any]
    name: str
    before: Contents


@pytest.fixture(scope="module")
def shared_tables() -> dict[str, Shared]:
    return {}


def setup(request: Any, spark: Any, redis_url: str, tmp_path: Path, ledger: Any) -> Any:
    """The profile's shared table and a config on it; ``verify`` with the Spark engine
    (the Arrow engine verifies each file as it writes it)."""
    params = request.node.callspec.params
    profile = request.getfixturevalue(params["profile"])
    ledger.secrets = (*ledger.secrets, *profile.secrets)
    tables = request.getfixturevalue("shared_tables")
    if profile.name not in tables:
        folder = request.getfixturevalue("tmp_path_factory").mktemp(f"{profile.name}-steps")
        path, catalog, (name,) = profile_tables(profile, redis_url, folder)
        raw = yaml.safe_load(path.read_text())
        if profile.name == "rest-s3":  # a Spark catalog of its own, with its own S3 retries
            raw["catalog"]["name"] += "_steps"
            properties = {**raw["catalog"].get("properties", {}), **FAST_S3_RETRIES}
            raw["catalog"]["properties"] = properties
        tables[profile.name] = Shared(raw, name, table_contents(catalog.load_table(name)))
    shared = tables[profile.name]
    raw = copy.deepcopy(shared.raw)
    if params["step"] == "verify":
        raw["defaults"] = {**raw.get("defaults", {}), "engine": "spark"}
    path = tmp_path / "icefloe.yaml"
    path.write_text(yaml.safe_dump(raw))
    path.chmod(0o600)
    cfg = build_config(raw, home=tmp_path / "home")
    register_catalog(spark, cfg)
    return profile, path, cfg, load_catalog(cfg), shared.name, shared.before


@pytest.mark.parametrize(("profile", "service", "step"), CASES)
def test_optimize_with_a_backend_down_at_a_step(
    request: Any,
    spark: Any,
    redis_server: Any,
    tmp_path: Path,
    ledger: Any,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    profile: str,
    service: str,
    step: str,
) -> None:
    backend, path, cfg, _, name, before = setup(
        request, spark, redis_server.url(), tmp_path, ledger
    )
    done = outage_around(monkeypatch, backend, service, step, ledger)
    try:
        with pytest.raises(SystemExit) as exit_info:
            icefloe_main(["--config", str(path), "optimize", name])
    finally:
        backend.ensure_up()
    out, err = capsys.readouterr()
    ledger.clean(out + err)
    lines = [line for line in err.splitlines() if line.strip()]
    assert done and exit_info.value.code == 1, (done, exit_info.value.code, out, err)
    assert len(lines) == 1 and lines[0].startswith("icefloe: error: "), err
    assert NAMED[step] in lines[0], lines[0]
    settle(backend, cfg, redis_server.client(), name, before, ledger)


@pytest.mark.parametrize(("profile", "service", "step"), CASES)
def test_an_actor_with_a_backend_down_at_a_step(
    request: Any,
    spark: Any,
    redis_server: Any,
    tmp_path: Path,
    ledger: Any,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    profile: str,
    service: str,
    step: str,
) -> None:
    backend, _, cfg, catalog, name, before = setup(
        request, spark, redis_server.url(), tmp_path, ledger
    )
    client = redis_server.client()
    queue = RedisQueue(client, Keys.for_config(cfg))
    dispatched = open_decider(cfg, catalog, client).step(dispatch_all=True)
    assert dispatched.dispatched == 2, dispatched
    done = outage_around(monkeypatch, backend, service, step, ledger)
    try:
        report = run_actor(cfg, max_actions=1, idle_exit=0, spark=spark)
    finally:
        backend.ensure_up()
    assert done and report.done == 0 and report.failed >= 1, (done, report)
    failed = [r.getMessage() for r in caplog.records if "failed:" in r.getMessage()]
    assert failed and all("\n" not in m for m in failed), failed
    assert NAMED[step] in failed[0], failed[0]
    depth = queue.depth()  # nacked: back to wait for a retry, nothing lost or dead
    assert depth["inflight"] == depth["dead"] == 0 and depth["pending"] + depth["ready"] == 2
    settle(backend, cfg, client, name, before, ledger)
