"""Unit tests mirror the code: ``tests/unit/<folder>/test_<module>.py`` tests
``<folder>/<module>.py`` (or the package ``<folder>/<module>/__init__.py``), so a module's
tests are found without a grep.

A file on one aspect of a module that already has its plain test file is named
``test_<module>_<aspect>.py``: the longest ``_``-separated prefix of the name that names a
module counts. The folder starts with a layer (``LAYERS``) or ``bench`` (tests of
``bench/*.py``); the files directly in ``tests/unit/`` (whole-tree checks such as this one)
are exempt.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path, PurePosixPath

import pytest

from icefloe import LAYERS
from tests.support.config import REPO

pytestmark = pytest.mark.unit

UNIT = REPO / "tests" / "unit"
FOLDERS = (*LAYERS, "bench")


def mirrored(test: PurePosixPath, modules: Collection[PurePosixPath]) -> PurePosixPath | None:
    """The module ``test`` (a path under ``tests/unit/``) mirrors, from ``modules`` (the
    code's ``.py`` files, relative to the repository root), or None when it mirrors none."""
    folder = test.parent
    if not folder.parts or folder.parts[0] not in FOLDERS or not test.name.endswith(".py"):
        return None
    if not test.stem.startswith("test_"):
        return None
    words = test.stem.removeprefix("test_").split("_")
    for end in range(len(words), 0, -1):  # the longest prefix first
        name = "_".join(words[:end])
        if not name:
            continue
        for module in (folder / f"{name}.py", folder / name / "__init__.py"):
            if module in modules:
                return module
    return None


def _modules() -> frozenset[PurePosixPath]:
    return frozenset(
        PurePosixPath(p.relative_to(REPO).as_posix())
        for folder in FOLDERS
        for p in (REPO / folder).rglob("*.py")
    )


def offenders(unit: Path, modules: Collection[PurePosixPath]) -> list[str]:
    """The test files under ``unit`` (but not directly in it) that mirror none of
    ``modules``, relative to ``unit``."""
    tests = sorted(p.relative_to(unit).as_posix() for p in unit.rglob("test_*.py"))
    return [t for t in tests if "/" in t and mirrored(PurePosixPath(t), modules) is None]


EXAMPLE = frozenset(
    PurePosixPath(p)
    for p in (
        "base/submit.py",
        "base/verdicts.py",
        "base/config/__init__.py",
        "base/config/airflow_settings.py",
        "state/queue/__init__.py",
        "state/queue/redis.py",
        "optimizer/skew.py",
        "optimizer/skew_report.py",
        "optimizer/verdict.py",
        "bench/synthetic.py",
    )
)


@pytest.mark.parametrize(
    ("test", "module"),
    [
        ("base/test_submit.py", "base/submit.py"),
        ("base/test_config.py", "base/config/__init__.py"),  # a package: its __init__.py
        ("base/test_config_airflow.py", "base/config/__init__.py"),  # an aspect of it
        ("base/config/test_airflow_settings.py", "base/config/airflow_settings.py"),
        ("state/test_queue.py", "state/queue/__init__.py"),
        ("state/queue/test_redis.py", "state/queue/redis.py"),
        ("optimizer/test_skew_report_due.py", "optimizer/skew_report.py"),  # longest prefix
        ("optimizer/test_skew_hot_keys.py", "optimizer/skew.py"),
        ("optimizer/test_verdict_callers.py", "optimizer/verdict.py"),
        ("bench/test_synthetic.py", "bench/synthetic.py"),
    ],
)
def test_the_checker_finds_the_module_a_test_mirrors(test: str, module: str) -> None:
    assert mirrored(PurePosixPath(test), EXAMPLE) == PurePosixPath(module)


@pytest.mark.parametrize(
    "test",
    [
        "service/test_one_verdict_callers.py",  # the old home of a verdict test
        "optimizer/test_verdicts.py",  # base/verdicts.py is elsewhere; verdict.py is not it
        "base/test_sub.py",  # a prefix of a word is not a module
        "base/test_.py",
        "base/test_queue.py",  # state/queue, not base/queue
        "state/queue/test_memory.py",  # no such module
        "misc/test_submit.py",  # not a layer
        "test_submit.py",  # no folder
        "base/submit_test.py",  # not a test file
    ],
)
def test_the_checker_refuses_a_test_that_mirrors_nothing(test: str) -> None:
    assert mirrored(PurePosixPath(test), EXAMPLE) is None


def test_the_checker_reads_the_real_tree() -> None:
    modules = _modules()
    assert PurePosixPath("optimizer/verdict.py") in modules
    assert PurePosixPath("base/config/__init__.py") in modules
    assert mirrored(PurePosixPath("service/test_one_verdict_callers.py"), modules) is None
    assert mirrored(PurePosixPath("optimizer/test_verdict.py"), modules) == PurePosixPath(
        "optimizer/verdict.py"
    )


def test_the_walk_lists_only_the_tests_that_mirror_nothing(tmp_path: Path) -> None:
    for name in (
        "test_top.py",  # directly in tests/unit: exempt
        "base/test_submit.py",
        "base/test_config_airflow.py",
        "optimizer/reference_planner.py",  # a helper, not a test file
        "service/test_one_verdict_callers.py",
        "state/queue/test_memory.py",
    ):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    assert offenders(tmp_path, EXAMPLE) == [
        "service/test_one_verdict_callers.py",
        "state/queue/test_memory.py",
    ]


def test_every_unit_test_mirrors_a_module() -> None:
    bad = offenders(UNIT, _modules())
    assert not bad, (
        "move or rename these to tests/unit/<folder>/test_<module>[_<aspect>].py of the "
        "module they test:\n" + "\n".join(f"tests/unit/{t}" for t in bad)
    )
