"""The spark-submit argv builder, asserted exactly."""

from __future__ import annotations

from pathlib import Path

import pytest

from icefloe.base.errors import UsageError
from icefloe.base.submit import build_submit_command, job_script
from tests.support.config import REPO

pytestmark = [pytest.mark.unit]

JOBS = Path("/opt/icefloe/jobs/scripts")


def test_minimal_command() -> None:
    assert build_submit_command("actor_optimize", master="local[2]", jobs_dir=JOBS) == [
        "spark-submit",
        "--master",
        "local[2]",
        "/opt/icefloe/jobs/scripts/actor_optimize.py",
    ]


def test_full_command_in_documented_order() -> None:
    cmd = build_submit_command(
        "actor_optimize",
        master="spark://m:7077",
        deploy_mode="cluster",
        app_name="icefloe-actor-optimize",
        jars=["/j/iceberg.jar", "/j/sqlite.jar"],
        packages=["org.x:y:1"],
        py_files=["/p/icefloe.zip"],
        conf={
            "spark.sql.catalog.lake": "org.apache.iceberg.spark.SparkCatalog",
            "spark.executor.memory": "2g",
        },
        config_path="/etc/icefloe.yaml",
        args=["demo.events", "--partition", "day=2026-11-01", "--action", "sort", "--json"],
        spark_submit="/opt/spark/bin/spark-submit",
        jobs_dir=JOBS,
    )
    assert cmd == [
        "/opt/spark/bin/spark-submit",
        "--master",
        "spark://m:7077",
        "--deploy-mode",
        "cluster",
        "--name",
        "icefloe-actor-optimize",
        "--jars",
        "/j/iceberg.jar,/j/sqlite.jar",
        "--packages",
        "org.x:y:1",
        "--py-files",
        "/p/icefloe.zip",
        "--conf",
        "spark.executor.memory=2g",
        "--conf",
        "spark.sql.catalog.lake=org.apache.iceberg.spark.SparkCatalog",
        "/opt/icefloe/jobs/scripts/actor_optimize.py",
        "demo.events",
        "--partition",
        "day=2026-11-01",
        "--action",
        "sort",
        "--json",
        "--config",
        "/etc/icefloe.yaml",
    ]


def test_values_with_spaces_stay_one_argument() -> None:
    cmd = build_submit_command(
        "x.py", master="yarn", conf={"spark.driver.extraJavaOptions": "-Da=1 -Db=2"}
    )
    assert cmd == [
        "spark-submit",
        "--master",
        "yarn",
        "--conf",
        "spark.driver.extraJavaOptions=-Da=1 -Db=2",
        "x.py",
    ]


def test_job_script_names_and_paths() -> None:
    assert job_script("maintenance", JOBS) == "/opt/icefloe/jobs/scripts/maintenance.py"
    assert job_script("/somewhere/else.py", JOBS) == "/somewhere/else.py"


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"master": ""}, "bad Spark master"),
        ({"master": "local", "deploy_mode": "remote"}, "bad deploy mode"),
        ({"master": "local", "jars": ["a.jar,b.jar"]}, "bad jars entry"),
        ({"master": "local", "conf": {"a=b": "c"}}, "bad Spark conf key"),
        ({"master": "local", "packages": [""]}, "bad packages entry"),
    ],
)
def test_bad_values_are_usage_errors(kwargs: dict, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        build_submit_command("actor_optimize", **kwargs)


def test_bad_job_name() -> None:
    with pytest.raises(UsageError, match="bad job"):
        build_submit_command("../../etc/passwd", master="local")


def test_submit_command_for_takes_master_catalog_conf_and_jars_from_the_config(
    tmp_path: Path,
) -> None:
    from icefloe.base.config import build_config
    from icefloe.base.submit import submit_command_for

    cfg = build_config(
        {
            "catalog": {
                "name": "lake",
                "type": "sql",
                "uri": f"sqlite:///{tmp_path}/c.db",
                "warehouse": f"file://{tmp_path}/wh",
            },
            "redis": {"url": "redis://127.0.0.1:6379/15"},
            "spark": {"master": "spark://m:7077", "conf": {"spark.executor.memory": "2g"}},
            "defaults": {"target_file_size_bytes": 1 << 20, "tolerance_bytes": 0},
        },
        source="/etc/icefloe.yaml",
        home=tmp_path,
    )
    cmd = submit_command_for(cfg, "actor_optimize", args=["demo.events", "--json"])
    assert cmd[:5] == [
        "spark-submit",
        "--master",
        "spark://m:7077",
        "--name",
        "icefloe-actor-optimize",
    ]
    assert "--jars" in cmd or "--packages" in cmd
    confs = [cmd[i + 1] for i, a in enumerate(cmd) if a == "--conf"]
    keys = [c.split("=", 1)[0] for c in confs]
    assert keys == sorted(keys)
    assert "spark.sql.catalog.lake=org.apache.iceberg.spark.SparkCatalog" in confs
    assert "spark.executor.memory=2g" in confs
    assert not any(c.startswith("spark.master=") for c in confs)  # --master says it
    script = str(Path("app/scripts/actor_optimize.py").resolve())
    assert cmd[-5:] == [script, "demo.events", "--json", "--config", "/etc/icefloe.yaml"]


def test_one_list_of_artifacts_for_jars_and_packages(tmp_path: Path) -> None:
    from icefloe.base.versions import ARTIFACTS, ICEBERG_RUNTIME, jar_settings, main

    assert ICEBERG_RUNTIME in [a.coordinate for a in ARTIFACTS]
    empty = jar_settings(tmp_path / "none")
    assert empty.jars == () and empty.packages == tuple(a.coordinate for a in ARTIFACTS)
    assert empty.spark_conf() == {"spark.jars.packages": ",".join(empty.packages)}
    for a in ARTIFACTS:
        (tmp_path / a.jar).write_bytes(b"")
    local = jar_settings(tmp_path)
    assert local.packages == () and [Path(j).name for j in local.jars] == sorted(
        a.jar for a in ARTIFACTS
    )
    assert main(["maven-paths"]) == 0 and main(["nope"]) == 2
    assert ARTIFACTS[0].maven_path == (
        "org/apache/iceberg/iceberg-spark-runtime-4.1_2.13/1.12.0/"
        "iceberg-spark-runtime-4.1_2.13-1.12.0.jar"
    )


def test_bootstrap_reads_the_artifacts_from_service_versions() -> None:
    script = (REPO / "scripts" / "bootstrap.sh").read_text()
    assert "python -m icefloe.base.versions maven-paths" in script
    assert '.jar"' not in script  # no pinned jar path of its own


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["t", "--json", "--config", "/c.yaml"],
            ["--config", "/c.yaml", "skew", "detect", "t", "--json"],
        ),
        (["t", "--config=/c.yaml"], ["--config", "/c.yaml", "skew", "detect", "t"]),
        (["--config", "/a", "t", "--config", "/b"], ["--config", "/b", "skew", "detect", "t"]),
        (["t"], ["skew", "detect", "t"]),
        (["t", "--", "--config", "x"], ["skew", "detect", "t", "--", "--config", "x"]),
    ],
)
def test_scripts_move_config_in_front_of_the_command(args: list[str], expected: list[str]) -> None:
    from icefloe.app.scripts import cli_argv

    assert cli_argv(("skew", "detect"), args) == expected


def test_scripts_run_the_cli_and_return_its_exit_code(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from icefloe.app.scripts import salted_join, skew_detect

    assert skew_detect.main(["--help"]) == 0
    assert "--median-multiple" in capsys.readouterr().out
    assert salted_join.main(["a.b", "--into", "c.d"]) == 2  # --on missing: usage
    assert "--on" in capsys.readouterr().err
    missing = str(tmp_path / "missing.yaml")
    assert (
        salted_join.main(["a.b", "c.d", "--on", "k", "--into", "e.f", "--config", missing]) == 2
    )  # no such config


def test_a_client_driver_runs_this_python_when_the_conf_names_the_executors() -> None:
    """spark-submit starts the driver with spark.pyspark.python before PYSPARK_DRIVER_PYTHON:
    a conf that names the executors' Python gets the driver's pinned to this one."""
    import sys

    from icefloe.base.submit import driver_python_conf

    executors = {"spark.pyspark.python": "/opt/py/bin/python3"}
    pinned = {"spark.pyspark.driver.python": sys.executable}
    assert driver_python_conf(executors) == pinned
    assert driver_python_conf(executors, "client") == pinned
    assert driver_python_conf(executors, "cluster") == {}  # the driver runs on the cluster
    assert driver_python_conf({**executors, "spark.pyspark.driver.python": "/d/python"}) == {}
    assert driver_python_conf({}) == {}  # PYSPARK_DRIVER_PYTHON (python_env) is enough


def _cluster_config(tmp_path: Path, master: str) -> Path:
    import yaml

    path = tmp_path / "icefloe.yaml"
    raw = {
        "catalog": {"uri": f"sqlite:///{tmp_path}/c.db", "warehouse": f"file://{tmp_path}/wh"},
        "redis": {"url": "redis://127.0.0.1:6379/15"},
        "spark": {"master": master, "conf": {"spark.pyspark.python": "/opt/py/bin/python3"}},
    }
    path.write_text(yaml.safe_dump(raw))
    return path


def test_submit_command_for_pins_the_driver_python(tmp_path: Path) -> None:
    import sys

    from icefloe.base.config import load_config
    from icefloe.base.submit import submit_command_for

    cfg = load_config(_cluster_config(tmp_path, "spark://m:7077"), env={})

    def confs(cmd: list[str]) -> list[str]:
        return [cmd[i + 1] for i, a in enumerate(cmd) if a == "--conf"]

    client = confs(submit_command_for(cfg, "actor"))
    assert f"spark.pyspark.driver.python={sys.executable}" in client
    assert "spark.pyspark.python=/opt/py/bin/python3" in client
    cluster = confs(submit_command_for(cfg, "actor", deploy_mode="cluster"))
    assert not any(c.startswith("spark.pyspark.driver.python=") for c in cluster)


def test_submit_master_reaches_the_driver_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The driver loads the config file again: ``--master`` must win there too, or it
    decides for the file's master (a local one gives the executors this machine's Python)."""
    import subprocess

    from click.testing import CliRunner

    from icefloe.app.cli import cli
    from icefloe.base.config import load_config

    path = _cluster_config(tmp_path, "local[2]")
    ran: list[tuple[list[str], dict[str, str]]] = []

    def fake_run(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        ran.append((argv, env))
        return subprocess.CompletedProcess(argv, 0)

    monkeypatch.setattr(subprocess, "run", fake_run)
    argv = ["--config", str(path), "submit", "--master", "spark://m:7077", "actor"]
    result = CliRunner().invoke(cli, argv)
    assert result.exit_code == 0, result.output
    ((cmd, env),) = ran
    assert cmd[cmd.index("--master") + 1] == "spark://m:7077"
    assert load_config(path, env=env).spark.master == "spark://m:7077"
    assert load_config(path, env={}).spark.master == "local[2]"
