"""The backend contract suite: the same tests on every backend profile.

``embedded`` (SQLite catalog, local warehouse), ``postgres`` (a private PostgreSQL 15:
JDBC catalog for Spark, SQL catalog for PyIceberg) and ``rest-s3`` (Iceberg's REST catalog
server over an S3 API server). Each profile's services are started once per run by the
same code as ``icefloe dev up`` (in a temporary root, on free loopback ports) and stopped
after its tests. Its catalog is registered on the run's one Spark session under a name of
its own, so the profiles never share a table.

Every test of the suite is checked for secrets: nothing it prints (Python or the JVM) may
hold an S3 key, the PostgreSQL password or the Redis password (the suite runs on a Redis
of its own, with a password).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from icefloe.base.config import PROFILES, Config, build_config
from tests.support.config import config_raw

CATALOG_NAMES = {"embedded": "c_embedded", "postgres": "c_postgres", "rest-s3": "c_rest"}


@dataclass
class Backend:
    """One profile's running services, its config, and its PyIceberg catalog."""

    profile: str
    raw: dict[str, Any]
    cfg: Config
    catalog: Any
    home: Path
    secrets: list[str] = field(default_factory=list)

    def namespace(self) -> str:
        """A fresh namespace: tests never see each other's tables."""
        name = f"k_{uuid.uuid4().hex[:10]}"
        self.catalog.create_namespace(name)
        return name

    def with_managed(self, namespace: str) -> Config:
        raw = {**self.raw, "managed": {"namespaces": [namespace]}}
        return build_config(raw, source=f"<contract {self.profile}>", home=self.home)

    def config_file(self, path: Path, **overrides: Any) -> Path:
        """The backend's config as a YAML file (for CLI and DAG subprocesses)."""
        path.write_text(yaml.safe_dump({**self.raw, **overrides}))
        path.chmod(0o600)
        return path


@pytest.fixture(scope="session")
def private_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A Redis of the suite's own with a password, so that the secret check covers it."""
    import secrets

    from tests.faults.harness import RedisServer

    server = RedisServer(tmp_path_factory.mktemp("contract-redis"), secrets.token_urlsafe(18))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def redis_client(private_redis: Any) -> Iterator[Any]:
    """The suite's Redis (instead of the run's shared one), flushed around each test."""
    client = private_redis.client()
    client.flushdb()
    yield client
    client.flushdb()
    client.close()


@pytest.fixture(scope="session", params=PROFILES)
def backend(
    request: pytest.FixtureRequest,
    dev_root: Path,
    tmp_path_factory: pytest.TempPathFactory,
    spark: Any,
    private_redis: Any,
) -> Iterator[Backend]:
    """Each profile in turn: its services up, its catalog on the shared Spark session."""
    from icefloe.base.catalog import load_catalog
    from icefloe.base.redact import register_secrets
    from icefloe.base.spark import register_catalog

    profile = request.param
    overlay = {} if profile == "embedded" else _up(profile, dev_root).get("catalog", {})
    try:
        home = tmp_path_factory.mktemp(f"contract-{profile}")
        raw = config_raw(home)
        raw["catalog"] = {**raw["catalog"], **overlay, "name": CATALOG_NAMES[profile]}
        raw["redis"] = {**raw["redis"], "url": private_redis.url(0)}
        cfg = build_config(raw, source=f"<contract {profile}>", home=home)
        secrets = cfg.secret_values()
        assert private_redis.password in secrets
        register_secrets(secrets)
        register_catalog(spark, cfg)
        yield Backend(profile, raw, cfg, load_catalog(cfg), home, secrets)
    finally:
        if profile != "embedded":
            from icefloe.app.ops import dev

            dev.down(profile, dev_root)


def _up(profile: str, root: Path) -> dict[str, Any]:
    """Start the profile's services as ``icefloe dev up`` does; its config overlay."""
    from icefloe.app.ops import dev

    return dict(dev.up(profile, root, free_ports=True).overlay)


@pytest.fixture(autouse=True)
def _no_secret_in_output(
    request: pytest.FixtureRequest, capfd: pytest.CaptureFixture[str]
) -> Iterator[None]:
    """Whatever a contract test printed (Python and JVM, stdout and stderr) holds no
    secret of its backend."""
    yield
    if "backend" not in request.fixturenames:
        return
    backend: Backend = request.getfixturevalue("backend")
    out, err = capfd.readouterr()
    for secret in backend.secrets:
        assert secret not in out and secret not in err, (
            f"a secret of the {backend.profile} profile was printed"
        )
