"""``Steps``, the progress of ``optimize --all``, ``maintain`` and the demo: a bar on a
terminal, plain lines on stderr otherwise, nothing with ``--json``."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from icefloe.app.cli.common import Steps, describe_range

pytestmark = [pytest.mark.unit]


def test_plain_lines_on_stderr_when_not_a_terminal(capsys: Any) -> None:
    with Steps("optimize", 2) as steps:
        assert not steps.live
        steps.step("db.a")
        steps.say("a note")
        steps.step("db.b")
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == ["optimize: 1/2 db.a", "a note", "optimize: 2/2 db.b"]


def test_quiet_says_nothing(capsys: Any) -> None:
    with Steps("optimize", 1, quiet=True) as steps:
        steps.step("db.a")
        steps.say("a note")
    assert capsys.readouterr() == ("", "")


def test_a_bar_on_a_terminal(monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    with Steps("demo", 3) as steps:
        assert steps.live
        steps.step("round 1")
        steps.step("round 2")
        bar = steps._bar
        assert bar is not None
        (task,) = bar.tasks
        assert (task.completed, task.total, task.fields["label"]) == (2, 3, "round 2")
    assert "demo: 1/3" not in capsys.readouterr().err  # the bar, not plain lines


@pytest.mark.parametrize(
    ("bounds", "words"),
    [
        ((None, None), ""),
        ((1, None), "1 or more"),
        ((0, None, True), "more than 0"),
        ((None, 9), "at most 9"),
        ((1, 65535), "1 to 65535"),
        ((0, 1, True, False), "0 (excluded) to 1"),
    ],
)
def test_ranges_are_described_in_words(bounds: tuple[Any, ...], words: str) -> None:
    assert describe_range(*bounds) == words
