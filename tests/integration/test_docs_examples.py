"""Every shell and Python block of ``docs/**/*.md``, run for real against a small demo
lakehouse (``icefloe demo --quick``: the demo's tables, uncompacted), in the order the pages
list them: a ``bash`` block by ``bash -euo pipefail`` from the repository root (so
``.venv/bin/icefloe`` is the one the pages name), a ``python`` block by this Python. Blocks
that cannot run are ``console`` blocks marked ``<!-- not-run: reason -->``
(``tests/unit/test_docs_blocks.py`` checks the marks). The README's blocks run in
``test_demo_readme.py``, against the whole demo."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from icefloe.base.config import PROJECT_ROOT
from tests.support.demo import run_demo
from tests.unit.test_docs_blocks import RUN, Block, runnable

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def docs_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    env, _ = run_demo(tmp_path_factory.mktemp("docs_home"), "icefloe-docs", "--quick")
    path = f"{PROJECT_ROOT / '.venv' / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
    return {**env, "PATH": path}


def _argv(block: Block) -> list[str]:
    if block.lang == "bash":
        return ["bash", "-euo", "pipefail", "-c", block.body]
    return [sys.executable, "-c", block.body]


@pytest.mark.parametrize("block", runnable(*RUN), ids=lambda b: b.id)
def test_docs_block_runs(docs_env: dict[str, str], block: Block) -> None:
    out = subprocess.run(
        _argv(block),
        cwd=PROJECT_ROOT,
        env=docs_env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert out.returncode == 0, (block.id, out.stdout[-2000:], out.stderr[-3000:])


def test_every_page_with_commands_is_covered() -> None:
    pages = {b.path.name for b in runnable(*RUN)}
    assert {"getting-started.md", "backends.md", "cli.md", "skew.md"} <= pages
