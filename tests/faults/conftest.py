"""Fixtures of the fault-injection suite (issue #18): a private Redis to kill, a config on
it, and the fault ledger whose one summary line ends the test run.

Stable names (``test_kill_points.py`` and the other fault tests use them):

* ``redis_session`` (session) — the run's private :class:`~tests.faults.harness.RedisServer`
  (its own port, password :data:`~tests.faults.harness.REDIS_PASSWORD`, AOF fsynced on
  every write), started once; ``redis_server`` (per test) — the same server, running and
  flushed before the test, restarted after it if the test left it dead.
* ``fault_cluster`` (session) — a 3-master Redis Cluster of the run's own
  (:class:`tests.support.cluster.LocalCluster`, every node with an append-only file fsynced on
  every write), started the first time a test asks for it, for killing one master.
* ``fault_env`` (per test) — a :class:`FaultEnv`: the config (``cfg``, and the same as a
  YAML file at ``config_path`` for ``icefloe`` child processes) on the session's catalog
  and warehouse (the shared ``spark`` fixture sees the same tables), the private Redis
  (its URL carries the password), a fresh managed namespace, fast decider settings, and a
  secret-named catalog property; ``secrets`` lists every secret value it holds.
* ``ledger`` (per test, autouse) — a :class:`Ledger`: ``fault(name)``, ``rows(n)``,
  ``files(n)`` record what the test injected and checked; ``clean(text)``,
  ``cli_error(run, code)``, ``contents(table)``, ``assert_intact(table, expected)`` check
  and count at once. At teardown it checks everything the test printed or logged (INFO
  and up, as the CLI logs) for tracebacks and secrets, and fails a test that injected no
  fault. ``pytest_terminal_summary`` prints the run's totals in one line::

      faults: 14 injected in 12 tests, 1234 rows checked, 321 files checked, 0 tracebacks, 0 secrets
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from icefloe.base.config import Config, build_config
from icefloe.base.keys import Keys
from tests.faults.backends import Profile
from tests.faults.backends import start as start_profile
from tests.faults.checks import (
    Contents,
    assert_clean_output,
    assert_cli_error,
    output_problems,
    table_contents,
    table_data_files,
    unreferenced_data_files,
)
from tests.faults.harness import S3_SECRET, SECRETS, RedisServer
from tests.support.cluster import LocalCluster
from tests.support.config import config_raw

FAST_DECIDER = {
    "poll_seconds": 0.2,
    "leader_ttl_seconds": 3,
    "lease_seconds": 4,
    "backoff_initial_seconds": 0.1,
    "backoff_max_seconds": 0.4,
    "claim_idle_ms": 100,
    "max_attempts": 3,
}


# ---- the ledger -----------------------------------------------------------------------------


@dataclasses.dataclass
class Totals:
    """What the whole run injected and checked (summed over every test's ledger)."""

    tests: int = 0
    faults: list[str] = dataclasses.field(default_factory=list)
    rows: int = 0
    files: int = 0
    outputs: int = 0
    tracebacks: int = 0
    secrets: int = 0

    def line(self) -> str:
        return (
            f"faults: {len(self.faults)} injected in {self.tests} tests, {self.rows} rows "
            f"checked, {self.files} files checked, {self.outputs} outputs checked, "
            f"{self.tracebacks} tracebacks, {self.secrets} secrets"
        )


TOTALS = Totals()


class Ledger:
    """One test's record of faults injected and of rows, files and outputs checked."""

    def __init__(self, totals: Totals, secrets: tuple[str, ...] = SECRETS) -> None:
        self.totals = totals
        self.secrets = secrets
        self.faults: list[str] = []

    def fault(self, name: str) -> None:
        self.faults.append(name)
        self.totals.faults.append(name)

    def rows(self, n: int) -> None:
        self.totals.rows += n

    def files(self, n: int) -> None:
        self.totals.files += n

    def clean(self, text: str) -> None:
        """:func:`assert_clean_output` over ``text``, counted."""
        self._count(text)
        assert_clean_output(text, self.secrets)

    def cli_error(self, run: Any, exit_code: int, match: str = "") -> str:
        """:func:`assert_cli_error` over ``run``, counted; its one error line."""
        self._count(run.output)
        return assert_cli_error(run, exit_code, self.secrets, match)

    def _count(self, text: str) -> None:
        problems = output_problems(text, self.secrets)
        self.totals.outputs += 1
        self.totals.tracebacks += problems.count("traceback")
        self.totals.secrets += sum(p.startswith("secret") for p in problems)

    def contents(self, table: Any) -> Contents:
        """The table's :class:`Contents` (rows counted as checked)."""
        got = table_contents(table)
        self.rows(got.rows)
        return got

    def assert_no_orphans(self, table: Any) -> None:
        """No file under the table's ``data/`` that no retained snapshot references."""
        self.files(len(table_data_files(table)))
        orphans = unreferenced_data_files(table)
        assert not orphans, f"{len(orphans)} unreferenced data file(s): {orphans[:5]}"

    def assert_intact(self, table: Any, expected: Contents) -> None:
        """No row lost or duplicated (count and digest equal ``expected``), no orphan.
        ``table`` is reloaded from its catalog first."""
        table = table.catalog.load_table(table.name()) if hasattr(table, "catalog") else table
        got = self.contents(table)
        assert got == expected, f"table contents changed: {got} != expected {expected}"
        self.assert_no_orphans(table)


@pytest.fixture(autouse=True)
def ledger(
    request: pytest.FixtureRequest, caplog: pytest.LogCaptureFixture, capsys: Any
) -> Iterator[Ledger]:
    caplog.set_level(logging.INFO)  # what the CLI's logging shows
    book = Ledger(TOTALS)
    TOTALS.tests += 1
    yield book
    out, err = capsys.readouterr()
    book.clean(out + err)
    book.clean(caplog.text)
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.passed:
        assert book.faults, "a fault test must inject (and record) at least one fault"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if report.when == "call":
        item.rep_call = report  # type: ignore[attr-defined]


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if TOTALS.tests:
        terminalreporter.write_line(TOTALS.line())


@pytest.fixture
def dropped(fault_env: Any) -> Iterator[list[str]]:
    """Tables to drop after the test: the catalog is the whole run's, and a table left
    broken or sharing a location would hold every later orphan removal."""
    names: list[str] = []
    yield names
    for name in reversed(names):
        fault_env.catalog.drop_table(name)


# ---- Redis ----------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def redis_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path_factory.mktemp("fault-redis"))
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def fault_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    cluster = LocalCluster(tmp_path_factory.mktemp("fault-cluster"), persistent=True)
    try:
        cluster.start()
    except (OSError, RuntimeError) as e:
        cluster.stop()
        pytest.fail(f"could not start a Redis Cluster on loopback: {e}")
    yield cluster
    cluster.stop()


@pytest.fixture
def redis_server(redis_session: RedisServer) -> Iterator[RedisServer]:
    redis_session.ensure_up()
    with redis_session.client() as c:
        c.flushall()
    yield redis_session
    redis_session.ensure_up()


# ---- the config -----------------------------------------------------------------------------


@dataclasses.dataclass
class FaultEnv:
    """One test's config on the session catalog and the private Redis (see module doc)."""

    cfg: Config
    raw: dict[str, Any]
    config_path: Path
    server: RedisServer
    catalog: Any
    namespace: str
    home: Path
    secrets: tuple[str, ...] = SECRETS

    @property
    def keys(self) -> Keys:
        return Keys.for_config(self.cfg)

    def client(self) -> Any:
        """A Redis client as production makes it (``icefloe.base.redis_client.connect``)."""
        from icefloe.base.redis_client import connect

        return connect(self.cfg)

    def with_decider(self, **settings: Any) -> FaultEnv:
        """The same env with other ``decider:`` settings (config file rewritten)."""
        raw = {**self.raw, "decider": {**self.raw["decider"], **settings}}
        return write_env(raw, self)


def write_env(raw: dict[str, Any], like: FaultEnv) -> FaultEnv:
    """``like`` with the config ``raw`` (written to ``like.config_path`` as YAML too)."""
    like.config_path.write_text(yaml.safe_dump(raw))
    cfg = build_config(raw, source=str(like.config_path), home=like.home)
    return dataclasses.replace(like, cfg=cfg, raw=raw)


def fault_raw(home: Path, server: RedisServer, namespace: str) -> dict[str, Any]:
    """The YAML mapping of a fault test's config (see :class:`FaultEnv`)."""
    base = config_raw(home)
    return config_raw(
        home,
        catalog={**base["catalog"], "properties": {"s3.secret-access-key": S3_SECRET}},
        redis={"url": server.url(), "key_prefix": f"faults-{namespace}"},
        managed={"namespaces": [namespace]},
        decider=dict(FAST_DECIDER),
    )


@pytest.fixture
def fault_env(
    lake_home: Path, catalog: Any, namespace: str, redis_server: RedisServer, tmp_path: Path
) -> FaultEnv:
    raw = fault_raw(lake_home, redis_server, namespace)
    path = tmp_path / "icefloe.yaml"
    path.write_text(yaml.safe_dump(raw))
    return FaultEnv(
        cfg=build_config(raw, source=str(path), home=lake_home),
        raw=raw,
        config_path=path,
        server=redis_server,
        catalog=catalog,
        namespace=namespace,
        home=lake_home,
    )


# ---- backend profiles (REST catalog on S3, PostgreSQL) -------------------------------------


@pytest.fixture(scope="session")
def rest_s3(dev_root: Path) -> Iterator[Profile]:
    """The REST catalog server and s3proxy, once per run (stopped at its end)."""
    from icefloe.app.ops import dev

    profile = start_profile("rest-s3", dev_root)
    yield profile
    dev.down("rest-s3", dev_root)


@pytest.fixture(scope="session")
def postgres(dev_root: Path) -> Iterator[Profile]:
    """The private PostgreSQL of the ``postgres`` profile, once per run."""
    from icefloe.app.ops import dev

    profile = start_profile("postgres", dev_root)
    yield profile
    dev.down("postgres", dev_root)
