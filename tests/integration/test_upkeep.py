"""Maintenance as actions (``icefloe.jobs.maintenance.run``) on real tables: each run verified from
the metadata, and the verification fails when the procedure loses something."""

from __future__ import annotations

import os
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.base.catalog import load_table
from icefloe.base.errors import OperationFailed
from icefloe.jobs.maintenance import procedures as maintenance
from icefloe.jobs.maintenance import run as upkeep
from icefloe.jobs.maintenance import runners
from tests.support.config import make_config

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def _table(spark: Any, namespace: str, commits: int) -> tuple[str, str]:
    fq, ident = f"lake.`{namespace}`.`t`", f"{namespace}.t"
    spark.sql(f"CREATE TABLE {fq} (id BIGINT, day STRING) USING iceberg PARTITIONED BY (day)")
    for i in range(commits):
        spark.sql(f"INSERT INTO {fq} VALUES ({i}, 'd{i % 2}')")
    return fq, ident


def _policy(lake_home: Path, ident: str, **maintenance_policy: Any) -> Any:
    return make_config(lake_home, tables={ident: {"maintenance": maintenance_policy}})


def _just_over_one(catalog: Any, ident: str) -> int:
    """A manifest target every manifest is under but that all of them overflow."""
    table = load_table(catalog, ident)
    return max(m.manifest_length for m in table.current_snapshot().manifests(table.io)) + 1


@pytest.mark.parametrize("in_driver", [True, False], ids=["driver", "procedure"])
def test_rewrite_manifests_keeps_exactly_the_files(spark, lake_home, catalog, namespace, in_driver):
    """Small manifests are merged in the driver; when they would fill more than one
    manifest, Iceberg's procedure runs instead."""
    fq, ident = _table(spark, namespace, commits=6)
    manifest_target = None if in_driver else _just_over_one(catalog, ident)
    cfg = _policy(lake_home, ident, manifest_target_bytes=manifest_target)
    rows = sorted(spark.table(fq).collect())
    before = load_table(catalog, ident)
    manifests = before.current_snapshot().manifests(before.io)
    out = upkeep.run_table_action(spark, cfg, ident, "rewrite_manifests")
    assert out["verified"] == {"manifest_rewrites_checked": 1, "referenced_files_present": True}
    assert (out["result"].get("engine") == "driver") is in_driver
    assert out["result"]["rewritten_manifests_count"] == len(manifests)
    table = load_table(catalog, ident)
    after = table.current_snapshot().manifests(table.io)
    assert 1 <= len(after) < len(manifests)
    if in_driver:
        assert len(after) == 1
    assert sorted(spark.table(fq).collect()) == rows


@pytest.mark.parametrize("in_driver", [True, False], ids=["driver", "procedure"])
def test_a_referenced_file_gone_fails_the_action(
    spark, lake_home, catalog, namespace, monkeypatch, in_driver
):
    _, ident = _table(spark, namespace, commits=3)
    manifest_target = None if in_driver else _just_over_one(catalog, ident)
    cfg = _policy(lake_home, ident, manifest_target_bytes=manifest_target)
    real = runners.driver_or_procedure

    def losing(*args: Any) -> Any:  # a rewrite that loses a file
        report = real(*args)
        table = load_table(catalog, ident)
        victim = next(iter(upkeep.live_files(table, table.current_snapshot().snapshot_id)))
        Path(victim.removeprefix("file:")).unlink()
        return report

    monkeypatch.setattr(runners, "driver_or_procedure", losing)
    with pytest.raises(OperationFailed, match="referenced file"):
        upkeep.run_table_action(spark, cfg, ident, "rewrite_manifests")


def test_expiry_keeps_what_must_be_kept(spark, lake_home, catalog, namespace, monkeypatch):
    fq, ident = _table(spark, namespace, commits=5)
    cfg = _policy(lake_home, ident, snapshot_max_age_hours=1, retain_last=2)
    rows = sorted(spark.table(fq).collect())
    later = datetime.now(UTC) + timedelta(hours=2)  # every snapshot is 2 h old
    out = upkeep.run_table_action(spark, cfg, ident, "expire_snapshots", now=later)
    assert out["verified"]["snapshots_before"] == 5 and out["verified"]["snapshots_after"] == 2
    assert sorted(spark.table(fq).collect()) == rows

    for i in range(3):
        spark.sql(f"INSERT INTO {fq} VALUES ({100 + i}, 'd0')")
    real = maintenance.expire_snapshots

    def greedy(spark: Any, cfg: Any, name: str, older_than: Any, retain_last: int, now: Any) -> Any:
        return real(spark, cfg, name, older_than, 1, now)  # keeps fewer than the policy says

    monkeypatch.setattr(maintenance, "expire_snapshots", greedy)
    with pytest.raises(OperationFailed, match="removed retained snapshot"):
        upkeep.run_table_action(spark, cfg, ident, "expire_snapshots", now=later)


def test_orphan_removal_with_a_concurrent_writer(spark, cfg, catalog, namespace):
    fq, ident = _table(spark, namespace, commits=2)
    table = load_table(catalog, ident)
    data = Path(table.location().removeprefix("file:")) / "data"
    orphan = data / "orphan.parquet"
    orphan.write_bytes(b"not referenced")
    four_days_ago = time.time() - 4 * 86400  # past the 3-day floor; the writer's files are not
    os.utime(orphan, (four_days_ago, four_days_ago))
    appended: list[int] = []
    stop = threading.Event()

    def writer() -> None:  # PyIceberg appends while the procedure lists and deletes
        t = load_table(catalog, ident)
        i = 1000
        while not stop.is_set() and i < 1010:
            t.append(pa.table({"id": [i], "day": ["d1"]}, schema=t.schema().as_arrow()))
            appended.append(i)
            i += 1

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        out = upkeep.run_table_action(spark, cfg, ident, "remove_orphan_files")
    finally:
        stop.set()
        thread.join()
    assert out["verified"]["referenced_files_present"]
    assert not orphan.exists()
    assert upkeep.missing_files(load_table(catalog, ident)) == []
    ids = {r.id for r in spark.table(fq).collect()}
    assert set(appended) <= ids and {0, 1} <= ids


def test_cli_maintain_dry_run_then_run(spark, cfg, catalog, namespace, tmp_path, capsys):
    import json

    import yaml

    from icefloe.app.cli import main as cli_main

    _, ident = _table(spark, namespace, commits=6)
    path = tmp_path / "icefloe.yaml"
    raw = {
        "catalog": {"uri": cfg.catalog.uri, "warehouse": cfg.catalog.warehouse},
        "redis": {"url": cfg.redis.url, "key_prefix": cfg.redis.key_prefix},
        "spark": {"master": cfg.spark.master, "conf": dict(cfg.spark.conf)},
        "defaults": {"maintenance": {"min_manifests": 4}},
        "managed": {"namespaces": [namespace]},  # maintain refuses an unmanaged table
    }
    path.write_text(yaml.safe_dump(raw))

    err: list[str] = []

    def run(*argv: str) -> tuple[int, dict]:
        with pytest.raises(SystemExit) as exit_info:
            cli_main(["--config", str(path), *argv])
        out = capsys.readouterr()
        err.append(out.err)
        return int(exit_info.value.code or 0), json.loads(out.out) if out.out.strip() else {}

    code, dry = run("maintain", ident, "--dry-run", "--action", "rewrite_manifests", "--json")
    assert code == 0 and dry["ran"] == [] and dry["would_run"] == ["rewrite_manifests"]
    assert dry["health"]["manifests"] == 6 and dry["health"]["snapshots"] == 6
    due = {d["action"]: d["enabled"] for d in dry["due"]}
    assert due["rewrite_manifests"] is False  # due, but the policy does not enable it
    table = load_table(catalog, ident)
    assert len(table.current_snapshot().manifests(table.io)) == 6  # the dry run changed nothing

    code, done = run("maintain", ident, "--action", "rewrite_manifests", "--json")
    assert code == 0
    (ran,) = done["ran"]
    assert ran["verified"]["manifest_rewrites_checked"] == 1
    code, after = run("plan", ident, "--json")
    assert code == 0 and after["maintenance"]["health"]["manifests"] == 1
    assert "rewrite_manifests" not in {d["action"] for d in after["maintenance"]["due"]}
    code, _ = run("maintain", f"{namespace}.missing", "--json")
    assert code != 0 and f"table '{namespace}.missing' not found" in err[-1]
    assert "Traceback" not in "".join(err)
