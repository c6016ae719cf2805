"""Orphan removal never runs on a location another table shares (issue 28, item 3).

``register_table`` of ``q``'s metadata makes ``r``, a second table at ``q``'s location; one
more append to ``q`` writes files ``r`` does not reference. Iceberg's ``remove_orphan_files``
on ``r`` then deletes them, ``q``'s current metadata included, and ``q`` no longer loads.
icefloe lists every table of the catalog first: ``maintain --action remove_orphan_files``
refuses (one line, exit 1, nothing deleted), the decider holds the action and
``plan``/``maintain``/``status`` say why; naming the other table allows it."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import yaml
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

from icefloe.base.config import DeciderSettings
from icefloe.service.decider.wiring import open_decider
from icefloe.service.observe.status import gather, render
from tests.support.config import config_raw, make_config

pytestmark = [pytest.mark.integration, pytest.mark.redis]

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "day", StringType(), required=False),
)
FOUR_DAYS = 4 * 86400  # past the 3-day default orphan age


def _rows(start: int, n: int = 10) -> pa.Table:
    ids = pa.array(range(start, start + n), pa.int64())
    return pa.table({"id": ids, "day": pa.array(["d"] * n, pa.string())})


def _local(location: str) -> Path:
    return Path(location.removeprefix("file://").removeprefix("file:"))


def _files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file()}


def _age(root: Path, seconds: float) -> None:
    then = time.time() - seconds
    for path in _files(root):
        os.utime(path, (then, then))


@pytest.fixture
def clone(catalog: Any, namespace: str) -> Iterator[tuple[str, str]]:
    """``q`` (two appends), ``r`` registered on q's metadata, then a third append to ``q``;
    every file older than the orphan age. Both dropped after the test (the catalog is the
    whole run's: a table left broken would hold every later orphan removal)."""
    q, r = f"{namespace}.q", f"{namespace}.r"
    table = catalog.create_table(q, schema=SCHEMA)
    table.append(_rows(0))
    table.append(_rows(10))
    catalog.register_table((namespace, "r"), catalog.load_table(q).metadata_location)
    catalog.load_table(q).append(_rows(20))
    _age(_local(table.location()), FOUR_DAYS)
    yield q, r
    for name in (r, q):
        catalog.drop_table(name)


def _cli(tmp_path: Path, capsys: Any, cfg: Any, namespace: str, **raw_extra: Any) -> Any:
    from icefloe.app.cli import main as cli_main

    path = tmp_path / f"icefloe-{len(list(tmp_path.glob('icefloe-*.yaml')))}.yaml"
    raw = {
        "catalog": {"uri": cfg.catalog.uri, "warehouse": cfg.catalog.warehouse},
        "redis": {"url": cfg.redis.url, "key_prefix": cfg.redis.key_prefix},
        "spark": {"master": cfg.spark.master, "conf": dict(cfg.spark.conf)},
        "managed": {"namespaces": [namespace]},
        **raw_extra,
    }
    path.write_text(yaml.safe_dump(raw))

    def run(*argv: str) -> tuple[int, Any, str]:
        """Exit code, stdout (parsed when ``--json``), stderr."""
        with pytest.raises(SystemExit) as exit_info:
            cli_main(["--config", str(path), *argv])
        out = capsys.readouterr()
        data = json.loads(out.out) if out.out.strip() and "--json" in argv else out.out
        return int(exit_info.value.code or 0), data or {}, out.err

    return run


@pytest.mark.spark
def test_maintain_refuses_orphan_removal_on_a_shared_location(
    spark: Any, cfg: Any, catalog: Any, clone: tuple[str, str], tmp_path: Path, capsys: Any
) -> None:
    q, r = clone
    root = _local(catalog.load_table(q).location())
    before = _files(root)
    namespace = q.split(".")[0]
    run = _cli(tmp_path, capsys, cfg, namespace)

    code, out, err = run("maintain", r, "--action", "remove_orphan_files", "--json")
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 1 and out == {}, err
    assert len(lines) == 1 and lines[0].startswith("icefloe: error: "), err
    assert f"remove_orphan_files on {r} refused" in lines[0] and q in lines[0]
    assert "--allow-shared-location" in lines[0]
    assert _files(root) == before  # nothing deleted
    assert catalog.load_table(q).scan().to_arrow().num_rows == 30
    assert catalog.load_table(r).scan().to_arrow().num_rows == 20

    # the due actions: orphan removal is held, not due; the rest runs; plan says why
    code, done, err = run("maintain", r, "--json")
    assert code == 0, err
    (held,) = done["held"]
    assert held["action"] == "remove_orphan_files" and q in held["reason"]
    assert "remove_orphan_files" not in {d["action"] for d in done["due"]}
    assert "remove_orphan_files" not in {x["action"] for x in done["ran"]}
    code, plan, err = run("plan", r, "--json")
    assert code == 0 and [h["action"] for h in plan["maintenance"]["held"]] == [
        "remove_orphan_files"
    ]
    code, text, err = run("plan", r)  # the text output says it too, in one line
    assert code == 0 and "held: remove_orphan_files: its location " in text
    assert any(q in line for line in text.splitlines() if "held: " in line)
    assert _files(root) == before and catalog.load_table(q).scan().to_arrow().num_rows == 30

    # allowed by the policy: it proceeds (a dry run lists q's newest files as orphans)
    policy = {"tables": {r: {"maintenance": {"allow_shared_location": [q]}}}}
    code, dry, err = _cli(tmp_path, capsys, cfg, namespace, **policy)(
        "maintain", r, "--action", "remove_orphan_files", "--dry-run", "--json"
    )
    assert code == 0 and dry["held"] == [], err
    found = dry["ran"][0]["result"]["orphan_file_location"]
    newest = catalog.load_table(q).metadata_location
    assert any(f.endswith(Path(newest).name) for f in found)  # what allowing means
    assert _files(root) == before

    # allowed by the flag: it runs, and deletes what r does not reference
    planted = root / "data" / "planted-orphan.parquet"
    planted.write_bytes(b"x")
    os.utime(planted, (time.time() - FOUR_DAYS, time.time() - FOUR_DAYS))
    code, ran, err = run(
        "maintain", r, "--action", "remove_orphan_files", "--allow-shared-location", q, "--json"
    )
    assert code == 0, err
    assert [x["action"] for x in ran["ran"]] == ["remove_orphan_files"]
    assert not planted.exists()
    assert catalog.load_table(r).scan().to_arrow().num_rows == 20


def test_the_decider_holds_orphan_removal_and_status_says_why(
    lake_home: Path,
    catalog: Any,
    namespace: str,
    clone: tuple[str, str],
    redis_client: Any,
    capsys: Any,
) -> None:
    q, r = clone
    alone = f"{namespace}.alone"
    catalog.create_table(alone, schema=SCHEMA).append(_rows(0))
    raw = config_raw(lake_home)
    cfg = make_config(
        lake_home,
        managed={"namespaces": [namespace]},
        defaults={**raw["defaults"], "actions": ["remove_orphan_files"]},
    )
    clock = [1_790_000_000.0]
    decider = open_decider(
        cfg, catalog, redis_client, settings=DeciderSettings(), clock=lambda: clock[0]
    )
    assert decider.step(block_ms=None).enqueued == 0  # first seen: nothing to clean yet
    clock[0] += 25 * 3600
    report = decider.step(block_ms=None)
    assert report.enqueued == 1  # the table alone at its location, only
    assert set(decider.queue.pending_by_table()) | {
        i["table"] for i in gather(cfg, redis_client, decider.queue, clock[0])["inflight"]
    } <= {alone}
    data = gather(cfg, redis_client, decider.queue, clock[0])
    assert data["tables"][alone]["held"] == {}
    for name, other in ((r, q), (q, r)):
        reason = data["tables"][name]["held"]["remove_orphan_files"]
        assert other in reason and "overlaps the location of" in reason
    render(data)
    shown = capsys.readouterr().out
    assert f"held: {r} remove_orphan_files: " in shown and f"held: {q} remove_orphan_files" in shown

    clock[0] += 25 * 3600  # checked again after orphan_interval_hours: still held
    assert decider.step(block_ms=None).enqueued == 0
