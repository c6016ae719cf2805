"""The one place that turns a URL or a property map into a form safe to print.

URLs are parsed (``urllib.parse``), never pattern-matched: the password goes whatever it
holds (an ``@``, a ``:``), and so does any query parameter whose name says it is a secret
(``?password=…``, ``?token=…``). Every printer — ``doctor``, ``status``, log lines, error
messages — shows URLs and properties through these functions.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

MASK = "***"
MIN_SECRET = 3  # shorter values would mask ordinary text
_secrets: set[str] = set()
SECRET_NAME = re.compile(r"password|passwd|secret|token|credential|key", re.IGNORECASE)
NOT_SECRET = re.compile(
    r"^skew_keys$|^icefloe\.skew\.hot-keys\.", re.IGNORECASE
)  # columns, not keys


def is_secret_name(name: str) -> bool:
    """Whether a property or parameter name names a secret (``s3.secret-access-key``, ...)."""
    return SECRET_NAME.search(name) is not None and NOT_SECRET.search(name) is None


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


def url_password(url: str) -> str | None:
    """The password in ``url``, if it carries one (in its user info or its query)."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return None
    query = [v for k, v in parse_qsl(parts.query) if is_secret_name(k)]
    return password or (query[0] if query else None)


MIN_SECRET_PART = 4  # a part of a secret (between its ``@`` or ``:``) masked on its own


def register_secrets(values: Iterable[str | None]) -> None:
    """Remember the config's secret values: :func:`scrub` masks them wherever they appear
    (a library's error message, a log line), whatever the text around them. A secret that
    holds ``@`` or ``:`` is also masked part by part: a URL's password with an ``@``
    (``postgresql://u:pw@rest@host``) is cut at its first ``@`` by some libraries, which
    then name ``rest@host`` as the host they could not resolve."""
    for v in values:
        if not v or len(v) < MIN_SECRET:
            continue
        _secrets.add(v)
        _secrets.update(p for p in re.split(r"[@:]", v) if len(p) >= MIN_SECRET_PART)


def scrub(text: str) -> str:
    """``text`` with every registered secret replaced by ``***``."""
    for secret in sorted(_secrets, key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text


class ScrubFilter(logging.Filter):
    """A logging filter that scrubs each record's message of registered secrets."""

    def filter(self, record: logging.LogRecord) -> bool:
        if _secrets:
            record.msg, record.args = scrub(record.getMessage()), None
        return True


QUIET_LOGGERS = ("py4j", "great_expectations")


def service_logging() -> None:
    """The long-running commands' logs (decider, actor): INFO lines with time and logger,
    secrets scrubbed; py4j's INFO line per connection closed and Great Expectations' ~200
    INFO lines per verified action left out (their warnings stay)."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    for chatty in QUIET_LOGGERS:
        logging.getLogger(chatty).setLevel(logging.WARNING)
    scrub_logs()
    for handler in logging.getLogger().handlers:  # GE sets INFO on its own child loggers
        if not any(isinstance(f, QuietFilter) for f in handler.filters):
            handler.addFilter(QuietFilter())


class QuietFilter(logging.Filter):
    """A handler filter that drops the records under WARNING of :data:`QUIET_LOGGERS` and
    their children, whatever level a library set on its child loggers."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.WARNING:
            return True
        return not any(record.name == q or record.name.startswith(q + ".") for q in QUIET_LOGGERS)


def scrub_logs() -> None:
    """Put :class:`ScrubFilter` on every handler of the root logger (a handler's filter sees
    the records of every logger, where a logger's own filter would not)."""
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, ScrubFilter) for f in handler.filters):
            handler.addFilter(ScrubFilter())
