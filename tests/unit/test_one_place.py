"""What is decided or built in one place stays there (read from the code, as
``test_redis_boundary.py`` reads it for Redis calls):

* merge, sort or z-order for a partition's small files is chosen by
  :func:`icefloe.optimizer.verdict.rewrite_action` alone: no other module picks among the
  three (a conditional whose outcomes are those actions);
* an adapter of ``state/`` is constructed only in ``state/`` (``state/open.py`` builds
  them for everyone else).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from icefloe import LAYERS

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
CHOOSER = "optimizer/verdict.py"
REWRITES = frozenset({"merge", "sort", "zorder", "MERGE", "SORT", "ZORDER"})


def _outcome(node: ast.expr | None) -> bool:
    if isinstance(node, ast.Constant):
        return node.value in REWRITES
    return isinstance(node, ast.Name) and node.id in REWRITES


def _returns(body: list[ast.stmt]) -> bool:
    return any(isinstance(s, ast.Return) and _outcome(s.value) for s in body)


def choices(source: str) -> list[int]:
    """Lines where ``source`` picks a rewrite action: ``A if c else B`` or an ``if`` whose
    branches return one, with a rewrite action on both sides."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.IfExp) and _outcome(node.body) and _outcome(node.orelse):
            found.append(node.lineno)
        elif isinstance(node, ast.If) and _returns(node.body):
            if _returns(node.orelse) or _outcome(_next_return(source, node)):
                found.append(node.lineno)
    return found


def _next_return(source: str, node: ast.If) -> ast.expr | None:
    """The value of the ``return`` right after ``node`` in its block, if any."""
    for parent in ast.walk(ast.parse(source)):
        body = getattr(parent, "body", None)
        if not isinstance(body, list):
            continue
        lines = [s.lineno for s in body]
        if node.lineno in lines:
            i = lines.index(node.lineno)
            after = body[i + 1] if i + 1 < len(body) else None
            return after.value if isinstance(after, ast.Return) else None
    return None


def adapters_built(source: str) -> list[str]:
    """``line name`` of each call of a state adapter's class (``Redis*``, ``Memory*``,
    ``RollingStats``; not the boards and streams they share)."""
    shared = {"MemoryStream", "LeaderBoard", "ShardBoard"}
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            name = node.func.id
            if name in shared:
                continue
            if name == "RollingStats" or (name.startswith(("Redis", "Memory")) and name[6:7]):
                if name not in ("RedisError",):
                    found.append(f"{node.lineno} {name}")
    return found


def _product() -> list[Path]:
    return sorted(p for layer in LAYERS for p in (ROOT / layer).rglob("*.py"))


def test_the_finders_find_them() -> None:
    assert choices("x = ZORDER if z else MERGE\n") == [1]
    assert choices("def f(z):\n    if z:\n        return 'sort'\n    return 'merge'\n") == [2]
    assert choices("y = 'sort' if s else None\nif a:\n    return_it = 1\n") == []
    assert adapters_built("q = RedisQueue(c, k)\ns = RollingStats(c, k)\nb = LeaderBoard()\n") == [
        "1 RedisQueue",
        "2 RollingStats",
    ]


def test_only_the_verdict_picks_merge_sort_or_zorder() -> None:
    found = {
        rel: lines
        for p in _product()
        if (rel := p.relative_to(ROOT).as_posix()) != CHOOSER and (lines := choices(p.read_text()))
    }
    assert found == {}
    assert choices((ROOT / CHOOSER).read_text()), "the chooser itself is found"


def test_only_state_builds_adapters() -> None:
    found = {
        rel: built
        for p in _product()
        if not (rel := p.relative_to(ROOT).as_posix()).startswith("state/")
        and (built := adapters_built(p.read_text()))
    }
    assert found == {}
