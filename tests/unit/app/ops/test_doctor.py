"""The doctor's pure parts: which jars a catalog needs, each fix, the Spark master check."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from icefloe.app.ops.doctor import (
    catalog_fix,
    check_spark,
    check_warehouse,
    required_jars,
    warehouse_fix,
)
from icefloe.base.config import Config, build_config

pytestmark = pytest.mark.unit

RUNTIME = "iceberg-spark-runtime-4.1_2.13"
S3_PROPERTIES = {
    "io-impl": "org.apache.iceberg.aws.s3.S3FileIO",
    "s3.endpoint": "http://127.0.0.1:9000",
    "s3.access-key-id": "AKIDDOCTORUNIT",
    "s3.secret-access-key": "doctor-unit-secret",
}


EXT = "icefloe-spark-extensions"


def config(home: Path, **sections: Any) -> Config:
    return build_config(sections, source="<test>", home=home)


@pytest.mark.parametrize(
    ("catalog", "jars"),
    [
        ({}, [RUNTIME, EXT, "sqlite-jdbc"]),
        ({"uri": "postgresql+psycopg://u:pw@127.0.0.1:5433/db"}, [RUNTIME, EXT, "postgresql"]),
        (
            {"type": "rest", "uri": "http://127.0.0.1:8181", "warehouse": "s3://warehouse/"},
            [RUNTIME, EXT, "iceberg-aws-bundle"],
        ),
        ({"warehouse": "s3a://lake/wh"}, [RUNTIME, EXT, "sqlite-jdbc", "iceberg-aws-bundle"]),
        (
            {"type": "rest", "uri": "http://c", "warehouse": "lake", "properties": S3_PROPERTIES},
            [RUNTIME, EXT, "iceberg-aws-bundle"],
        ),
        ({"type": "rest", "uri": "http://c", "warehouse": "lake"}, [RUNTIME, EXT]),
    ],
)
def test_required_jars(tmp_path: Path, catalog: dict[str, Any], jars: list[str]) -> None:
    assert required_jars(config(tmp_path, catalog=catalog).catalog) == jars


def test_catalog_fix_names_the_sqlite_path(tmp_path: Path) -> None:
    cfg = config(tmp_path, catalog={"uri": "sqlite:///cat/catalog.db"})
    assert f"{tmp_path}/cat/catalog.db" in catalog_fix(cfg.catalog)


def test_catalog_fix_for_postgres_holds_no_password(tmp_path: Path) -> None:
    uri = "postgresql+psycopg://icefloe:pg-unit-pw@127.0.0.1:5433/icefloe"
    fix = catalog_fix(config(tmp_path, catalog={"uri": uri}).catalog)
    assert "is PostgreSQL running?" in fix and "`icefloe dev up --profile postgres`" in fix
    assert "pg-unit-pw" not in fix


def test_catalog_fix_for_rest_names_the_server_without_its_token(tmp_path: Path) -> None:
    uri = "https://user:rest-unit-pw@catalog.example:8181/api?token=tok-unit"
    fix = catalog_fix(config(tmp_path, catalog={"type": "rest", "uri": uri}).catalog)
    assert "is the REST server at https://user:***@catalog.example:8181/api?token=***" in fix
    assert "`icefloe dev up --profile rest-s3`" in fix
    assert "rest-unit-pw" not in fix and "tok-unit" not in fix


def test_warehouse_fix_for_s3_names_endpoint_and_bucket_not_keys(tmp_path: Path) -> None:
    catalog = {"warehouse": "s3://lakebucket/wh", "properties": S3_PROPERTIES}
    fix = warehouse_fix(config(tmp_path, catalog=catalog).catalog, "s3")
    assert "s3.endpoint http://127.0.0.1:9000" in fix and "'lakebucket'" in fix
    assert "s3.access-key-id" in fix
    assert "AKIDDOCTORUNIT" not in fix and "doctor-unit-secret" not in fix


def test_warehouse_fix_for_a_folder_names_it(tmp_path: Path) -> None:
    cfg = config(tmp_path, catalog={"warehouse": "file:wh"})
    fix = warehouse_fix(cfg.catalog, "file")
    assert f"make {tmp_path}/wh a folder" in fix and "permissions" in fix


def test_a_rest_warehouse_name_is_not_checked(tmp_path: Path) -> None:
    cfg = config(
        tmp_path, catalog={"type": "rest", "uri": "http://127.0.0.1:1", "warehouse": "lake"}
    )
    check = check_warehouse(cfg)
    assert check.ok and check.detail.startswith("lake: not checked")
    assert list(tmp_path.iterdir()) == []  # nothing written under the cwd or the home


@pytest.mark.parametrize(
    ("master", "detail"),
    [
        ("local[2]", "local[2]: in-process"),
        ("local-cluster[2,1,1024]", "local-cluster[2,1,1024]: a local cluster started in-process"),
        ("yarn", "yarn: not checked (yarn schedules the job)"),
        (
            "k8s://https://10.0.0.1:6443",
            "k8s://https://10.0.0.1:6443: not checked (k8s schedules the job)",
        ),
    ],
)
def test_masters_that_need_no_connection(tmp_path: Path, master: str, detail: str) -> None:
    check = check_spark(config(tmp_path, spark={"master": master}))
    assert check.ok and check.detail == detail and check.fix == ""


def test_a_malformed_master_fails(tmp_path: Path) -> None:
    check = check_spark(config(tmp_path, spark={"master": "spark://nohost"}))
    assert not check.ok and check.fix.startswith("set spark.master to local[*]")


def test_a_standalone_master_is_connected_to(tmp_path: Path) -> None:
    with socket.socket() as server, socket.socket() as closed:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        closed.bind(("127.0.0.1", 0))
        up, down = server.getsockname()[1], closed.getsockname()[1]
        ok = check_spark(config(tmp_path, spark={"master": f"spark://127.0.0.1:{up}"}))
        bad = check_spark(
            config(tmp_path, spark={"master": f"spark://127.0.0.1:{up},127.0.0.1:{down}"})
        )
    assert ok.ok and ok.detail.endswith("master answering")
    assert not bad.ok
    assert f"cannot connect to 127.0.0.1:{down}: ConnectionRefusedError" in bad.detail
    assert f"127.0.0.1:{up}:" not in bad.detail
    assert (
        "`spark-class org.apache.spark.deploy.master.Master --host 127.0.0.1 "
        f"--port {down}`" in bad.fix
    )
