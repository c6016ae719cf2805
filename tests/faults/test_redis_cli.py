"""The command line with Redis down, and a long-running ``icefloe decide`` through two
outages (one at start-up, one while it runs).

Expected, for every command that needs Redis: one ``icefloe: error:`` line naming Redis
without its password (in the URL's user info or in its ``?password=`` query), exit code 1
(README: 1 = the operation failed), nothing else printed. ``decide`` as a service waits for
Redis at start-up and after an outage with the same back-off, one log line per attempt,
and hands the leader lease back when interrupted.
"""

from __future__ import annotations

import signal
import subprocess
import threading
import time
from typing import Any

import pytest
import yaml

from icefloe.base.keys import Keys
from icefloe.state.queue.redis import RedisQueue
from tests.faults.checks import Contents
from tests.faults.harness import (
    DAYS,
    REDIS_PASSWORD,
    append_rows,
    cli_env,
    icefloe_argv,
    make_table,
    run_cli_parallel,
)
from tests.support.config import part

pytestmark = [pytest.mark.faults, pytest.mark.redis]


def test_commands_with_redis_down_say_one_line_without_the_password(
    fault_env: Any, ledger: Any, tmp_path: Any
) -> None:
    env = fault_env
    name = f"{env.namespace}.events"
    table = make_table(env.catalog, name, days=DAYS[:1], files_per_day=2)
    before = ledger.contents(table)
    # the same config with the password in the URL's query instead of its user info
    query_raw = {
        **env.raw,
        "redis": {
            **env.raw["redis"],
            "url": f"redis://127.0.0.1:{env.server.port}/0?password={REDIS_PASSWORD}",
        },
    }
    query_config = tmp_path / "query-password.yaml"
    query_config.write_text(yaml.safe_dump(query_raw))

    env.server.kill()
    ledger.fault("redis down for the command line")
    selector = f"day={DAYS[0]}"
    commands = [
        ("decide", "--once"),
        ("status",),
        ("status", "--json"),
        ("actor", "--max-actions", "1", "--idle-exit", "0"),
        ("notify", name),
        ("request", name, "--partition", selector),
        ("--config", str(query_config), "decide", "--once", "--json"),
        ("--config", str(query_config), "status", "--json"),
        ("--config", str(query_config), "doctor", "--json"),
    ]
    *runs, doctor = run_cli_parallel(env.config_path, commands)
    for run in runs:
        line = ledger.cli_error(run, 1, match="redis")
        assert "unreachable" in line, line
    ledger.clean(doctor.output)  # a report, not an error line: failed checks, exit 1
    assert doctor.returncode == 1 and '"ok": false' in doctor.stdout, doctor.output[-2000:]

    env.server.restart()
    client = env.server.client()
    assert not client.keys(f"{env.keys.prefix}:*")  # nothing was written anywhere
    ledger.assert_intact(table, before)


class Follow:
    """A child process whose stderr is read line by line as it comes."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        self.lines: list[str] = []
        self.out: list[str] = []
        self._threads = [
            threading.Thread(target=self._read, args=(self.proc.stderr, self.lines), daemon=True),
            threading.Thread(target=self._read, args=(self.proc.stdout, self.out), daemon=True),
        ]
        for t in self._threads:
            t.start()

    @staticmethod
    def _read(stream: Any, into: list[str]) -> None:
        for line in stream:
            into.append(line)

    def wait_for(self, text: str, after: int = 0, timeout: float = 60.0) -> int:
        """Index of the first stderr line from ``after`` on that contains ``text``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for i, line in enumerate(self.lines[after:], start=after):
                if text in line:
                    return i
            assert self.proc.poll() is None, "".join(self.lines)[-3000:]
            time.sleep(0.05)
        raise AssertionError(f"no {text!r} in:\n{''.join(self.lines)[-3000:]}")

    def finish(self) -> int:
        code = self.proc.wait(timeout=60)
        for t in self._threads:
            t.join(timeout=10)
        return code

    @property
    def output(self) -> str:
        return "".join(self.out) + "".join(self.lines)


def wait_until(condition: Any, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_decide_service_backs_off_through_redis_outages(fault_env: Any, ledger: Any) -> None:
    env = fault_env
    name = f"{env.namespace}.events"
    table = make_table(env.catalog, name, days=DAYS[:1], files_per_day=2)
    expected = ledger.contents(table)
    env.server.kill()  # down before the service starts
    ledger.fault("redis down at decide start-up")
    decide = Follow(icefloe_argv(env.config_path, "decide"), cli_env(env.config_path))
    try:
        first = decide.wait_for("retrying in")
        decide.wait_for("retrying in", after=first + 1)  # still waiting, not exited
        env.server.restart()
        client = env.server.client()
        queue = RedisQueue(client, Keys(env.keys.prefix))
        wait_until(lambda: queue.depth()["ready"] == 1)  # it led and decided

        env.server.kill()  # and again while it runs
        ledger.fault("redis killed under a running decider")
        lost = decide.wait_for("decider: redis unreachable")
        decide.wait_for("retrying in", after=lost + 1)
        for start in (5000, 6000):  # two commits of a new day while Redis is down
            rows = append_rows(env.catalog.load_table(name), DAYS[1:2], start, rows_per_day=20)
            expected = expected + Contents.of_arrow(rows)
        env.server.restart()
        client = env.server.client()
        queue = RedisQueue(client, Keys(env.keys.prefix))
        wait_until(lambda: queue.depth()["ready"] == 2)  # the commits made meanwhile
    finally:
        if decide.proc.poll() is None:
            decide.proc.send_signal(signal.SIGINT)
        code = decide.finish()

    # interrupted: one line and exit 130 (docs/operating/cli.md: 130 = interrupted by Ctrl-C)
    assert code == 130, decide.output[-3000:]
    assert decide.lines[-1].strip() == "icefloe: interrupted", decide.output[-3000:]
    ledger.clean(decide.output)
    assert client.get(env.keys.leader) is None  # the lease was handed back
    ready = {raw.decode() for raw in client.zrange(env.keys.ready, 0, -1)}
    assert ready == {f"merge:{name}:{part(day=d)}" for d in DAYS[:2]}  # each once
    ledger.assert_intact(env.catalog.load_table(name), expected)
