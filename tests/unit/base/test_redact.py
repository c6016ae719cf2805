"""Nothing secret is printed: URLs are parsed, not pattern-matched."""

from __future__ import annotations

import pytest

from icefloe.base.config import build_config, parse_table_identifier
from icefloe.base.errors import UsageError
from icefloe.base.redact import display_url, is_secret_name

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("url", "secret", "shown"),
    [
        (
            "redis://127.0.0.1:6393/0?password=secret",
            "secret",
            "redis://127.0.0.1:6393/0?password=***",
        ),
        ("redis://:p@ss@host/0", "p@ss", "redis://:***@host/0"),
        ("rediss://user:pw:x@h:6380/1", "pw:x", "rediss://user:***@h:6380/1"),
        (
            "postgresql://u:s3cr3t@db/x?sslmode=require",
            "s3cr3t",
            "postgresql://u:***@db/x?sslmode=require",
        ),
        ("https://cat/api?token=abc&x=1", "abc", "https://cat/api?token=***&x=1"),
    ],
)
def test_display_url_drops_every_credential(url: str, secret: str, shown: str) -> None:
    assert display_url(url) == shown
    assert secret not in display_url(url)


def test_display_url_keeps_urls_without_credentials() -> None:
    for url in ("redis://127.0.0.1:6379/0", "unix:///tmp/redis.sock", "s3://bucket/wh"):
        assert display_url(url) == url


def test_redis_config_shows_the_display_url() -> None:
    cfg = build_config({"redis": {"url": "redis://:p@ss@127.0.0.1:6379/0"}})
    assert cfg.redis.redacted_url() == "redis://:***@127.0.0.1:6379/0"


def test_secret_names_are_masked_and_url_passwords_hidden() -> None:
    for name in ("s3.secret-access-key", "s3.access-key-id", "token", "jdbc.password"):
        assert is_secret_name(name), name
    for name in ("uri", "warehouse", "s3.endpoint"):
        assert not is_secret_name(name), name
    assert display_url("postgresql://u:pw@h/db") == "postgresql://u:***@h/db"
    for url in ("s3://b/w", "http://127.0.0.1:9000"):
        assert display_url(url) == url


@pytest.mark.parametrize("bad", ["db.t\n", "db.t ", "\ndb.t", "db..t", "db"])
def test_table_identifiers_match_whole(bad: str) -> None:
    with pytest.raises(UsageError):
        parse_table_identifier(bad)


def test_the_config_knows_its_secrets() -> None:
    cfg = build_config(
        {
            "redis": {"url": "redis://:redis-pw-1@127.0.0.1:6379/0"},
            "catalog": {
                "uri": "postgresql://ice:pg-pw-2@db/lake",
                "properties": {"s3.secret-access-key": "s3-key-3", "s3.endpoint": "http://x:9000"},
            },
        }
    )
    assert sorted(cfg.secret_values()) == ["pg-pw-2", "redis-pw-1", "s3-key-3"]


def test_registered_secrets_are_scrubbed_from_errors_and_logs() -> None:
    import io
    import logging

    from icefloe.base.redact import ScrubFilter, register_secrets, scrub

    register_secrets(["zq-secret-77", None, "ab"])  # too short to mask safely: "ab" stays
    assert scrub("auth failed for zq-secret-77 at ab") == "auth failed for *** at ab"
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(ScrubFilter())
    log = logging.getLogger("icefloe.test.scrub")
    log.addHandler(handler)
    try:
        log.error("connecting with %s failed", "zq-secret-77")
    finally:
        log.removeHandler(handler)
    assert stream.getvalue() == "connecting with *** failed\n"


def test_a_password_with_an_at_sign_is_masked_where_a_library_cut_it() -> None:
    """``postgresql://icefloe:hunter2@TailSecret99@127.0.0.1:6443/lake``: libpq takes the
    password up to the first ``@`` and names ``TailSecret99@127.0.0.1`` as the host."""
    from icefloe.base.redact import register_secrets, scrub

    url = "postgresql://icefloe:hunter2@TailSecret99@127.0.0.1:6443/lake"
    cfg = build_config({"catalog": {"uri": url}})
    register_secrets(cfg.secret_values())
    said = scrub("failed to resolve host 'TailSecret99@127.0.0.1': Name or service unknown")
    assert "TailSecret99" not in said and "hunter2" not in said
    assert said == "failed to resolve host '***@127.0.0.1': Name or service unknown"
    assert "TailSecret99" not in display_url(url) and "hunter2" not in display_url(url)


def test_cli_errors_are_scrubbed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from icefloe.app import cli as cli_module
    from icefloe.base.redact import register_secrets

    register_secrets(["zq-secret-88"])

    def failing(*_: object, **__: object) -> None:  # a library error quoting the password
        raise UsageError("the catalog said: bad password zq-secret-88")

    monkeypatch.setattr(cli_module.cli, "main", failing)
    with pytest.raises(SystemExit) as done:
        cli_module.main(["tables"])
    assert done.value.code == 2
    assert capsys.readouterr().err == "icefloe: error: the catalog said: bad password ***\n"


def test_service_logging_leaves_great_expectations_info_out() -> None:
    """Issue 28 item 10: an actor printed ~200 lines of Great Expectations logging per run:
    its INFO lines are left out from the start (before its import), its warnings stay."""
    import logging

    from icefloe.base.redact import service_logging

    child = logging.getLogger("great_expectations.data_context.types.base")
    child.setLevel(logging.INFO)  # as Great Expectations does on import
    service_logging()
    handlers = logging.getLogger().handlers
    assert handlers

    def shown(name: str, level: int) -> bool:
        record = logging.LogRecord(name, level, __file__, 1, "m", None, None)
        return all(h.filter(record) for h in handlers)

    assert not shown(child.name, logging.INFO) and not shown("great_expectations", logging.INFO)
    assert shown(child.name, logging.WARNING) and shown("icefloe.actor", logging.INFO)
