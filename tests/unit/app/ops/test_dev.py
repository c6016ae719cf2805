"""``icefloe dev``'s pure parts: the overlays, the secrets, ports, profiles and the CLI's
choices (the servers themselves: tests/integration/test_dev_backends.py)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from icefloe.app.cli import cli
from icefloe.app.ops import dev
from icefloe.base.errors import ServiceUnavailable, UsageError
from icefloe.base.versions import S3PROXY, SERVER_ARTIFACTS, main

pytestmark = pytest.mark.unit

PORTS = {"postgres": 15433, "s3proxy": 19000, "rest": 18181}


def test_overlays_have_the_config_layers_keys(tmp_path: Path) -> None:
    pg = dev.overlay_for("postgres", tmp_path, PORTS, {"postgres_password": "pw-1"})
    assert pg == {
        "catalog": {
            "type": "sql",
            "uri": "postgresql+psycopg://icefloe:pw-1@127.0.0.1:15433/icefloe",
            "warehouse": f"file://{tmp_path.resolve()}/postgres/warehouse",
        }
    }
    s3 = {"s3_access_key": "AK", "s3_secret_key": "SK"}
    rest = dev.overlay_for("rest-s3", tmp_path, PORTS, s3)
    assert rest["catalog"] | {"properties": None} == {
        "type": "rest",
        "uri": "http://127.0.0.1:18181",
        "warehouse": "s3://warehouse/",
        "properties": None,
    }
    assert rest["catalog"]["properties"] == {
        "io-impl": "org.apache.iceberg.aws.s3.S3FileIO",
        "s3.endpoint": "http://127.0.0.1:19000",
        "s3.path-style-access": "true",
        "s3.access-key-id": "AK",
        "s3.secret-access-key": "SK",
        "s3.region": "us-east-1",
        "client.region": "us-east-1",
    }
    # YAML keeps "true" a string: the config's property map holds strings
    assert yaml.safe_load(yaml.safe_dump(rest)) == rest
    assert dev.overlay_for("embedded", tmp_path, {}, {}) == {}


def test_secrets_are_random_and_url_safe() -> None:
    a, b = dev.new_secrets("postgres"), dev.new_secrets("postgres")
    assert a != b and len(a["postgres_password"]) >= 24
    s3 = dev.new_secrets("rest-s3")
    assert set(s3) == {"s3_access_key", "s3_secret_key"}
    for value in [*a.values(), *s3.values()]:
        assert all(c.isalnum() or c in "-_" for c in value)
    assert dev.new_secrets("embedded") == {}


def test_profiles_and_paths(tmp_path: Path) -> None:
    assert dev.PROFILES == ("embedded", "postgres", "rest-s3")
    assert dev.overlay_path("postgres", tmp_path) == tmp_path.resolve() / "postgres/icefloe.yaml"
    with pytest.raises(UsageError, match="unknown profile 'mysql'"):
        dev.up("mysql", tmp_path)


def test_embedded_has_no_services(tmp_path: Path) -> None:
    state = dev.up("embedded", tmp_path)
    assert state.services == () and state.overlay == {}
    assert yaml.safe_load(dev.overlay_path("embedded", tmp_path).read_text()) == {}
    assert dev.status("embedded", tmp_path) == []
    assert dev.down("embedded", tmp_path) == ["embedded: no services"]


def test_nothing_recorded_is_not_running(tmp_path: Path) -> None:
    assert dev.status("rest-s3", tmp_path) == [
        dev.ServiceStatus("s3proxy", None, "-", False),
        dev.ServiceStatus("rest", None, "-", False),
    ]
    assert dev.down("postgres", tmp_path) == ["postgres: not running"]


def test_a_taken_port_is_one_line_naming_it() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ServiceUnavailable) as e:
            dev._port_for("postgres", None, False, {"postgres": port})
    assert f"port {port} " in str(e.value) and "\n" not in str(e.value)


def test_cli_profile_defaults_to_the_environment(tmp_path: Path) -> None:
    runner = CliRunner()
    args = ["dev", "status", "--root", str(tmp_path)]
    out = runner.invoke(cli, args, env={"ICEFLOE_PROFILE": "embedded"})
    assert out.exit_code == 0 and "embedded: no services" in out.output
    out = runner.invoke(cli, args, env={"ICEFLOE_PROFILE": "postgres"})
    assert out.exit_code == 1 and "postgres" in out.output and "stopped" in out.output
    out = runner.invoke(cli, [*args, "--profile", "mysql"])
    assert out.exit_code == 2


def test_server_jars_are_listed_apart_from_sparks(capsys: pytest.CaptureFixture[str]) -> None:
    assert SERVER_ARTIFACTS == (S3PROXY,)
    assert S3PROXY.jar == "s3proxy-4.1.0-jar-with-dependencies.jar"
    assert main(["server-maven-paths"]) == 0
    assert capsys.readouterr().out.strip() == (
        "org/gaul/s3proxy/4.1.0/s3proxy-4.1.0-jar-with-dependencies.jar"
    )


def test_free_ports_moves_a_recorded_port_another_process_took(tmp_path: Path) -> None:
    """Issue 28 item 10: the hint said `--free-ports`, which kept the taken recorded port."""
    from icefloe.app.ops.servers import Service

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        svc = Service("postgres", 1, "127.0.0.1", port, tmp_path / "log", "marker")
        moved = dev._port_for("postgres", svc, True, {})
        assert moved != port
        with pytest.raises(ServiceUnavailable) as e:  # without the flag: what to do
            dev._port_for("postgres", svc, False, {})
        assert "--free-ports" in str(e.value)
        with pytest.raises(ServiceUnavailable) as e:  # another service knows the old port
            dev._port_for("postgres", svc, True, {}, alone=False)
        assert "dev down" in str(e.value)
