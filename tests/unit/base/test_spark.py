"""The driver JVM icefloe starts logs to a file, not to the console: its log4j2 option is
added to the user's ``spark.driver.extraJavaOptions``, never in their place."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import pytest

from icefloe.base.config import Config, build_config
from icefloe.base.spark import DRIVER_JAVA_OPTIONS, LOG4J2_CONF, session_conf, submit_conf
from tests.support.config import base

pytestmark = pytest.mark.unit

OURS = f"-Dlog4j2.configurationFile={LOG4J2_CONF.as_uri()}"


def _cfg(java_options: str | None = None) -> Config:
    raw: dict[str, Any] = base()
    if java_options is not None:
        raw["spark"]["conf"][DRIVER_JAVA_OPTIONS] = java_options
    return build_config(raw)


def _options(conf: dict[str, str]) -> list[str]:
    """The JVM options as Spark's launcher splits them (whitespace, quotes, backslashes)."""
    return shlex.split(conf.get(DRIVER_JAVA_OPTIONS, ""))


def test_a_local_driver_logs_to_a_file(tmp_path: Path) -> None:
    log = tmp_path / "spark.log"
    assert _options(session_conf(_cfg(), env={}, log_file=log)) == [
        OURS,
        f"-Dicefloe.spark.log={log}",
    ]
    assert LOG4J2_CONF.is_file()


def test_the_users_java_options_are_kept_and_appended_to(tmp_path: Path) -> None:
    log = tmp_path / "a folder" / "spark.log"  # a space: quoted for the launcher
    cfg = _cfg('-XX:+UseG1GC -Dapp.name="my app"')
    conf = session_conf(cfg, env={}, log_file=log)
    assert _options(conf) == [
        "-XX:+UseG1GC",
        "-Dapp.name=my app",
        OURS,
        f"-Dicefloe.spark.log={log}",
    ]
    extra = {DRIVER_JAVA_OPTIONS: "-Dfrom.extra=1"}  # build_spark's extra replaces the file's
    assert _options(session_conf(cfg, extra, env={}, log_file=log))[:2] == ["-Dfrom.extra=1", OURS]


@pytest.mark.parametrize(
    "own", ["-Dlog4j2.configurationFile=/etc/spark/log4j2.xml", "-Dlog4j.configuration=x.props"]
)
def test_the_users_own_log4j_configuration_wins(tmp_path: Path, own: str) -> None:
    conf = session_conf(_cfg(f"-Xss4m {own}"), env={}, log_file=tmp_path / "spark.log")
    assert conf[DRIVER_JAVA_OPTIONS] == f"-Xss4m {own}"


def test_debug_and_spark_submit_leave_logging_alone(tmp_path: Path) -> None:
    cfg = _cfg("-Xss4m")
    debug = session_conf(cfg, env={"ICEFLOE_DEBUG": "1"}, log_file=tmp_path / "spark.log")
    assert debug[DRIVER_JAVA_OPTIONS] == "-Xss4m"
    submitted = {"PYSPARK_GATEWAY_PORT": "4040", "PYSPARK_GATEWAY_SECRET": "s"}
    under_submit = session_conf(cfg, env=submitted, log_file=tmp_path / "spark.log")
    assert under_submit[DRIVER_JAVA_OPTIONS] == "-Xss4m"
    assert "log4j" not in submit_conf(_cfg()).get(DRIVER_JAVA_OPTIONS, "")
