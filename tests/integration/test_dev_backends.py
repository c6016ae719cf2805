"""``icefloe dev`` with the real servers: PostgreSQL 15, s3proxy and Iceberg's REST catalog
server, each started once for the module on free loopback ports in a temporary root."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.app.ops import dev
from icefloe.base.errors import ServiceUnavailable

pytestmark = pytest.mark.integration

BACKENDS = ("postgres", "rest-s3")


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("dev")
    yield path
    for profile in BACKENDS:
        dev.down(profile, path)
    pg_dir = dev.postgres_dir(path)
    if pg_dir is not None and not pg_dir.is_relative_to(path):  # root's cluster in /tmp
        shutil.rmtree(pg_dir, ignore_errors=True)


@pytest.fixture(scope="module")
def states(root: Path) -> dict[str, dev.DevState]:
    return {profile: dev.up(profile, root, free_ports=True) for profile in BACKENDS}


def _secrets(root: Path, profile: str) -> list[str]:
    state = json.loads((root / profile / "state.json").read_text())
    return list(state["secrets"].values())


def _icefloe(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "icefloe", "dev", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def _catalog(state: dev.DevState) -> Any:
    from pyiceberg.catalog import load_catalog

    c = state.overlay["catalog"]
    props = {"type": c["type"], "uri": c["uri"], "warehouse": c["warehouse"]}
    return load_catalog("lake", **props, **c.get("properties", {}))


@pytest.mark.parametrize("profile", BACKENDS)
def test_up_again_starts_nothing(root: Path, states: dict[str, dev.DevState], profile: str) -> None:
    first = states[profile]
    assert first.started == dev.SERVICES[profile]
    again = dev.up(profile, root, free_ports=True)
    assert again.started == ()
    assert [s.pid for s in again.services] == [s.pid for s in first.services]
    assert again.overlay == first.overlay
    assert all(s.running for s in dev.status(profile, root))
    for name in ("state.json", "icefloe.yaml"):
        assert (root / profile / name).stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize("profile", BACKENDS)
def test_pyiceberg_round_trip(states: dict[str, dev.DevState], profile: str) -> None:
    catalog = _catalog(states[profile])
    catalog.create_namespace_if_not_exists("ns")
    schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
    table = catalog.create_table_if_not_exists("ns.t", schema=schema)
    table.append(pa.table({"id": [1, 2, 3], "name": ["a", "b", "c"]}, schema=schema))
    rows = _catalog(states[profile]).load_table("ns.t").scan().to_arrow()
    assert sorted(rows.column("id").to_pylist())[-3:] == [1, 2, 3]


def test_cli_shows_where_services_listen_and_no_secret(
    root: Path, states: dict[str, dev.DevState]
) -> None:
    for profile in BACKENDS:
        up = _icefloe("up", "--profile", profile, "--root", str(root))
        status = _icefloe("status", "--profile", profile, "--root", str(root), "--json")
        assert up.returncode == 0 and status.returncode == 0, up.stderr + status.stderr
        for svc in states[profile].services:
            line = f"{svc.name:<8}  127.0.0.1:{svc.port}  pid {svc.pid}  log "
            assert line in up.stdout
        assert f"ICEFLOE_PROFILE={profile}" in up.stdout
        assert all(s["running"] for s in json.loads(status.stdout))
        for secret in _secrets(root, profile):
            assert secret not in up.stdout + up.stderr + status.stdout + status.stderr
            for log in (root / profile).glob("*.log"):
                assert secret not in log.read_text(errors="replace"), log


def test_a_taken_port_is_one_line_and_starts_nothing(
    tmp_path: Path, states: dict[str, dev.DevState]
) -> None:
    taken = states["postgres"].services[0].port
    with pytest.raises(ServiceUnavailable) as e:
        dev.up("postgres", tmp_path, ports={"postgres": taken})
    message = str(e.value)
    assert f"port {taken} " in message and "\n" not in message
    assert not any(secret in message for secret in _secrets(tmp_path, "postgres"))
    assert not dev.status("postgres", tmp_path)[0].running


def test_a_dead_service_is_restarted_on_its_port_and_data(
    root: Path, states: dict[str, dev.DevState]
) -> None:
    rest = states["rest-s3"].services[1]
    os.kill(rest.pid or 0, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while dev.status("rest-s3", root)[1].running and time.monotonic() < deadline:
        time.sleep(0.05)
    again = dev.up("rest-s3", root, free_ports=True)
    assert again.started == ("rest",)
    assert again.services[1].port == rest.port and again.services[1].pid != rest.pid
    assert again.services[0].pid == states["rest-s3"].services[0].pid
    assert _catalog(again).load_table("ns.t").scan().to_arrow().num_rows >= 3


def test_down_stops_everything_and_up_finds_the_data_again(
    root: Path, states: dict[str, dev.DevState]
) -> None:
    for profile in BACKENDS:
        out = _icefloe("down", "--profile", profile, "--root", str(root))
        assert out.returncode == 0 and "stopped (pid" in out.stdout
        status = _icefloe("status", "--profile", profile, "--root", str(root))
        assert status.returncode == 1 and "stopped" in status.stdout
        assert not any(s.running for s in dev.status(profile, root))
        for secret in _secrets(root, profile):
            assert secret not in out.stdout + status.stdout
    again = dev.up("postgres", root, free_ports=True)
    assert again.started == ("postgres",) and again.overlay == states["postgres"].overlay
    assert _catalog(again).load_table("ns.t").scan().to_arrow().num_rows >= 3


def test_down_without_a_profile_stops_whatever_the_root_runs(tmp_path: Path) -> None:
    """#61.15: ``dev down --root D`` stops the services the root runs, whichever profile
    started them (here rest-s3, with no ICEFLOE_PROFILE: the default is embedded), and says
    what it stopped; a second ``down`` finds nothing running."""
    env = {k: v for k, v in os.environ.items() if k != "ICEFLOE_PROFILE"}
    root = tmp_path / "root"
    try:
        up = subprocess.run(
            [sys.executable, "-m", "icefloe", "dev", "up", "--profile", "rest-s3"]
            + ["--root", str(root), "--free-ports"],
            capture_output=True,
            text=True,
            timeout=180,
            env=env,
        )
        assert up.returncode == 0, up.stderr
        pids = {s.name: s.pid for s in dev.status("rest-s3", root)}
        assert all(s.running for s in dev.status("rest-s3", root))
        down = subprocess.run(
            [sys.executable, "-m", "icefloe", "dev", "down", "--root", str(root)],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
        assert down.returncode == 0, down.stderr
        assert down.stdout.splitlines() == [
            f"rest-s3 rest: stopped (pid {pids['rest']})",
            f"rest-s3 s3proxy: stopped (pid {pids['s3proxy']})",
        ]
        assert not any(s.running for s in dev.status("rest-s3", root))
        again = subprocess.run(
            [sys.executable, "-m", "icefloe", "dev", "down", "--root", str(root)],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
        assert again.returncode == 0 and again.stdout.splitlines() == [
            "rest-s3 rest: not running",
            "rest-s3 s3proxy: not running",
        ], again.stdout
    finally:
        dev.down("rest-s3", root)
