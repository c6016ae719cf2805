"""``icefloe sql-server``'s command line, exactly, and its secrets: never in argv, only in a
0600 properties file Java reads back as they were."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from icefloe.app.ops.sql_server import (
    CONNECT_CLASS,
    build_server_command,
    plan_server,
    properties_text,
    write_properties,
)
from icefloe.base import spark as spark_module
from icefloe.base.config import build_config
from icefloe.base.versions import EXTENSIONS_CLASS, jar_settings
from tests.support.config import config_raw

pytestmark = pytest.mark.unit


def test_command_in_documented_order() -> None:
    conf = {
        "spark.master": "local[2]",
        "spark.jars": "/j/a.jar,/j/b.jar",
        "spark.sql.extensions": "x.A,x.B",
        "spark.connect.grpc.binding.port": "15099",
    }
    assert build_server_command(conf, spark_submit="/s/spark-submit", properties_file="/p") == [
        "/s/spark-submit",
        "--master",
        "local[2]",
        "--class",
        CONNECT_CLASS,
        "--jars",
        "/j/a.jar,/j/b.jar",
        "--properties-file",
        "/p",
        "--load-spark-defaults",
        "--conf",
        "spark.connect.grpc.binding.port=15099",
        "--conf",
        "spark.sql.extensions=x.A,x.B",
        "spark-internal",
    ]
    packages = build_server_command({"spark.jars.packages": "g:a:1"})
    assert packages[:5] == ["spark-submit", "--master", "local[*]", "--class", CONNECT_CLASS]
    assert packages[5:7] == ["--packages", "g:a:1"] and packages[-1] == "spark-internal"


def test_the_plan_has_the_whole_conf_and_no_secret_in_argv(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    jars = tmp_path / "jars"
    jars.mkdir()
    (jars / "icefloe-spark-extensions-0.1.0.jar").write_bytes(b"")
    monkeypatch.setattr(spark_module, "jar_settings", lambda: jar_settings(jars))
    raw = config_raw(tmp_path)
    raw["catalog"] = {
        "uri": "postgresql+psycopg2://ice:s3cr3t-pw@db:5432/lake",
        "warehouse": "s3://bucket/wh",
        "properties": {"s3.secret-access-key": "k3y-s3cr3t", "s3.endpoint": "http://s3:9000"},
    }
    plan = plan_server(build_config(raw), 15099, env={"SPARK_HOME": "/opt/spark"})
    argv = plan.argv("/tmp/p.properties")
    assert argv[0] == "/opt/spark/bin/spark-submit" and argv[-1] == "spark-internal"
    assert not any("s3cr3t" in a for a in argv)
    assert plan.secrets == {
        "spark.sql.catalog.lake.jdbc.password": "s3cr3t-pw",
        "spark.sql.catalog.lake.s3.secret-access-key": "k3y-s3cr3t",
    }
    confs = dict(argv[i + 1].split("=", 1) for i, a in enumerate(argv) if a == "--conf")
    assert confs["spark.sql.extensions"].endswith(f",{EXTENSIONS_CLASS}")
    assert confs["spark.sql.catalog.lake.jdbc.user"] == "ice"
    assert confs["spark.sql.catalog.lake.s3.endpoint"] == "http://s3:9000"
    assert confs["spark.connect.grpc.binding.port"] == "15099"
    assert confs["spark.connect.grpc.binding.address"] == "127.0.0.1"
    assert confs["spark.sql.shuffle.partitions"] == "4"  # the config's own spark.conf
    assert argv[argv.index("--jars") + 1] == str(jars / "icefloe-spark-extensions-0.1.0.jar")
    assert plan.env == {"SPARK_HOME": "/opt/spark", "SPARK_LOCAL_IP": "127.0.0.1"}


def test_properties_are_escaped_for_java_and_private(tmp_path: Path) -> None:
    conf = {"k.pw": " a=b:c#d!e\\f\ng", "k.plain": "v"}
    assert properties_text(conf) == "k.plain=v\nk.pw=\\ a\\=b\\:c\\#d\\!e\\\\f\\ng\n"
    path = write_properties(conf, tmp_path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text() == properties_text(conf)
