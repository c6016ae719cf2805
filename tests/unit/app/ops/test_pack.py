"""The executors' archive: the dependency walk, what goes in, determinism, and the
Spark settings and environment that put it to use."""

from __future__ import annotations

import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest

from icefloe.app.ops.pack import build_archive, closure
from icefloe.base.config import build_config
from icefloe.base.errors import ConfigError, UsageError
from icefloe.base.spark import ARCHIVE_ALIAS, in_process_master, python_workers_env, spark_conf
from icefloe.base.submit import python_env
from icefloe.jobs.rewrite.java_errors import arrow_failure
from tests.support.config import REPO, base

pytestmark = pytest.mark.unit

ROOT = REPO


def names(roots: list[str]) -> set[str]:
    return {d.metadata["Name"].lower().replace("_", "-") for d in closure(roots)}


def test_closure_follows_requirements_and_extras() -> None:
    full = names(["pyiceberg[pyarrow,pyiceberg-core]"])
    assert {"pyiceberg", "pyarrow", "pyiceberg-core", "pydantic", "pydantic-core"} <= full
    assert not {"pyspark", "py4j", "pyspark-client"} & full  # Spark brings its own
    assert "great-expectations" not in full and "apache-airflow" not in full
    plain = names(["pyiceberg"])  # pyarrow is only an extra of pyiceberg
    assert "pyarrow" not in plain and "pyiceberg-core" not in plain
    assert plain < full


def _imports(module: str) -> set[str]:
    """Every module ``module``'s source imports at run time (``TYPE_CHECKING`` blocks left out)."""
    import ast

    tree = ast.parse((ROOT / (module.replace(".", "/") + ".py")).read_text())
    typing_only = {
        id(n)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
        for n in ast.walk(node)
    }
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
    return found


def test_the_archive_holds_everything_the_arrow_engine_imports() -> None:
    """Executors run ``icefloe.jobs.rewrite.arrow_engine`` with only the archive and Spark's own
    PySpark: every module it reaches (through icefloe's own, followed) must be the standard
    library's, a packed distribution's or one of the packed icefloe packages."""
    import importlib.metadata as md

    from icefloe.app.ops.pack import OWN_PACKAGES, PROVIDED

    packed = {_canonical(d.metadata["Name"]) for d in closure()} | set(PROVIDED)
    owners = md.packages_distributions()
    todo, seen, outside = ["icefloe.jobs.rewrite.arrow_engine"], set(), set()
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        top = module.split(".")[0]
        if any(module.startswith(own + ".") for own in OWN_PACKAGES):
            if (ROOT / (module.replace(".", "/") + ".py")).exists():
                todo.extend(_imports(module))
        elif top not in sys.stdlib_module_names:
            dists = {_canonical(d) for d in owners.get(top, [top])}
            if not dists & packed:
                outside.add(module)
    assert "icefloe.jobs.rewrite.arrow_deletes" in seen
    assert not outside, f"imported on the executors but not packed: {sorted(outside)}"


def _canonical(name: str) -> str:
    return name.lower().replace("_", "-")


def test_closure_names_a_missing_distribution() -> None:
    with pytest.raises(UsageError, match="no-such-dist"):
        closure(["no-such-dist"])


def test_archive_is_deterministic_and_holds_sources_not_bytecode(tmp_path: Path) -> None:
    one = build_archive(tmp_path / "a.tar.gz", roots=["cachetools"])
    two = build_archive(tmp_path / "b.tar.gz", roots=["cachetools"])
    assert one.path.read_bytes() == two.path.read_bytes()
    assert one.distributions == (f"cachetools=={closure(['cachetools'])[0].version}",)
    with tarfile.open(one.path) as tar:
        members = tar.getnames()
        assert "icefloe/jobs/rewrite/arrow_engine.py" in members
        assert "icefloe/optimizer/planner.py" in members and "icefloe/__init__.py" in members
        assert "cachetools/__init__.py" in members
        assert not any(
            m.endswith(".pyc") or m.startswith(("..", "/", "icefloe/service/", "icefloe/base/"))
            for m in members
        )
        source = tar.extractfile("icefloe/jobs/rewrite/arrow_engine.py")
        assert source is not None
        assert source.read() == (ROOT / "jobs" / "rewrite" / "arrow_engine.py").read_bytes()
    assert one.files == len(members)
    assert not list(tmp_path.glob("*.partial"))


def test_archive_name_must_be_a_tarball(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="tar.gz"):
        build_archive(tmp_path / "deps.zip")
    assert not list(tmp_path.iterdir())


def cluster_cfg(tmp_path: Path, master: str, deps: str | None, **conf: str) -> Any:
    raw = base()
    raw["spark"]["master"] = master
    raw["spark"]["conf"].update(conf)
    if deps is not None:
        raw["spark"]["executor_deps"] = deps
    return build_config(raw, home=tmp_path)


def test_spark_conf_ships_the_archive_to_cluster_executors(tmp_path: Path) -> None:
    archive = tmp_path / "dist" / "deps.tar.gz"
    archive.parent.mkdir()
    archive.write_bytes(b"x")
    cfg = cluster_cfg(
        tmp_path,
        "yarn",
        "dist/deps.tar.gz",  # relative: under the home
        **{"spark.archives": "s3://b/other.zip#other", "spark.executorEnv.PYTHONPATH": "other"},
    )
    conf = spark_conf(cfg, under_submit=True)
    assert conf["spark.archives"] == f"s3://b/other.zip#other,{archive}#{ARCHIVE_ALIAS}"
    assert conf["spark.executorEnv.PYTHONPATH"] == f"{ARCHIVE_ALIAS}:other"
    remote = spark_conf(cluster_cfg(tmp_path, "k8s://h:443", "s3://b/deps.tgz"))
    assert remote["spark.archives"] == f"s3://b/deps.tgz#{ARCHIVE_ALIAS}"
    # in-process executors run the driver's own Python: nothing to ship
    local = spark_conf(cluster_cfg(tmp_path, "local[2]", str(archive)))
    assert "spark.archives" not in local and "spark.executorEnv.PYTHONPATH" not in local


def test_executor_deps_errors_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="spark.executor_deps.*tar.gz"):
        cluster_cfg(tmp_path, "yarn", "deps.zip")
    with pytest.raises(ConfigError, match="non-empty string"):
        cluster_cfg(tmp_path, "yarn", "")
    missing = cluster_cfg(tmp_path, "yarn", "nope.tar.gz")
    with pytest.raises(ConfigError, match="no archive at .*nope.tar.gz.*icefloe pack"):
        spark_conf(missing)


def test_masters_and_python_env() -> None:
    assert in_process_master("local") and in_process_master("local[*]")
    assert not in_process_master("local-cluster[1,1,1024]") and not in_process_master("yarn")
    assert python_env("local[2]") == {
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "PYSPARK_PYTHON": sys.executable,
    }
    assert python_env("yarn") == {"PYSPARK_DRIVER_PYTHON": sys.executable}
    assert python_env("spark://m:7077", deploy_mode="cluster") == {}


def test_arrow_failure_names_the_python_cause() -> None:
    wrapped = (
        "Job aborted due to stage failure: Task 0 in stage 1.0 failed 4 times, most recent "
        "failure: Lost task 0.3 (TID 9) (127.0.0.1 executor 0): org.apache.spark.api.python."
        "PythonException: Traceback (most recent call last):\n"
        '  File "/x/worker.py", line 1, in main\n    func = read_command()\n'
        "ModuleNotFoundError: No module named 'pyiceberg'\n\n"
        "\tat org.apache.spark.api.python.BasePythonRunner.handle(PythonRunner.scala:600)\n"
        "Driver stacktrace:"
    )
    reason = arrow_failure(RuntimeError(wrapped))
    assert reason.startswith(
        "Python task failed on an executor: ModuleNotFoundError: No module named 'pyiceberg'"
    )
    assert "icefloe pack" in reason and "\n" not in reason
    assert arrow_failure(ValueError("bad value\nsecond line")) == "ValueError: bad value"
    other = arrow_failure(RuntimeError(wrapped.replace("ModuleNotFoundError", "OSError")))
    assert "OSError" in other and "icefloe pack" not in other


def test_python_workers_env_honours_the_conf_like_spark_submit() -> None:
    bare = {"spark.pyspark.python": "/opt/py/bin/python3"}
    assert python_workers_env("yarn", bare, {"PYSPARK_PYTHON": "x"}) == {
        "PYSPARK_PYTHON": "/opt/py/bin/python3"
    }
    assert python_workers_env("local[2]", {}, {}) == {"PYSPARK_PYTHON": sys.executable}
    assert python_workers_env("local[2]", {}, {"PYSPARK_PYTHON": "mine"}) == {}
    assert python_workers_env("local-cluster[1,1,1024]", {}, {}) == {}
