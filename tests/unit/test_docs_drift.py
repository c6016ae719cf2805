"""What the docs name exists in the code, and what the code has the docs name: every
``spark.icefloe.*`` setting the SQL extension reads, every ``icefloe`` command, and every
option written after a command in a code span (``icefloe optimize T --json``)."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from icefloe.app.cli import cli
from icefloe.app.cli.submit import JOB_COMMANDS

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", ROOT / "jvm" / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
SETTING = re.compile(r"spark\.icefloe\.[A-Za-z.]*[A-Za-z]")


def _docs() -> str:
    return "\n".join(p.read_text() for p in DOCS)


def _spans(text: str) -> list[str]:
    """Inline code spans and the lines of fenced blocks."""
    fenced = re.findall(r"```[a-z]*\n(.*?)```", text, re.S)
    rest = re.sub(r"```.*?```", "", text, flags=re.S)
    return re.findall(r"`([^`\n]+)`", rest) + [line for b in fenced for line in b.splitlines()]


def command_options(span: str) -> list[tuple[tuple[str, ...], str]]:
    """``(command path, --option)`` for each option after ``icefloe CMD [SUB]`` in a span:
    the path is the words that name (sub)commands; ``submit JOB`` is the job's command."""
    found = []
    for m in re.finditer(r"\bicefloe ([^|;&]*)", span):
        words = m.group(1).split()
        path: list[str] = []
        group: click.Command = cli
        for w in words:
            if isinstance(group, click.Group) and w in group.commands:
                path.append(w)
                group = group.commands[w]
            elif path == ["submit"] and w in JOB_COMMANDS:
                path, group = list(JOB_COMMANDS[w]), _command(JOB_COMMANDS[w])
            elif not w.startswith("-"):
                continue
        found += [(tuple(path), o) for o in re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", m.group(1))]
    return [(p, o) for p, o in found if p]


def _command(words: tuple[str, ...]) -> click.Command:
    cmd: click.Command = cli
    for w in words:
        assert isinstance(cmd, click.Group)
        cmd = cmd.commands[w]
    return cmd


def _options(cmd: click.Command) -> set[str]:
    names = {o for p in cmd.params for o in [*getattr(p, "opts", []), *p.secondary_opts]}
    own = {o for c in (cli, cli.commands["submit"]) for p in c.params for o in p.opts}
    return names | own | {"--help"}


def test_the_option_finder_finds_them() -> None:
    assert command_options("icefloe optimize lake.db.t --json --dry-run") == [
        (("optimize",), "--json"),
        (("optimize",), "--dry-run"),
    ]
    assert command_options("icefloe submit actor_optimize db.t --json") == [
        (("optimize",), "--json")
    ]
    assert command_options("icefloe skew detect T --key k | jq .") == [
        (("skew", "detect"), "--key")
    ]
    assert command_options("run icefloe help") == []


def test_every_spark_icefloe_setting_named_is_read_and_every_one_read_is_named() -> None:
    java = "\n".join(p.read_text() for p in (ROOT / "jvm" / "src" / "main").rglob("*.java"))
    assert set(SETTING.findall(_docs())) == set(SETTING.findall(java))


def test_every_command_named_exists_and_every_command_is_named() -> None:
    named = set(re.findall(r"`icefloe ([a-z][a-z-]*)", _docs()))
    assert named == set(cli.commands)


def test_every_option_written_after_a_command_is_one_it_takes() -> None:
    wrong = set()
    for span in _spans(_docs()):
        for words, opt in command_options(span):
            if opt not in _options(_command(words)):
                wrong.add(f"icefloe {' '.join(words)} {opt}")
    assert wrong == set()
