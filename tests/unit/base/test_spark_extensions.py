"""icefloe's SQL extension rides with its jar: every session, ``icefloe submit`` and the DAGs'
spark-submit name ``dev.icefloe.spark.IcefloeSparkExtensions`` in ``spark.sql.extensions``
exactly when the jar is among the jars they get (never a class Spark cannot load)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from icefloe.app.dags import support as dags_support
from icefloe.base import spark as spark_module
from icefloe.base import submit as submit_module
from icefloe.base import versions
from icefloe.base.config import build_config
from icefloe.base.spark import session_conf, spark_conf, submit_conf
from icefloe.base.submit import submit_command_for
from icefloe.base.versions import (
    ARTIFACTS,
    EXTENSIONS_CLASS,
    ICEBERG_EXTENSIONS_CLASS,
    JarSettings,
    extensions_jar,
    is_extensions_jar,
    jar_settings,
    sql_extensions,
)
from tests.support.config import config_raw

pytestmark = pytest.mark.unit

BOTH = f"{ICEBERG_EXTENSIONS_CLASS},{EXTENSIONS_CLASS}"
OURS = "icefloe-spark-extensions-0.1.0.jar"
SUBMITTED = {"PYSPARK_GATEWAY_PORT": "4040"}


def _jars_dir(tmp_path: Path, ours: bool) -> Path:
    folder = tmp_path / ("with" if ours else "without")
    folder.mkdir()
    for name in [a.jar for a in ARTIFACTS] + ([OURS] if ours else []):
        (folder / name).write_bytes(b"")
    return folder


@pytest.fixture(params=[True, False], ids=["with-jar", "without-jar"])
def ours(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> bool:
    """``.jars/`` with or without icefloe's jar, for every caller of ``jar_settings()``."""
    folder = _jars_dir(tmp_path, request.param)
    for module in (spark_module, submit_module, dags_support):
        monkeypatch.setattr(module, "jar_settings", lambda: jar_settings(folder))
    return bool(request.param)


def test_the_jar_name_comes_from_the_pom() -> None:
    name = extensions_jar()
    assert name.startswith("icefloe-spark-extensions-") and name.endswith(".jar")
    assert name == extensions_jar(versions.EXTENSIONS_POM)
    assert versions.main(["extensions-jar"]) == 0
    assert versions.main(["extensions-jar", "a", "b"]) == 2


def test_bootstrap_builds_the_jar_named_by_service_versions() -> None:
    script = (versions.PROJECT_ROOT / "scripts" / "bootstrap.sh").read_text()
    assert "python -m icefloe.base.versions extensions-jar" in script
    assert "build_extension jvm" in script


@pytest.mark.parametrize(
    ("jars", "expected"),
    [
        ([], ICEBERG_EXTENSIONS_CLASS),
        (["/j/iceberg-spark-runtime-4.1_2.13-1.12.0.jar"], ICEBERG_EXTENSIONS_CLASS),
        (["/j/iceberg.jar", f"/j/{OURS}"], BOTH),
        ([f"hdfs://nn/jars/{OURS}"], BOTH),
        (["/j/icefloe-spark-extensions-0.1.0.jar.part"], ICEBERG_EXTENSIONS_CLASS),
        (["/j/other-icefloe-spark-extensions-1.jar"], ICEBERG_EXTENSIONS_CLASS),
    ],
)
def test_sql_extensions_name_ours_only_with_its_jar(jars: list[str], expected: str) -> None:
    assert sql_extensions(jars) == expected
    assert JarSettings(tuple(jars), ()).sql_extensions == expected


def test_no_extension_when_spark_resolves_packages(tmp_path: Path) -> None:
    packages = jar_settings(tmp_path / "empty")
    assert packages.jars == () and packages.packages
    conf = spark_conf(build_config(config_raw(tmp_path)), jars=packages)
    assert conf["spark.sql.extensions"] == ICEBERG_EXTENSIONS_CLASS
    assert not is_extensions_jar(",".join(packages.packages))


def test_local_session_conf(ours: bool, tmp_path: Path) -> None:
    conf = spark_conf(build_config(config_raw(tmp_path)))
    assert conf["spark.sql.extensions"] == (BOTH if ours else ICEBERG_EXTENSIONS_CLASS)
    assert (OURS in conf["spark.jars"]) is ours


def test_submit_command_carries_the_jar_and_the_extension(ours: bool, tmp_path: Path) -> None:
    cfg = build_config(config_raw(tmp_path))
    argv = submit_command_for(cfg, "actor", ["--max-actions", "1"])
    jars = argv[argv.index("--jars") + 1].split(",")
    assert any(j.endswith(f"/{OURS}") for j in jars) is ours
    expected = BOTH if ours else ICEBERG_EXTENSIONS_CLASS
    assert f"spark.sql.extensions={expected}" in argv
    assert submit_conf(cfg)["spark.sql.extensions"] == expected


def test_the_dags_spark_submit_carries_the_jar_and_the_extension(
    ours: bool, tmp_path: Path
) -> None:
    path = tmp_path / "icefloe.yaml"
    path.write_text(yaml.safe_dump(config_raw(tmp_path)))
    kw = dags_support.spark_submit_kwargs("actor", path)
    assert (OURS in kw["jars"]) is ours
    assert kw["conf"]["spark.sql.extensions"] == (BOTH if ours else ICEBERG_EXTENSIONS_CLASS)


@pytest.mark.parametrize("submitted", [[f"file:/x/{OURS}", "file:/x/iceberg.jar"], []])
def test_a_driver_under_spark_submit_follows_the_submitted_jars(
    ours: bool, submitted: list[str], tmp_path: Path
) -> None:
    """Not ``.jars/`` of the driver's machine: the jars spark-submit gave it."""
    cfg = build_config(config_raw(tmp_path))
    conf = session_conf(cfg, env=SUBMITTED, submitted_jars=submitted)
    assert conf["spark.sql.extensions"] == (BOTH if submitted else ICEBERG_EXTENSIONS_CLASS)
    assert "spark.jars" not in conf and "spark.master" not in conf


def test_the_users_own_extensions_win(ours: bool, tmp_path: Path) -> None:
    raw = config_raw(tmp_path)
    raw["spark"]["conf"]["spark.sql.extensions"] = "com.example.Mine"
    assert spark_conf(build_config(raw))["spark.sql.extensions"] == "com.example.Mine"
