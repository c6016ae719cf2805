"""``icefloe ui``'s token: read by the one token reader (``icefloe.app.cli.token``), so a
3-character token and a 50 MB one-line file are refused on any address (#61.9), in one
line, before anything listens."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from icefloe.app.cli import main
from icefloe.app.cli import ui as ui_module
from tests.support.config import config_raw

pytestmark = pytest.mark.unit


class Served(BaseException):
    """make_server was reached: the token was taken."""


@pytest.fixture()
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    import yaml

    def served(*args: Any) -> Any:
        raise Served(args[3])

    monkeypatch.setattr(ui_module, "make_server", served)
    monkeypatch.delenv("ICEFLOE_UI_TOKEN", raising=False)
    path = tmp_path / "icefloe.yaml"
    path.write_text(yaml.safe_dump(config_raw(tmp_path)))
    return path


def _ui(config: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[Any, str]:
    """``icefloe ui ARGS``: its exit code, or the Served it reached, and its stderr."""
    try:
        main(["--config", str(config), "ui", *args])
    except SystemExit as e:
        return e.code, capsys.readouterr().err
    except Served as e:
        return e, capsys.readouterr().err
    raise AssertionError("main returned")


@pytest.mark.parametrize("host", ["127.0.0.1", "0.0.0.0"])
@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("abc\n", "too short"),
        ("x" * 5_000_000, "too long"),
        ("a token with blanks!\n", "character"),
    ],
    ids=["3 characters", "a 5 MB line", "blanks"],
)
def test_a_bad_token_file_is_refused_on_any_host(
    config: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    host: str,
    text: str,
    said: str,
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(text)
    code, err = _ui(config, capsys, "--host", host, "--token-file", str(token_file))
    assert code == 2 and said in err and err.count("\n") == 1, err
    assert text.strip()[:20] not in err


def test_a_short_environment_token_is_refused_too(
    config: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ICEFLOE_UI_TOKEN", "abc")
    code, err = _ui(config, capsys)
    assert code == 2 and "ICEFLOE_UI_TOKEN" in err and "too short" in err, err


def test_a_good_token_reaches_the_server(
    config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("A-good-token_0123456789\nignored second line\n")
    served, err = _ui(config, capsys, "--host", "0.0.0.0", "--token-file", str(token_file))
    assert isinstance(served, Served), err
    assert served.args == ("A-good-token_0123456789",)
