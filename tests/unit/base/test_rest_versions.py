"""``icefloe.base.rest_versions.Settings``: the environment's request settings read once per
scheme and host are the ones ``requests`` reads for each request of that host (proxies,
``NO_PROXY``, the CA bundle), so a poll's conditional requests go where ``Session.get``
would send them."""

from __future__ import annotations

import pytest
import requests

from icefloe.base.rest_versions import Settings

pytestmark = [pytest.mark.unit]


@pytest.mark.parametrize(
    "env",
    [
        {},
        {"HTTP_PROXY": "http://proxy:3128", "HTTPS_PROXY": "http://sproxy:3128"},
        {"HTTP_PROXY": "http://proxy:3128", "NO_PROXY": "catalog.internal"},
        {"REQUESTS_CA_BUNDLE": "/etc/ssl/mine.pem", "HTTPS_PROXY": "http://p:1"},
    ],
)
def test_settings_read_once_are_what_each_request_would_read(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str]
) -> None:
    for key in ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"):
        monkeypatch.delenv(key, raising=False)
        monkeypatch.delenv(key.lower(), raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    session, settings = requests.Session(), Settings()
    urls = [
        f"{base}/v1/namespaces/db/tables/t{i}"
        for base in ("http://catalog.internal:8181", "https://other.example", "http://[::1]:9")
        for i in range(3)
    ]
    for url in urls:
        assert settings.of(session, url) == session.merge_environment_settings(
            url, {}, None, None, None
        ), url
    assert len(settings._by_origin) == 3  # read once per scheme and host
