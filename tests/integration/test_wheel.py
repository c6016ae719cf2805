"""The distribution: one import root, and a wheel that works without the checkout.

A wheel built from this checkout holds ``icefloe/`` only (every layer under it, its Lua
scripts, dashboard assets and log4j settings beside them); installed into a fresh venv
(its dependencies from the package index, as a user's ``pip install`` gets them), run from
a folder outside the checkout, it answers ``icefloe --help``, compacts a table with
``icefloe optimize`` and spark-submits an actor from its own copy of the script, which
takes the action ``icefloe decide --once`` queued.

The one thing it borrows is the jar cache (``ICEFLOE_JARS_DIR``: bootstrap's ``.jars/``);
without it Spark resolves the same artifacts from Maven Central.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
import venv
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from icefloe import LAYERS
from icefloe.base.catalog import spark_table_name
from icefloe.base.config import Config
from tests.support.config import REPO, config_raw
from tests.support.tree import copy_tree

pytestmark = [pytest.mark.spark, pytest.mark.integration]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel of the working tree, built in a copy: setuptools builds under the source's
    ``build/``, and a test writes only under its temp dirs."""
    source = copy_tree(tmp_path_factory.mktemp("source"))
    out = tmp_path_factory.mktemp("dist")
    pip = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"]
    subprocess.run([*pip, "-w", str(out), str(source)], check=True, capture_output=True)
    (built,) = out.glob("icefloe-*.whl")
    return built


def test_the_wheel_holds_one_import_root_and_every_layer(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as whl:
        names = whl.namelist()
        (top_level,) = [n for n in names if n.endswith(".dist-info/top_level.txt")]
        assert whl.read(top_level).decode().split() == ["icefloe"]
    info = top_level.split("/")[0]
    assert {n.split("/")[0] for n in names} == {"icefloe", info}
    for layer in LAYERS:
        assert f"icefloe/{layer}/__init__.py" in names, layer
    shipped = {n.removeprefix("icefloe/") for n in names if not n.endswith(".py")}
    for pattern in ("state/*/*.lua", "app/web/static/*"):
        assert {p.relative_to(REPO).as_posix() for p in REPO.glob(pattern)} <= shipped
    assert {"py.typed", "base/spark_log4j2.properties", "app/scripts/actor.py"} <= shipped | {
        n.removeprefix("icefloe/") for n in names
    }


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv (the base interpreter, nothing installed) with the wheel and its
    dependencies; its ``bin/``."""
    where = tmp_path_factory.mktemp("venv")
    venv.EnvBuilder(with_pip=False).create(where)
    python = where / "bin" / "python"
    install = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", str(wheel)]
    done = subprocess.run(install, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return where / "bin"


def _run(bin_dir: Path, cwd: Path, *argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    clean["PATH"] = f"{bin_dir}{os.pathsep}{clean.get('PATH', '')}"
    clean["ICEFLOE_JARS_DIR"] = str(REPO / ".jars")
    return subprocess.run(
        [str(bin_dir / argv[0]), *argv[1:]],
        cwd=cwd,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_the_installed_wheel_runs_without_the_checkout(
    installed: Path, tmp_path: Path, spark: Any, cfg: Config, catalog: Any
) -> None:
    where = _run(installed, tmp_path, "python", "-c", "import icefloe; print(icefloe.__file__)")
    assert where.returncode == 0, where.stderr
    assert Path(where.stdout.strip()).is_relative_to(installed.parent)
    assert not Path(where.stdout.strip()).is_relative_to(REPO)

    usage = _run(installed, tmp_path, "icefloe", "--help")
    assert usage.returncode == 0 and "optimize" in usage.stdout, usage.stderr

    space = f"wheel_{uuid.uuid4().hex[:8]}"
    catalog.create_namespace(space)
    raw = config_raw(tmp_path, managed={"namespaces": [space]})
    raw["catalog"] = {"uri": cfg.catalog.uri, "warehouse": cfg.catalog.warehouse}
    raw["redis"]["key_prefix"] = f"icefloe-{space}"  # a queue of its own
    conf = tmp_path / "icefloe.yaml"
    conf.write_text(yaml.safe_dump(raw))
    tables = {}
    for t in ("by_cli", "by_actor"):
        tables[t] = f"{space}.{t}"
        name = spark_table_name(cfg, tables[t])
        spark.sql(f"CREATE TABLE {name} (k INT, v STRING) USING iceberg")
        for i in range(3):
            spark.createDataFrame([(i, f"row-{i}")], "k int, v string").writeTo(name).append()

    optimized = _run(installed, tmp_path, "icefloe", "--config", str(conf), "optimize",
                     tables["by_cli"], "--json")  # fmt: skip
    assert optimized.returncode == 0, optimized.stderr[-3000:]
    report = json.loads(optimized.stdout)
    assert (report["files_rewritten"], report["files_added"]) == (3, 1)

    decided = _run(installed, tmp_path, "icefloe", "--config", str(conf), "decide", "--once")
    assert decided.returncode == 0, decided.stderr[-3000:]
    printed = _run(installed, tmp_path, "icefloe", "--config", str(conf), "submit", "--print",
                   "actor", "--idle-exit", "2")  # fmt: skip
    script = next(a for a in printed.stdout.split() if a.endswith("actor.py"))
    assert Path(script).is_relative_to(installed.parent), printed.stdout
    acted = _run(installed, tmp_path, "icefloe", "--config", str(conf), "submit", "actor",
                 "--idle-exit", "2")  # fmt: skip
    assert acted.returncode == 0, acted.stderr[-3000:]

    for t in tables.values():
        table = catalog.load_table(t)
        assert table.current_snapshot().summary.operation.value == "replace", t
        assert len(table.inspect.files()) == 1, t
        assert table.scan().to_arrow().num_rows == 3, t
