"""The executors' side of the cluster tests: a bare Python and the ``icefloe pack`` archive.

On a cluster node the executors' Python has PySpark (Spark ships it) and nothing else:
no PyIceberg, no pyarrow, no icefloe. :func:`make_bare_python` makes that Python here, a
fresh venv of this interpreter's base Python, which notes where it was started (its
``sitecustomize``), so a test can tell that the executors ran it. The fixtures
(``tests/integration/conftest.py``) build both once per test run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

_NOTE_START = """\
import json, os, sys
with open({log!r}, "a") as _log:
    _log.write(json.dumps({{"executable": sys.executable, "cwd": os.getcwd()}}) + "\\n")
"""


@dataclass(frozen=True)
class BarePython:
    python: str  # the interpreter (the venv's bin/python)
    starts_log: Path  # one JSON line per start: its sys.executable and working directory

    def starts(self) -> list[dict[str, Any]]:
        if not self.starts_log.exists():
            return []
        return [json.loads(line) for line in self.starts_log.read_text().splitlines()]


def make_bare_python(where: Path) -> BarePython:
    """A Python with nothing installed under ``where``: a fresh venv of this interpreter's
    base Python, checked to lack what the Arrow engine needs."""
    venv.EnvBuilder(with_pip=False, symlinks=True).create(where / "venv")
    python = where / "venv" / "bin" / "python"
    (site_packages,) = (where / "venv" / "lib").glob("python3*/site-packages")
    starts_log = where / "starts.jsonl"
    (site_packages / "sitecustomize.py").write_text(_NOTE_START.format(log=str(starts_log)))
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    for module in ("pyiceberg", "pyarrow", "jobs"):  # from "/", not from the project
        probe = subprocess.run(
            [python, "-c", f"import {module}"], capture_output=True, cwd="/", env=clean
        )
        assert probe.returncode != 0, f"the bare executor Python must not have {module}"
    bare = BarePython(str(python), starts_log)
    assert [s["executable"] for s in bare.starts()] == [str(python)] * 3  # it notes its starts
    starts_log.unlink()
    return bare


class PackedArchive:
    """``icefloe pack --output PATH --json``, the way users build the archive, started in
    the background (it takes one core for ~15 s: a cluster can start meanwhile).

    ``target`` is known at once (a config can name it); :meth:`path` waits for the build
    and checks what the command said about it."""

    def __init__(self, target: Path) -> None:
        self.target = target
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "icefloe", "pack", "--output", str(target), "--json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        self._built = False

    def path(self, timeout: float = 600) -> Path:
        if not self._built:
            out, err = self._proc.communicate(timeout=timeout)
            assert self._proc.returncode == 0, err
            packed = json.loads(out)
            path = self.target
            assert packed["archive"] == str(path) and packed["bytes"] == path.stat().st_size
            assert packed["config"] == {"spark": {"executor_deps": str(path)}}
            assert any(d.startswith("pyiceberg==") for d in packed["distributions"])
            self._built = True
        return self.target

    def stop(self) -> None:
        if self._proc.poll() is None:
            self._proc.kill()
        self._proc.communicate()
