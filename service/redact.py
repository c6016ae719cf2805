"""The one place that turns a URL or a property map into a form safe to print.

URLs are parsed (``urllib.parse``), never pattern-matched: the password goes whatever it
holds (an ``@``, a ``:``), and so does any query parameter whose name says it is a secret
(``?password=…``, ``?token=…``). Every printer — ``doctor``, ``status``, log lines, error
messages — shows URLs and properties through these functions.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

MASK = "***"
SECRET_NAME = re.compile(r"password|passwd|secret|token|credential|key", re.IGNORECASE)


def is_secret_name(name: str) -> bool:
    """Whether a property or parameter name names a secret (``s3.secret-access-key``, ...)."""
    return SECRET_NAME.search(name) is not None


def display_url(url: str) -> str:
    """``url`` without credentials: the password and secret query values become ``***``."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:  # not a URL we can parse: show only its scheme
        return url.split(":", 1)[0] + ":" + MASK if ":" in url else MASK
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        user = parts.username or ""
        netloc = f"{user}:{MASK}@{host}" if password is not None else f"{userinfo}@{host}"
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    if netloc == parts.netloc and not any(is_secret_name(k) for k, _ in pairs):
        return url  # nothing to hide (and ``unix:///path`` keeps its slashes)
    query = urlencode([(k, MASK if is_secret_name(k) else v) for k, v in pairs], safe="*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def display_properties(properties: Mapping[str, str]) -> dict[str, str]:
    """``properties`` with the value of every secret-named key masked (URLs shown safely)."""
    out = {}
    for key, value in properties.items():
        if is_secret_name(key):
            out[key] = MASK
        elif "://" in str(value):
            out[key] = display_url(str(value))
        else:
            out[key] = str(value)
    return out
