"""Table locations compared: may orphan removal on one table delete another table's files?

Orphan removal lists every file under a table's location and deletes those its own
metadata does not reference. A second table whose files lie under that location (the same
location, as a ``register_table`` clone has; one nested inside it; or one it is nested
in) has its data, manifests and metadata taken for orphans. :func:`shared_location_hold`
is the decision: None when the location is the table's alone (or every table sharing it
is explicitly allowed), else the one-line reason orphan removal must not run.

Locations are compared normalized (:func:`normalize_location`): scheme and authority
lower-cased, ``s3a``/``s3n`` read as ``s3``, ``file:/x``, ``file:///x``,
``file://localhost/x`` and a bare ``/x`` as one, repeated and trailing slashes and ``.``
segments dropped (``..`` resolved on local paths). Overlap is by whole path segments:
``/w/db/t`` holds ``/w/db/t/data`` but not ``/w/db/t2``. Pure: no I/O.
"""

from __future__ import annotations

import posixpath
from collections.abc import Collection, Mapping, Sequence

SCHEME_ALIASES = {"s3a": "s3", "s3n": "s3", "wasbs": "wasb", "abfss": "abfs"}


def _parts(location: str) -> tuple[str, str, tuple[str, ...]]:
    """(scheme, authority, path segments) of a location, normalized."""
    loc = location.strip()
    scheme, sep, rest = loc.partition(":")
    if not sep or "/" in scheme or not scheme:  # a bare path: the local file system
        scheme, rest = "file", loc
    scheme = SCHEME_ALIASES.get(scheme.lower(), scheme.lower())
    if rest.startswith("//"):
        authority, slash, path = rest[2:].partition("/")
        path = slash + path
    else:
        authority, path = "", rest
    authority = authority.lower()
    if scheme == "file":
        authority = "" if authority == "localhost" else authority
        path = posixpath.normpath("/" + path.lstrip("/")) if path else "/"
    segments = tuple(s for s in path.split("/") if s and s != ".")
    return scheme, authority, segments


def normalize_location(location: str) -> str:
    """One spelling per location: ``scheme://authority/seg/seg`` (no trailing slash)."""
    scheme, authority, segments = _parts(location)
    return f"{scheme}://{authority}/" + "/".join(segments)


def locations_overlap(a: str, b: str) -> bool:
    """Equal, or one holds the other (a prefix on a path-segment boundary)."""
    sa, aa, pa = _parts(a)
    sb, ab, pb = _parts(b)
    if (sa, aa) != (sb, ab):
        return False
    n = min(len(pa), len(pb))
    return pa[:n] == pb[:n]


def sharing_tables(location: str, others: Mapping[str, Sequence[str]]) -> dict[str, str]:
    """The tables among ``others`` (name → the roots its files are written under: its
    location, ``write.data.path``, ...) with a root overlapping ``location``: name → that
    root."""
    found = {}
    for name, roots in sorted(others.items()):
        hit = next((r for r in roots if r and locations_overlap(location, r)), None)
        if hit is not None:
            found[name] = hit
    return found


def shared_location_hold(
    location: str,
    others: Mapping[str, Sequence[str]],
    unreadable: Mapping[str, str],
    allowed: Collection[str] = (),
) -> str | None:
    """Why orphan removal on the table at ``location`` must not run, or None.

    ``others``: every other table of the catalog, name → roots; ``unreadable``: tables
    whose location could not be read, name → the error (unknown, so held: the safe side);
    ``allowed``: tables the policy or the operator allowed to share the location."""
    shared = {n: r for n, r in sharing_tables(location, others).items() if n not in allowed}
    unknown = {n: e for n, e in sorted(unreadable.items()) if n not in allowed}
    if not shared and not unknown:
        return None
    here = normalize_location(location)
    parts = []
    if shared:
        listed = ", ".join(
            n if normalize_location(r) == here else f"{n} at {normalize_location(r)}"
            for n, r in shared.items()
        )
        parts.append(f"its location {here} overlaps the location of {listed}")
    if unknown:
        listed = ", ".join(f"{n} ({e[:80]})" for n, e in unknown.items())
        parts.append(f"could not read {listed}")
    names = " ".join(sorted([*shared, *unknown]))
    return f"{'; '.join(parts)} (to allow: --allow-shared-location / allow_shared_location {names})"
