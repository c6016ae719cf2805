"""The one token reader: 16 to 512 characters of a bearer token's alphabet, from the first
line of a file or an environment variable, the same for ``ui`` and ``sql-server`` (#61.9)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from icefloe.app.cli.token import (
    MAX_TOKEN,
    MIN_TOKEN,
    TOKEN_SYNTAX,
    check_token,
    new_token,
    read_token,
    read_token_file,
)
from icefloe.base.errors import UsageError

pytestmark = pytest.mark.unit


def test_bounds_are_inclusive() -> None:
    assert check_token("a" * MIN_TOKEN, "x") == "a" * MIN_TOKEN
    assert check_token("a" * MAX_TOKEN, "x") == "a" * MAX_TOKEN
    for bad in ("a" * (MIN_TOKEN - 1), "a" * (MAX_TOKEN + 1), "a" * 20 + ";b", "é" * 20):
        with pytest.raises(UsageError, match="the token of x"):
            check_token(bad, "x")


def test_a_fresh_token_is_a_token() -> None:
    token = new_token()
    assert TOKEN_SYNTAX.fullmatch(token) and MIN_TOKEN <= len(token) <= MAX_TOKEN
    assert new_token() != token


def test_the_first_line_of_a_file_blanks_dropped(tmp_path: Path) -> None:
    path = tmp_path / "t"
    path.write_text("  Abc-def_0123456789+/==\r\nsecond\n")
    assert read_token_file(path) == "Abc-def_0123456789+/=="
    path.write_text("\nAbc-def_0123456789\n")
    with pytest.raises(UsageError, match="first line holds no token"):
        read_token_file(path)
    path.write_bytes(b"\xff" * 40)
    with pytest.raises(UsageError, match="not a text file"):
        read_token_file(path)


def test_a_line_one_past_the_maximum_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "t"
    path.write_text("a" * MAX_TOKEN + "\n")
    assert read_token_file(path) == "a" * MAX_TOKEN
    path.write_text("a" * (MAX_TOKEN + 1))
    with pytest.raises(UsageError, match="too long"):
        read_token_file(path)


def test_the_file_first_then_the_environment(tmp_path: Path) -> None:
    path = tmp_path / "t"
    path.write_text("from-the-file-0123456789\n")
    env = {"TOK": "from-the-environment-0123"}
    assert read_token(path, "TOK", env) == "from-the-file-0123456789"
    assert read_token(None, "TOK", env) == "from-the-environment-0123"
    assert read_token(None, "TOK", {"TOK": " "}) is None
    with pytest.raises(UsageError, match=r"\$TOK is too short"):
        read_token(None, "TOK", {"TOK": "abc"})


_TOKEN_CHARS = "ABCXYZabcxyz0189._~+/-"


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    token=st.text(_TOKEN_CHARS, min_size=MIN_TOKEN, max_size=MAX_TOKEN),
    before=st.text(" \t", max_size=8),
    after=st.text(" \t", max_size=8),
    end=st.sampled_from(["", "\n", "\r\n", "\nsecond line\n"]),
)
@example(token="a" * MAX_TOKEN, before=" " * 5, after="", end="\n")  # read as 510 characters
@example(token="a" * (MAX_TOKEN - 8), before=" " * 8, after=" " * 8, end="\r\n")
def test_a_token_file_gives_its_token_exactly_or_refuses(
    tmp_path: Path, token: str, before: str, after: str, end: str
) -> None:
    """Blanks around the token and any line ending: the token read is the one written, never
    a cut of it (a long token pushed past the read's bound by blanks was cut)."""
    path = tmp_path / "token"
    path.write_bytes(f"{before}{token}{after}{end}".encode())
    try:
        got = read_token_file(path)
    except UsageError as e:
        assert "too long" in str(e), e
        assert len(before + token + after) > MAX_TOKEN
    else:
        assert got == token
