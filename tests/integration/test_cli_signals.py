"""Every long-running command stops on SIGTERM cleanly (exit 0, its stop line, no
traceback) and on Ctrl-C the same or with 130 (#61.7): ``ui``, ``decide``, ``actor`` and
``sql-server``, each a real process: ``decide`` inside its loop (its own handler finishes
the step under way), ``actor`` once it runs, ``sql-server`` while its JVM starts."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from tests.support.config import REPO, config_raw

pytestmark = [pytest.mark.integration, pytest.mark.redis]


@pytest.fixture()
def config(tmp_path: Path, redis_client: object) -> Path:
    path = tmp_path / "icefloe.yaml"
    path.write_text(yaml.safe_dump(config_raw(tmp_path, managed={"namespaces": ["db"]})))
    return path


def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _signalled(
    config: Path,
    args: list[str],
    sig: signal.Signals,
    ready: Callable[[subprocess.Popen[str], str], bool],
) -> tuple[int, list[str]]:
    """Run ``icefloe ARGS``, send ``sig`` once ``ready(proc, stderr so far)``; its exit code
    and the non-blank lines of its stderr."""
    log = config.with_name(f"stderr-{args[0]}-{sig.name}.txt")
    with log.open("w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "icefloe", "--config", str(config), *args],
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=err,
            text=True,
        )
    try:
        deadline = time.monotonic() + 120
        while not ready(proc, log.read_text()):
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, f"not ready in 120 s: {log.read_text()}"
            time.sleep(0.1)
        proc.send_signal(sig)
        code = proc.wait(120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    lines = [line for line in log.read_text().splitlines() if line.strip()]
    assert not any("Traceback" in line for line in lines), lines
    return code, lines


def _said(text: str) -> Callable[[subprocess.Popen[str], str], bool]:
    return lambda proc, err: text in err


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_ui(config: Path, sig: signal.Signals) -> None:
    code, lines = _signalled(config, ["ui", "--port", "0"], sig, _said("icefloe ui: serving"))
    assert code == 0 and lines[1:] == ["icefloe ui: stopped"], lines


@pytest.mark.parametrize(("sig", "expected"), [(signal.SIGTERM, 0), (signal.SIGINT, 130)])
def test_decide_in_its_loop(config: Path, sig: signal.Signals, expected: int) -> None:
    code, lines = _signalled(config, ["decide", "--poll", "0.2"], sig, _said("observing shards"))
    stop = [line for line in lines if "observing shards" not in line]
    assert code == expected, lines
    said = "SIGTERM: finishing the work under way" if expected == 0 else "icefloe: interrupted"
    assert len(stop) == 1 and said in stop[0], lines


def _connected(proc: subprocess.Popen[str], err: str) -> bool:
    """The process has a socket open (Redis): its imports are done, main() runs."""
    try:
        fds = list(Path(f"/proc/{proc.pid}/fd").iterdir())
        return any(os.readlink(fd).startswith("socket:") for fd in fds)
    except OSError:
        return False


@pytest.mark.parametrize(("sig", "expected"), [(signal.SIGTERM, 0), (signal.SIGINT, 130)])
def test_actor(config: Path, sig: signal.Signals, expected: int) -> None:
    code, lines = _signalled(config, ["actor"], sig, _connected)
    assert code == expected, lines
    if expected == 130:
        assert lines == ["icefloe: interrupted"], lines
    else:  # before its loop: main's handler; inside: the loop's, after the action under way
        assert lines == ["icefloe: stopped (SIGTERM)"] or "stopping (SIGTERM)" in lines[-1], lines


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_sql_server_on_ctrl_c_while_its_jvm_starts(config: Path) -> None:
    code, lines = _signalled(
        config,
        ["sql-server", "--port", str(_free_port())],
        signal.SIGINT,
        lambda p, e: bool(_children(p.pid)),
    )
    assert code == 0 and lines == ["icefloe sql-server: stopped"], lines
