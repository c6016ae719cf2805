"""``icefloe doctor`` against real backends: every check passes where everything is up, each
broken backend is one FAIL with a fix, and no secret (a password, an S3 key) is ever
printed, in the table or in ``--json``, on stdout or stderr."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from tests.support.config import config_raw, redis_url

pytestmark = pytest.mark.integration

ORDER = ["packages", "java", "jars", "catalog", "warehouse", "spark", "redis"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def doctor(
    tmp_path: Path, raw: dict[str, Any], secrets: list[str], *, as_json: bool = True
) -> tuple[int, dict[str, Any] | str]:
    """Run ``icefloe --config FILE doctor [--json]`` in a subprocess; its exit code and its
    report (parsed JSON, or the table's text). Fails if stdout or stderr holds a secret."""
    path = tmp_path / "icefloe.yaml"
    path.write_text(yaml.safe_dump(raw))
    path.chmod(0o600)
    uri = str(raw["catalog"].get("uri", ""))
    if uri.startswith("sqlite:///"):  # the lake's catalog exists (doctor creates none)
        db = Path(uri.removeprefix("sqlite:///"))
        db.parent.mkdir(parents=True, exist_ok=True)
        sqlite3.connect(db).close()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ICEFLOE_")}
    argv = [sys.executable, "-m", "icefloe", "--config", str(path), "doctor"]
    out = subprocess.run(
        argv + (["--json"] if as_json else []),
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
    )
    for secret in secrets:
        assert secret not in out.stdout and secret not in out.stderr, "a secret was printed"
    if not as_json:
        return out.returncode, out.stdout
    report = json.loads(out.stdout)
    assert [c["name"] for c in report["checks"]] == ORDER
    assert report["ok"] is all(c["ok"] for c in report["checks"])
    assert out.returncode == (0 if report["ok"] else 1), out.stderr[-2000:]
    return out.returncode, report


def by_name(report: Any) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in report["checks"]}


def probes_left(folder: Path) -> list[Path]:
    return sorted(folder.rglob(".icefloe-doctor-*"))


def test_everything_passes_on_the_embedded_config(tmp_path: Path) -> None:
    code, report = doctor(tmp_path, config_raw(tmp_path), [])
    assert code == 0, report
    checks = by_name(report)
    assert all(c["ok"] and c["fix"] == "" for c in checks.values()), checks
    assert checks["catalog"]["detail"] == (
        f"lake (sql, sqlite:///{tmp_path}/catalog.db): 0 namespaces"
    )
    assert checks["warehouse"]["detail"] == (
        f"file://{tmp_path}/warehouse: write, read, delete ok (PyArrowFileIO)"
    )
    assert checks["spark"]["detail"] == "local[2]: in-process"
    assert (tmp_path / "warehouse").is_dir() and probes_left(tmp_path) == []


def test_a_warehouse_that_cannot_be_written_fails_with_a_fix(tmp_path: Path) -> None:
    # root ignores folder permissions: a path under a regular file is what stops a write
    (tmp_path / "afile").write_text("a file, not a folder")
    raw = config_raw(tmp_path)
    raw["catalog"] = {**raw["catalog"], "warehouse": f"file://{tmp_path}/afile/warehouse"}
    code, report = doctor(tmp_path, raw, [])
    assert code == 1
    checks = by_name(report)
    warehouse = checks["warehouse"]
    assert not warehouse["ok"]
    assert warehouse["detail"].startswith(f"file://{tmp_path}/afile/warehouse: write failed: ")
    assert warehouse["fix"].startswith(
        f"make {tmp_path}/afile/warehouse a folder icefloe can write"
    )
    assert "permissions" in warehouse["fix"]
    assert all(checks[n]["ok"] for n in ("packages", "java", "jars", "spark", "redis")), checks
    assert (tmp_path / "afile").read_text() == "a file, not a folder"


def test_an_unreachable_spark_master_fails_with_a_fix(tmp_path: Path) -> None:
    port = free_port()
    raw = config_raw(tmp_path)
    raw["spark"] = {**raw["spark"], "master": f"spark://127.0.0.1:{port}"}
    code, report = doctor(tmp_path, raw, [])
    assert code == 1
    failed = {n: c for n, c in by_name(report).items() if not c["ok"]}
    assert list(failed) == ["spark"]
    assert f"cannot connect to 127.0.0.1:{port}" in failed["spark"]["detail"]
    assert failed["spark"]["fix"] == (
        "start the master (`spark-class org.apache.spark.deploy.master.Master "
        f"--host 127.0.0.1 --port {port}`) or fix spark.master"
    )


def test_a_password_protected_redis_that_is_down(tmp_path: Path) -> None:
    password = "doctor-down-" + os.urandom(6).hex()
    port = free_port()
    raw = config_raw(tmp_path, redis={"url": f"redis://:{password}@127.0.0.1:{port}/0"})
    code, report = doctor(tmp_path, raw, [password])
    assert code == 1
    failed = {n: c for n, c in by_name(report).items() if not c["ok"]}
    assert list(failed) == ["redis"]
    assert failed["redis"]["detail"].startswith(f"redis://:***@127.0.0.1:{port}/0: ConnectionError")
    assert failed["redis"]["fix"].startswith("start Redis or fix redis.url")
    code, table = doctor(tmp_path, raw, [password], as_json=False)  # the rich table too
    assert code == 1 and "FAIL" in str(table)


def test_a_wrong_redis_password_says_check_the_password(tmp_path: Path) -> None:
    # the test Redis has no password; an ACL user that does not exist is refused all the same
    password = "doctor-wrong-" + os.urandom(6).hex()
    run = urlsplit(redis_url())
    url = f"redis://icefloe-nobody:{password}@{run.hostname}:{run.port or 6379}/11"
    code, report = doctor(tmp_path, config_raw(tmp_path, redis={"url": url}), [password])
    assert code == 1
    failed = {n: c for n, c in by_name(report).items() if not c["ok"]}
    assert list(failed) == ["redis"]
    assert "icefloe-nobody:***@" in failed["redis"]["detail"]
    assert "AuthenticationError" in failed["redis"]["detail"]
    assert failed["redis"]["fix"].startswith("check the password in redis.url")


def test_s3_keys_never_show_when_the_s3_endpoint_is_down(tmp_path: Path) -> None:
    key, secret = "AKIDOCTOR" + os.urandom(4).hex(), "doctor-s3-" + os.urandom(8).hex()
    endpoint = f"http://127.0.0.1:{free_port()}"
    raw = config_raw(tmp_path)
    raw["catalog"] = {
        **raw["catalog"],
        "warehouse": "s3://doctorbucket/wh",
        "properties": {
            "io-impl": "org.apache.iceberg.aws.s3.S3FileIO",
            "s3.endpoint": endpoint,
            "s3.access-key-id": key,
            "s3.secret-access-key": secret,
            "s3.region": "us-east-1",
        },
    }
    code, report = doctor(tmp_path, raw, [key, secret])
    assert code == 1
    failed = {n: c for n, c in by_name(report).items() if not c["ok"]}
    assert list(failed) == ["warehouse"]
    assert failed["warehouse"]["detail"].startswith("s3://doctorbucket/wh: write failed: ")
    assert failed["warehouse"]["fix"].startswith(f"check s3.endpoint {endpoint}, the S3 keys")
    assert "'doctorbucket'" in failed["warehouse"]["fix"]


@pytest.fixture
def rest_s3(tmp_path: Path) -> Iterator[dict[str, Any]]:
    """The ``rest-s3`` profile's services (s3proxy, Iceberg's REST server) on free ports;
    its config's catalog section."""
    from icefloe.app.ops import dev

    root = tmp_path / "dev"
    try:
        yield dict(dev.up("rest-s3", root=root, free_ports=True).overlay["catalog"])
    finally:
        dev.down("rest-s3", root)


def test_everything_passes_on_rest_s3_and_no_key_is_printed(
    tmp_path: Path, rest_s3: dict[str, Any]
) -> None:
    properties = rest_s3["properties"]
    keys = [properties["s3.access-key-id"], properties["s3.secret-access-key"]]
    raw = config_raw(tmp_path)
    raw["catalog"] = {**raw["catalog"], **rest_s3}
    code, report = doctor(tmp_path, raw, keys)
    assert code == 0, report
    checks = by_name(report)
    assert checks["catalog"]["detail"].startswith(f"lake (rest, {rest_s3['uri']}): ")
    assert checks["warehouse"]["detail"] == (
        f"{rest_s3['warehouse']}: write, read, delete ok (PyArrowFileIO)"
    )
    bucket = tmp_path / "dev" / "rest-s3"
    assert probes_left(bucket) == []  # s3proxy keeps objects as files under its basedir
    code, table = doctor(tmp_path, raw, keys, as_json=False)
    assert code == 0 and "FAIL" not in str(table)

    bad = {**properties, "s3.secret-access-key": "wrong-" + os.urandom(8).hex()}
    raw["catalog"] = {**raw["catalog"], "properties": bad}
    code, report = doctor(tmp_path, raw, [*keys, bad["s3.secret-access-key"]])
    failed = {n: c for n, c in by_name(report).items() if not c["ok"]}
    assert code == 1 and list(failed) == ["warehouse"], report
    assert "the S3 keys" in failed["warehouse"]["fix"]
