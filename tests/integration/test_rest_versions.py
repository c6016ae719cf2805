"""``icefloe.base.rest_versions`` on Iceberg's own REST catalog server (the ``rest-s3``
profile, started once per run in the run's ``dev_root`` like the contract and fault suites):
an unchanged table is a 304 and no Table, a commit a new ETag and the Table ``load_table``
gives, a missing table ``load_table``'s error, and other catalogs fall back to ``load_table``."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.exceptions import NoSuchTableError

from icefloe.base.catalog import load_catalog
from icefloe.base.config import build_config
from icefloe.base.rest_versions import Probe, Settings, conditional_load
from tests.faults.backends import Profile
from tests.faults.backends import start as start_profile
from tests.support.config import config_raw, make_config

pytestmark = pytest.mark.integration

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


@pytest.fixture(scope="session")
def rest_profile(dev_root: Path) -> Iterator[Profile]:
    """The ``rest-s3`` services (s3proxy, Iceberg's REST server) in the run's ``dev_root``:
    the same ``icefloe dev up`` as the fault and contract suites (a running one is reused);
    stopped at the end of the run only when this started them."""
    from icefloe.app.ops import dev

    started = dev.up("rest-s3", dev_root, free_ports=True).started
    yield start_profile("rest-s3", dev_root)
    if started:
        dev.down("rest-s3", dev_root)


def _rest_catalog(profile: Profile, home: Path, **properties: str) -> Any:
    """icefloe's own catalog on the profile (PyIceberg's RestCatalog, requests bounded)."""
    section = dict(profile.catalog)
    section["properties"] = {**section.get("properties", {}), **properties}
    raw = config_raw(home, catalog={**section, "name": "v_rest"})
    return load_catalog(build_config(raw, source="<rest versions>", home=home))


@pytest.fixture
def catalog(rest_profile: Profile, tmp_path: Path) -> Any:
    return _rest_catalog(rest_profile, tmp_path)


def _new_table(catalog: Any) -> str:
    namespace = f"v_{uuid.uuid4().hex[:8]}"
    catalog.create_namespace(namespace)
    name = f"{namespace}.t"
    catalog.create_table(name, schema=SCHEMA).append(_rows(1, 2))
    return name


def _rows(*ids: int) -> pa.Table:
    return pa.table({"id": list(ids), "name": [str(i) for i in ids]}, schema=SCHEMA)


@pytest.mark.parametrize("once", [False, True], ids=["settings-each", "settings-once"])
def test_unchanged_is_304_and_a_commit_is_a_new_etag_and_the_table(
    catalog: Any, once: bool
) -> None:
    name, probe = _new_table(catalog), Probe()
    settings = Settings() if once else None  # the environment's read once (a poll's)

    def load(etag: str | None) -> tuple[str | None, Any]:
        return conditional_load(catalog, name, etag, probe, settings)

    etag, table = load(None)
    assert etag and table is not None
    assert table == catalog.load_table(name)  # name, metadata and metadata location
    assert load(etag) == (etag, None)
    assert load(etag) == (etag, None)
    assert (probe.requests, probe.not_modified, probe.loaded, probe.fallbacks) == (3, 2, 1, 0)

    catalog.load_table(name).append(_rows(3))
    new_etag, changed = load(etag)
    loaded = catalog.load_table(name)
    assert new_etag and new_etag != etag and changed is not None
    assert changed.metadata_location == loaded.metadata_location != table.metadata_location
    assert changed == loaded and changed.io.properties == loaded.io.properties
    assert changed.scan().to_arrow().num_rows == 3
    assert load(new_etag) == (new_etag, None)
    assert (probe.requests, probe.not_modified, probe.loaded) == (5, 3, 2)


def test_a_refs_only_catalog_has_its_own_etags_and_still_gets_304s(
    catalog: Any, rest_profile: Profile, tmp_path: Path
) -> None:
    name = _new_table(catalog)
    refs = _rest_catalog(rest_profile, tmp_path / "refs", **{"snapshot-loading-mode": "refs"})
    etag_all, _ = conditional_load(catalog, name, None)
    etag_refs, table = conditional_load(refs, name, None)
    assert etag_refs and etag_refs != etag_all  # the spec: another representation
    assert table == refs.load_table(name)
    assert conditional_load(refs, name, etag_refs) == (etag_refs, None)


def test_a_missing_table_raises_what_load_table_raises(catalog: Any) -> None:
    name = _new_table(catalog)
    etag, _ = conditional_load(catalog, name, None)
    namespace = name.split(".")[0]
    for missing in (f"{namespace}.nope", "v_no_such_namespace.t"):
        with pytest.raises(NoSuchTableError):
            catalog.load_table(missing)
        for sent in (None, etag):
            with pytest.raises(NoSuchTableError):
                conditional_load(catalog, missing, sent)
    catalog.drop_table(name)  # an ETag of a dropped table is no 304
    with pytest.raises(NoSuchTableError):
        conditional_load(catalog, name, etag)


def test_a_non_rest_catalog_falls_back_to_load_table(tmp_path: Path) -> None:
    catalog, probe = load_catalog(make_config(tmp_path)), Probe()
    name = _new_table(catalog)
    etag, table = conditional_load(catalog, name, "any-etag", probe)
    assert etag is None and table == catalog.load_table(name)
    assert (probe.fallbacks, probe.requests) == (1, 0)
    with pytest.raises(NoSuchTableError):
        conditional_load(catalog, f"{name}_nope", None, probe)


def test_a_rest_catalog_without_the_private_api_falls_back(
    catalog: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pyiceberg.catalog.rest import RestCatalog

    name, probe = _new_table(catalog), Probe()
    monkeypatch.delattr(RestCatalog, "_refresh_token")  # another PyIceberg: not there
    etag, table = conditional_load(catalog, name, "any-etag", probe)
    assert etag is None and table is not None
    assert table.metadata_location == catalog.load_table(name).metadata_location
    assert (probe.fallbacks, probe.requests) == (1, 0)


@pytest.mark.redis
def test_a_decider_poll_on_rest_loads_only_the_tables_that_changed(
    rest_profile: Profile, tmp_path: Path, redis_client: Any
) -> None:
    """#48 on a REST catalog: a poll asks for each known table with its ETag; 304s are
    refreshed from what the decider holds, the one changed table is loaded once (the 200
    of the poll's own request) and refreshed in full."""
    from icefloe.service.decider.wiring import open_decider

    section = dict(rest_profile.catalog)
    namespace = f"v_{uuid.uuid4().hex[:8]}"
    raw = config_raw(tmp_path, catalog={**section, "name": "v_rest"})
    raw["managed"] = {"namespaces": [namespace]}
    cfg = build_config(raw, source="<rest versions>", home=tmp_path)
    catalog = load_catalog(cfg)
    catalog.create_namespace(namespace)
    names = [f"{namespace}.t{i}" for i in range(3)]
    for name in names:
        catalog.create_table(name, schema=SCHEMA).append(_rows(1, 2))
    clock = [1_790_000_000.0]
    decider = open_decider(cfg, catalog, redis_client, clock=lambda: clock[0])
    assert decider.light.rest
    first = decider.step()
    assert not first.failed and first.unchanged == 0
    assert decider.light.probe.loaded == 3  # each table's first load brings its ETag
    clock[0] += cfg.decider.poll_seconds
    second = decider.step()
    assert second.unchanged == 3 and decider.light.probe.not_modified == 3
    catalog.load_table(names[1]).append(_rows(3))
    clock[0] += cfg.decider.poll_seconds
    third = decider.step()
    assert third.unchanged == 2 and [r.table for r in third.applied] == [names[1]]
    assert decider.light.probe.loaded == 4  # the changed table: its poll request, no other
    assert (
        decider.stats.last_applied(names[1])
        == catalog.load_table(names[1]).current_snapshot().snapshot_id
    )
