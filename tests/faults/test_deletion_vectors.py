"""The probe of issue 28, item 5: a format version 3 table with deletion vectors (a
merge-on-read DELETE writes one DV per data file, in a Puffin file). Before the fix,
``icefloe optimize`` exited 1 (``_metadata``/``_file`` cannot be resolved) and the actor's
delete compaction failed on every attempt until it was dead-lettered.

Expected: ``icefloe optimize`` exits 0 with a clean report; the actor's
``compact_deletes`` is done once, nothing dead-lettered. Every live row is there exactly
once (a PyIceberg scan, DVs applied), deleted rows stay deleted, no deletion vector of a
replaced file is left, and no file is left unreferenced.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from icefloe.service.actor.loop import run_actor
from icefloe.service.decider.wiring import open_decider
from icefloe.state.queue.redis import RedisQueue
from tests.faults.checks import operations
from tests.faults.conftest import write_env
from tests.faults.harness import run_cli

pytestmark = [pytest.mark.faults, pytest.mark.redis, pytest.mark.spark, pytest.mark.integration]

V3 = "'format-version'='3', 'write.delete.mode'='merge-on-read'"


def make_v3_table(spark: Any, namespace: str, inserts: int = 6) -> str:
    """``inserts`` small files in each of two days, then a DELETE of every fifth row."""
    fq = f"lake.`{namespace}`.`dv`"
    spark.sql(
        f"CREATE TABLE {fq} (id BIGINT, day STRING, v STRING) USING iceberg "
        f"PARTITIONED BY (day) TBLPROPERTIES ({V3})"
    )
    for i in range(inserts):
        spark.sql(
            f"INSERT INTO {fq} SELECT /*+ REPARTITION(1) */ id, concat('d', id % 2), "
            f"sha2(cast(id AS STRING), 256) FROM range({i * 100}, {(i + 1) * 100})"
        )
    spark.sql(f"DELETE FROM {fq} WHERE id % 5 = 0")
    return f"{namespace}.dv"


def delete_files(table: Any) -> list[dict[str, Any]]:
    return [f for f in table.inspect.files().to_pylist() if f["content"] != 0]


def assert_no_deleted_row(table: Any) -> None:
    ids = table.scan(selected_fields=("id",)).to_arrow().column("id").to_pylist()
    assert ids and not [i for i in ids if i % 5 == 0]


def test_cli_optimize_of_a_v3_table_with_deletion_vectors(
    spark: Any, fault_env: Any, ledger: Any
) -> None:
    env = fault_env
    name = make_v3_table(spark, env.namespace)
    table = env.catalog.load_table(name)
    assert {f["file_format"] for f in delete_files(table)} == {"PUFFIN"}
    before = ledger.contents(table)
    ledger.fault("v3 table with deletion vectors (icefloe optimize)")

    run = run_cli(env.config_path, "optimize", name, "--json")

    ledger.clean(run.output)
    assert run.returncode == 0, run.output[-3000:]
    report = json.loads(run.stdout)
    report = report[0] if isinstance(report, list) else report
    assert report["partitions_rewritten"] == 2, run.stdout[-3000:]
    table = env.catalog.load_table(name)
    assert operations(table)[-1] == "replace"
    assert delete_files(table) == []  # every DV applied only to replaced files
    ledger.assert_intact(table, before)
    assert_no_deleted_row(table)


def test_the_actor_compacts_deletion_vectors_once(spark: Any, fault_env: Any, ledger: Any) -> None:
    name = make_v3_table(spark, fault_env.namespace, inserts=2)
    raw = {
        **fault_env.raw,
        "tables": {
            name: {"actions": ["merge", "compact_deletes"], "maintenance": {"delete_ratio": 0.1}}
        },
    }
    env = write_env(raw, fault_env)
    table = env.catalog.load_table(name)
    before = ledger.contents(table)
    client = env.client()
    decider = open_decider(env.cfg, env.catalog, client)
    report = decider.step(dispatch_all=True)
    assert report.enqueued == 2 and report.dispatched == 2, report  # both days: 20% deleted
    ledger.fault("v3 table with deletion vectors (actor compact_deletes)")

    done = run_actor(env.cfg, max_actions=2, idle_exit=0, spark=spark)

    assert done.done == 2 and done.failed == 0, done
    recent = [json.loads(r) for r in client.lrange(env.keys.recent, 0, -1)]
    assert {r["action"] for r in recent} == {"compact_deletes"}
    assert all(r["ok"] for r in recent), recent
    depth = RedisQueue(client, env.keys).depth()
    assert depth == {"pending": 0, "ready": 0, "inflight": 0, "dead": 0}, depth
    table = env.catalog.load_table(name)
    assert delete_files(table) == []
    ledger.assert_intact(table, before)
    assert_no_deleted_row(table)
