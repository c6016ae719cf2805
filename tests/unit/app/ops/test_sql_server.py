"""``icefloe sql-server``'s command line, exactly; its secrets never in argv nor in the
Spark conf a client reads back (#61.4), each delivered to the catalog another way; its
host validated and its client URL (#61.5, #61.6)."""

from __future__ import annotations

import socket
import stat
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icefloe.app.cli import main
from icefloe.app.ops.sql_server import (
    CONNECT_CLASS,
    TOKEN_ENV,
    Address,
    build_server_command,
    client_url,
    plan_server,
    resolve_host,
    write_private,
)
from icefloe.base import spark as spark_module
from icefloe.base.config import build_config
from icefloe.base.errors import UsageError
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
    assert build_server_command(conf, spark_submit="/s/spark-submit") == [
        "/s/spark-submit",
        "--master",
        "local[2]",
        "--class",
        CONNECT_CLASS,
        "--jars",
        "/j/a.jar,/j/b.jar",
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
    plan = plan_server(build_config(raw), 15099, env={"SPARK_HOME": "/opt/spark"}, token="t" * 20)
    argv = plan.argv()
    assert argv[0] == "/opt/spark/bin/spark-submit" and argv[-1] == "spark-internal"
    assert not any("s3cr3t" in a or "t" * 20 in a for a in argv)
    assert not any("s3cr3t" in v for v in plan.conf.values())  # what a client reads back
    assert plan.pgpass == "*:*:*:ice:s3cr3t-pw\n"
    assert plan.env == {
        "SPARK_HOME": "/opt/spark",
        "SPARK_LOCAL_IP": "127.0.0.1",
        "AWS_SECRET_ACCESS_KEY": "k3y-s3cr3t",
        TOKEN_ENV: "t" * 20,
    }
    confs = dict(argv[i + 1].split("=", 1) for i, a in enumerate(argv) if a == "--conf")
    assert confs == {k: v for k, v in plan.conf.items() if k not in ("spark.master", "spark.jars")}
    assert confs["spark.sql.extensions"].endswith(f",{EXTENSIONS_CLASS}")
    assert confs["spark.sql.catalog.lake.jdbc.user"] == "ice"
    assert "spark.sql.catalog.lake.jdbc.password" not in confs
    assert confs["spark.sql.catalog.lake.s3.endpoint"] == "http://s3:9000"
    assert confs["spark.connect.grpc.binding.port"] == "15099"
    assert confs["spark.connect.grpc.binding.address"] == "127.0.0.1"
    assert confs["spark.sql.shuffle.partitions"] == "4"  # the config's own spark.conf
    assert confs["spark.ui.enabled"] == "false"  # the test config's own; off by default too
    assert argv[argv.index("--jars") + 1] == str(jars / "icefloe-spark-extensions-0.1.0.jar")


def test_a_rest_catalog_reads_its_secrets_from_the_environment(tmp_path: Path) -> None:
    raw = config_raw(tmp_path)
    raw["catalog"] = {
        "type": "rest",
        "uri": "http://rest:8181",
        "warehouse": "s3://b/",
        "properties": {"credential": "id:s3cr3t", "s3.secret-access-key": "k3y-s3cr3t"},
    }
    plan = plan_server(build_config(raw), 15099, env={"SPARK_HOME": "/opt/spark"})
    refs = {k: v for k, v in plan.conf.items() if v.startswith("env:")}
    assert sorted(refs) == [
        "spark.sql.catalog.lake.credential",
        "spark.sql.catalog.lake.s3.secret-access-key",
    ]
    assert sorted(plan.env[v.removeprefix("env:")] for v in refs.values()) == [
        "id:s3cr3t",
        "k3y-s3cr3t",
    ]
    assert not any("s3cr3t" in v for v in plan.conf.values()) and TOKEN_ENV not in plan.env


def test_a_secret_with_no_way_around_the_conf_is_refused(tmp_path: Path) -> None:
    raw = config_raw(tmp_path)
    raw["catalog"]["properties"] = {"gcs.oauth2.token": "s3cr3t-token"}
    with pytest.raises(UsageError, match=r"cannot keep spark\.sql\.catalog\.lake\.gcs\.oauth2"):
        plan_server(build_config(raw), 15099, env={"SPARK_HOME": "/opt/spark"})


def test_private_files_are_0600(tmp_path: Path) -> None:
    path = write_private("*:*:*:u:p\n", tmp_path, ".pgpass")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text() == "*:*:*:u:p\n"


def test_hosts_resolve_to_the_address_spark_binds() -> None:
    assert resolve_host("localhost") == Address("127.0.0.1", socket.AF_INET)
    every = resolve_host("0.0.0.0")
    assert every.every_interface and not every.loopback and every.probe == "127.0.0.1"
    assert every.shown(15002) == "0.0.0.0:15002 (every interface)"
    assert resolve_host("::1").shown(15002) == "[::1]:15002"
    for bad in ("", " ", "no-such-host.invalid"):
        with pytest.raises(UsageError, match="--host"):
            resolve_host(bad)


def test_the_client_url_names_localhost_where_pyspark_sends_a_token_without_tls() -> None:
    loop = Address("127.0.0.1", socket.AF_INET)
    assert client_url(loop, 15002, "tok") == "sc://localhost:15002/;token=tok"
    assert client_url(Address("0.0.0.0", socket.AF_INET), 1, None) == "sc://localhost:1"
    assert client_url(Address("10.1.2.3", socket.AF_INET), 1, "t") == "sc://10.1.2.3:1/;token=t"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--host", ""], "--host is empty"),
        (["--host", "0.0.0.0", "--no-token"], "needs a token"),
        (["--token", "x" * 20], "process list"),
    ],
)
def test_bad_hosts_and_tokens_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], said: str
) -> None:
    config = tmp_path / "icefloe.yaml"
    config.write_text(f"catalog: {{uri: 'sqlite:///{tmp_path}/c.db'}}\n")
    with pytest.raises(SystemExit) as done:
        main(["--config", str(config), "sql-server", *args])
    err = capsys.readouterr().err
    assert done.value.code == 2 and said in err and err.count("\n") == 1, err


def _read_pgpass_line(line: str) -> list[str]:
    """A pgpass line's fields as libpq and PgJDBC read them: ``:`` separates, a backslash
    takes the next character as it is."""
    fields, field, chars = [], "", iter(line.removesuffix("\n"))
    for c in chars:
        if c == "\\":
            field += next(chars, "")
        elif c == ":":
            fields, field = [*fields, field], ""
        else:
            field += c
    return [*fields, field]


def _pg_delivery(tmp_path: Path, user: str, password: str) -> str | None:
    from icefloe.app.ops.sql_server import deliver_secrets

    cfg = build_config(config_raw(tmp_path))
    prefix = f"spark.sql.catalog.{cfg.catalog.name}."
    conf = {f"{prefix}uri": "jdbc:postgresql://db:5432/lake", f"{prefix}jdbc.user": user}
    return deliver_secrets(cfg, {f"{prefix}jdbc.password": password}, conf).pgpass


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(user=st.text(), password=st.text())
def test_a_pgpass_line_reads_back_as_the_user_and_password(
    tmp_path: Path, user: str, password: str
) -> None:
    """Any user and password: the line PgJDBC reads gives them back exactly, or one with a
    line break (which no pgpass line can hold) is refused with one line."""
    if any(c in user + password for c in "\r\n"):
        with pytest.raises(UsageError, match="line break"):
            _pg_delivery(tmp_path, user, password)
        return
    line = _pg_delivery(tmp_path, user, password)
    assert line is not None and line.endswith("\n") and line.count("\n") == 1
    assert _read_pgpass_line(line) == ["*", "*", "*", user, password]
