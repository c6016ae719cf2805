"""The one reader of the tokens that guard icefloe's servers (``ui``, ``sql-server``): from
the first line of a file or from an environment variable, never from the command line
(the process list shows it), and always of a sane size and alphabet.

A token is a bearer token (RFC 6750's ``b64token``: letters, digits, ``-._~+/``, then
``=`` padding), :data:`MIN_TOKEN` to :data:`MAX_TOKEN` characters: a short one is guessed
by a scan, a huge one is not a token (and would be read whole into every request check).
"""

from __future__ import annotations

import os
import re
import secrets
from collections.abc import Mapping
from pathlib import Path

from icefloe.base.errors import UsageError
from icefloe.base.redact import register_secrets

MIN_TOKEN = 16
"""Characters a token needs at least, wherever it is read."""
MAX_TOKEN = 512
"""Characters a token may have at most (an HTTP header or gRPC metadata value holds it)."""
LINE_BOUND = 2 * MAX_TOKEN
"""Characters of a token file's first line read at most (a token and blanks around it)."""
TOKEN_SYNTAX = re.compile(r"[A-Za-z0-9._~+/-]+=*")


def new_token() -> str:
    """A fresh random token (43 URL-safe characters, 256 bits)."""
    return secrets.token_urlsafe(32)


def check_token(token: str, source: str) -> str:
    """``token`` if it is a token (:data:`MIN_TOKEN` to :data:`MAX_TOKEN` characters of
    :data:`TOKEN_SYNTAX`); else a :class:`UsageError` naming ``source``, never the token."""
    if len(token) < MIN_TOKEN:
        raise UsageError(f"the token of {source} is too short: {MIN_TOKEN} characters at least")
    if len(token) > MAX_TOKEN:
        raise UsageError(f"the token of {source} is too long: {MAX_TOKEN} characters at most")
    if not TOKEN_SYNTAX.fullmatch(token):
        raise UsageError(
            f"the token of {source} holds a character a bearer token cannot: use letters, "
            "digits and -._~+/ (e.g. python -c 'import secrets; print(secrets.token_urlsafe())')"
        )
    return token


def read_token_file(path: str | Path, option: str = "--token-file") -> str:
    """The token on the first line of ``path`` (surrounding blanks dropped), read no
    further than a token can go: a 50 MB one-line file is refused, not loaded."""
    source = f"{option} {path}"
    try:
        with open(path, encoding="utf-8") as f:
            line = f.readline(LINE_BOUND)
            cut = not line.endswith("\n") and f.read(1) not in ("", "\n")
    except UnicodeDecodeError:
        raise UsageError(f"{source}: not a text file") from None
    except OSError as e:
        raise UsageError(f"{source}: {e.strerror or e}") from None
    if cut:  # a first line past the bound: refused, never cut to a token of its start
        raise UsageError(f"the token of {source} is too long: {MAX_TOKEN} characters at most")
    token = line.strip()
    if not token:
        raise UsageError(f"{source}: its first line holds no token")
    register_secrets([token])  # never printed, even in the errors below
    return check_token(token, source)


def read_token(
    token_file: str | Path | None,
    env_var: str,
    env: Mapping[str, str] = os.environ,
    option: str = "--token-file",
) -> str | None:
    """The token of ``token_file``, else of ``$env_var`` (checked the same way), else None."""
    if token_file is not None:
        return read_token_file(token_file, option)
    value = env.get(env_var, "").strip()
    if not value:
        return None
    register_secrets([value])
    return check_token(value, f"${env_var}")


def refuse_token_option(token: str | None, env_var: str) -> None:
    """A hidden ``--token`` option exists only to say why it is refused."""
    if token is not None:
        raise UsageError(
            f"--token would show the token in the process list: put it in {env_var} or in "
            "a file for --token-file"
        )
