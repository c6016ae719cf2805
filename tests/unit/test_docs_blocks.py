"""The docs' code blocks: every shell and Python block of ``docs/**/*.md`` runs in a test
(``tests/integration/test_docs_examples.py``; the README's in ``test_demo_readme.py``), and
the few that cannot run say so. Here, without running them: each block's language is one
this module knows, a block shown but not run is a ``console`` block right after a
``<!-- not-run: reason -->`` line, no runnable block carries that mark, and every YAML
block that is an icefloe config is a valid one."""

from __future__ import annotations

import dataclasses
import re
import textwrap
from pathlib import Path

import pytest
import yaml

from icefloe.base.config import Config, build_config

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
RUN = ("bash", "python")  # run by the docs examples test
SHOWN = ("console", "text", "yaml", "json", "sql", "")  # shown only (yaml: validated here)
BLOCK = re.compile(
    r"^(?P<indent>[ \t]*)```(?P<lang>[a-z]*)\n(?P<body>.*?)^(?P=indent)```", re.M | re.S
)
NOT_RUN = re.compile(r"<!-- not-run: (?P<why>[^>]+?) -->")
MAX_NOT_RUN = 8  # blocks the tests cannot run, all the docs and the README together: few


@dataclasses.dataclass(frozen=True)
class Block:
    path: Path
    line: int
    lang: str
    body: str
    not_run: str  # the reason, or ""

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def doc_pages() -> list[Path]:
    return sorted((ROOT / "docs").rglob("*.md"))


def blocks(path: Path) -> list[Block]:
    text = path.read_text()
    found = []
    for m in BLOCK.finditer(text):
        before = text[: m.start()].rstrip().rsplit("\n", 1)[-1]
        mark = NOT_RUN.search(before)
        body = textwrap.dedent(m.group("body"))
        line = text.count("\n", 0, m.start()) + 1
        found.append(Block(path, line, m.group("lang"), body, mark.group("why") if mark else ""))
    return found


def runnable(*langs: str) -> list[Block]:
    """The blocks of ``langs`` that run, page by page, each page's in its order."""
    return [b for p in doc_pages() for b in blocks(p) if b.lang in langs and not b.not_run]


ALL = [b for p in [*doc_pages(), ROOT / "README.md"] for b in blocks(p)]


def test_the_block_finder_finds_indented_blocks_and_their_marks(tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    page.write_text(
        "<!-- not-run: a server -->\n```console\nicefloe ui\n```\n\n* x:\n\n"
        "  ```python\n  print(1)\n  ```\n"
    )
    found = [(b.lang, b.body, b.not_run) for b in blocks(page)]
    assert found == [("console", "icefloe ui\n", "a server"), ("python", "print(1)\n", "")]


@pytest.mark.parametrize("block", ALL, ids=lambda b: b.id)
def test_a_block_runs_or_says_why_not(block: Block) -> None:
    assert block.lang in RUN + SHOWN, f"{block.id}: unknown block language {block.lang!r}"
    if block.lang == "console":
        assert block.not_run, f"{block.id}: a console block needs <!-- not-run: reason -->"
    else:
        assert not block.not_run, f"{block.id}: only console blocks are shown and not run"


def test_the_blocks_not_run_are_few() -> None:
    assert len([b for b in ALL if b.not_run]) <= MAX_NOT_RUN


CONFIG_KEYS = set(Config.__pydantic_fields__)  # type: ignore[attr-defined]


@pytest.mark.parametrize("block", [b for b in ALL if b.lang == "yaml"], ids=lambda b: b.id)
def test_every_config_example_is_a_valid_config(block: Block) -> None:
    raw = yaml.safe_load(block.body)
    assert isinstance(raw, dict) and set(raw) <= CONFIG_KEYS, f"{block.id}: not an icefloe config"
    build_config(raw, source=block.id)
