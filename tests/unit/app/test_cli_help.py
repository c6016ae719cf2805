"""Every command's ``--help`` renders, and says nothing a reader cannot use: no ``None``, no
range with a missing bound (``x<=None``, a range type without bounds), for every command of
the click tree and every job ``icefloe submit`` runs (#61.8)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import click
import pytest
from click.testing import CliRunner

from icefloe.app.cli import cli
from icefloe.app.cli.submit import SUBMITTABLE

pytestmark = pytest.mark.unit

ARTIFACTS = re.compile(r"\bNone\b|x<=|x>=|x<|x>")


def _paths(group: click.Group, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    yield prefix
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            yield from _paths(command, (*prefix, name))
        else:
            yield (*prefix, name)


HELP_PATHS = [*_paths(cli), *(("submit", job) for job in SUBMITTABLE)]


@pytest.mark.parametrize("path", HELP_PATHS, ids=" ".join)
def test_help_renders_without_artifacts(path: tuple[str, ...]) -> None:
    result = CliRunner().invoke(cli, [*path, "--help"], prog_name="icefloe")
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output
    found = [line.strip() for line in result.output.splitlines() if ARTIFACTS.search(line)]
    assert not found, f"icefloe {' '.join(path)} --help: {found}"


def test_the_walk_reaches_nested_and_submitted_commands() -> None:
    assert ("skew", "detect") in HELP_PATHS and ("submit", "salted_join") in HELP_PATHS
