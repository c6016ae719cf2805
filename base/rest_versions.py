"""Has a table changed since we last saw it? On a REST catalog, one conditional request.

The Iceberg REST spec lets ``loadTable`` (``GET /v1/{prefix}/namespaces/{ns}/tables/{t}``)
send an ``ETag`` and answer ``304 Not Modified``, with no body, to a request whose
``If-None-Match`` holds the ETag of the table's current metadata. Iceberg's own server
(``RESTCatalogAdapter``, 1.11) does: its ETag is a hash of the metadata location and the
query parameters (``snapshots=refs`` gives another ETag than the default ``all``), compared
as an exact string (so it is sent back exactly as received, quotes or not). It still reads
the table's metadata to answer, so a 304 saves the transfer of the metadata JSON and its
parsing here, not the server's own read. A 304 carries no ETag: the one sent is still good.

These requests ask for an uncompressed answer (``Accept-Encoding: identity``): Jetty's
``CompressionHandler`` in front of Iceberg's server (``RESTCatalogServer``; icefloe's
``IcefloeRestServer`` too) turns the ETag of a gzipped answer into ``<etag>--gzip`` but does
not strip that suffix off the ``If-None-Match`` the servlet then compares, so an ETag got
with gzip never matches: every request would be a 200. Uncompressed, the ETag is the
server's own and 304s work; the cost is a 200's body sent unzipped (a changed table only).

:func:`conditional_load` makes that request with the RestCatalog's own session (its
authentication, headers, SSL, SigV4 and timeouts), URL (prefix, namespace separator) and
snapshot-loading mode, and builds a 200's Table exactly as ``RestCatalog.load_table`` does;
its errors are the ones ``load_table`` raises (``NoSuchTableError`` for a 404...). It leans
on PyIceberg 0.12's private RestCatalog API; any other catalog, or a PyIceberg without that
API, falls back to ``catalog.load_table`` with no ETag (None: always "changed").

A poll of every table passes one :class:`Settings`: requests' ``Session.request`` reads the
environment's proxies and CA bundle (every variable of ``os.environ``, twice) for every
request, a quarter of a conditional request's time in this process; :class:`Settings` reads
them once per scheme and host (every table of a catalog has the same) and the request is
prepared and sent as ``Session.request`` would with them.

Stable names: :func:`conditional_load`, :func:`is_rest`, :class:`Probe` (request counters),
:data:`PROBE` (the one every call counts in unless given its own), :class:`Settings`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from pyiceberg.table import Table

IF_NONE_MATCH = "If-None-Match"
ACCEPT_ENCODING = "Accept-Encoding"
IDENTITY = "identity"  # no compression: see the module
ETAG = "ETag"
NOT_MODIFIED = 304


@dataclass
class Probe:
    """What :func:`conditional_load` did: HTTP ``requests`` made (a retry after an expired
    token counts twice), answers ``not_modified`` (304) and ``loaded`` (200), ``fallbacks``
    (non-REST catalogs: one plain ``load_table`` each) and the response ``bytes`` read."""

    requests: int = 0
    not_modified: int = 0
    loaded: int = 0
    fallbacks: int = 0
    bytes: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, **counts: int) -> None:
        with self._lock:
            for name, n in counts.items():
                setattr(self, name, getattr(self, name) + n)

    def reset(self) -> None:
        with self._lock:
            self.requests = self.not_modified = self.loaded = self.fallbacks = self.bytes = 0


PROBE = Probe()


class Settings:
    """requests' settings from the environment (``Session.merge_environment_settings``:
    proxies, ``verify``, ``cert``, ``stream``) for a URL, read once per scheme and host."""

    def __init__(self) -> None:
        self._by_origin: dict[tuple[str, str], dict[str, Any]] = {}

    def of(self, session: Any, url: str) -> dict[str, Any]:
        origin = urlsplit(url)[:2]
        got = self._by_origin.get(origin)
        if got is None:  # two threads may both read it: the same settings
            got = session.merge_environment_settings(url, {}, None, None, None)
            self._by_origin[origin] = got
        return got


def conditional_load(
    catalog: Any,
    name: str,
    etag: str | None,
    probe: Probe | None = None,
    settings: Settings | None = None,
) -> tuple[str | None, Table | None]:
    """For a PyIceberg RestCatalog: load table ``name`` ("ns.table") unless the server says
    it is unchanged since ``etag``.

    Returns (the new etag, or None when the server sends none; the loaded Table, or None
    when the server answered 304). ``etag`` None: an ordinary load (and its ETag). Not a
    RestCatalog, or PyIceberg's private API missing: ``(None, catalog.load_table(name))``.
    Counts into ``probe`` (default :data:`PROBE`). ``settings``: the environment's, read
    once for many calls (None: read for this one, as ``Session.get`` does)."""
    probe = PROBE if probe is None else probe
    rest = _rest_api(catalog)
    if rest is None:
        probe.add(fallbacks=1)
        return None, catalog.load_table(name)
    # the same single retry as RestCatalog.load_table's: a refreshed token after a 401/419
    expired = (rest["AuthorizationExpiredError"], rest["UnauthorizedError"])
    try:
        return _get(catalog, rest, name, etag, probe, settings)
    except expired:
        catalog._refresh_token()
        return _get(catalog, rest, name, etag, probe, settings)


def is_rest(catalog: Any) -> bool:
    """Whether :func:`conditional_load` can make conditional requests to ``catalog``."""
    return _rest_api(catalog) is not None


def _rest_api(catalog: Any) -> dict[str, Any] | None:
    """PyIceberg's RestCatalog pieces this relies on, by name; None when ``catalog`` is not
    a RestCatalog or one of them is missing (another PyIceberg version)."""
    try:
        # pyiceberg: only when a catalog is used (and then tolerantly: private API)
        from pyiceberg.catalog import rest as rest_module
        from pyiceberg.catalog.rest.response import _handle_non_200_response
        from pyiceberg.exceptions import (
            AuthorizationExpiredError,
            NoSuchTableError,
            RESTError,
            UnauthorizedError,
        )
        from requests import HTTPError, Request
    except ImportError:
        return None
    cls = getattr(rest_module, "RestCatalog", None)
    if cls is None or not isinstance(catalog, cls):
        return None
    methods = ("url", "_split_identifier_for_path", "_response_to_table", "_refresh_token")
    if not all(callable(getattr(catalog, m, None)) for m in methods):
        return None
    if getattr(catalog, "_session", None) is None:
        return None
    try:
        return {
            "path": rest_module.Endpoints.load_table,
            "capability": rest_module.Capability.V1_LOAD_TABLE,
            "mode_key": rest_module.SNAPSHOT_LOADING_MODE,
            "TableResponse": rest_module.TableResponse,
            "HTTPError": HTTPError,
            "Request": Request,
            "handle": _handle_non_200_response,
            "NoSuchTableError": NoSuchTableError,
            "RESTError": RESTError,
            "AuthorizationExpiredError": AuthorizationExpiredError,
            "UnauthorizedError": UnauthorizedError,
        }
    except AttributeError:
        return None


def _get(
    catalog: Any,
    rest: dict[str, Any],
    name: str,
    etag: str | None,
    probe: Probe,
    settings: Settings | None,
) -> tuple[str | None, Table | None]:
    """One ``loadTable`` request, as ``RestCatalog.load_table`` makes it, conditional on
    ``etag``."""
    if hasattr(catalog, "_check_endpoint"):
        catalog._check_endpoint(rest["capability"])  # NotImplementedError, as load_table
    params = {}
    if mode := catalog.properties.get(rest["mode_key"]):
        if mode not in {"all", "refs"}:
            raise ValueError(f"Invalid snapshot-loading-mode: {mode}")  # as load_table
        params["snapshots"] = mode
    url = catalog.url(rest["path"], prefixed=True, **catalog._split_identifier_for_path(name))
    headers = {ACCEPT_ENCODING: IDENTITY, **({IF_NONE_MATCH: etag} if etag else {})}
    session = catalog._session
    if settings is None:
        response = session.get(url, params=params, headers=headers)
    else:  # what Session.get does, with the environment's settings read once
        request = session.prepare_request(rest["Request"]("GET", url, headers, params=params))
        response = session.send(request, allow_redirects=True, **settings.of(session, url))
    probe.add(requests=1, bytes=len(response.content))
    if response.status_code == NOT_MODIFIED:
        if not etag:  # a 304 answers only an If-None-Match (Iceberg's client refuses it too)
            raise rest["RESTError"](f"304 Not Modified without If-None-Match for {name}")
        probe.add(not_modified=1)
        return response.headers.get(ETAG) or etag, None
    try:
        response.raise_for_status()
    except rest["HTTPError"] as exc:
        rest["handle"](exc, {404: rest["NoSuchTableError"]})
    table_response = rest["TableResponse"].model_validate_json(response.text)
    table = catalog._response_to_table(catalog.identifier_to_tuple(name), table_response)
    probe.add(loaded=1)
    return response.headers.get(ETAG), table
