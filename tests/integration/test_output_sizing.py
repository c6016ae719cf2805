"""Outputs that land on target (#46): a streaming table whose merged rows compress better
than their small files; the decider and a real actor merge it once, the outputs land at
the target (one remainder per partition at most), a second decider pass queues nothing,
and what the plan predicted is what the rewrite measured."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import pytest
from pyiceberg.transforms import DayTransform

from icefloe.app.demo.orderlines import OrderLines
from icefloe.app.demo.rounds import read_view
from icefloe.base.config import DeciderSettings
from icefloe.base.keys import Keys
from icefloe.service.actor.loop import run_actor
from icefloe.service.decider.wiring import open_decider
from tests.support.config import make_config

pytestmark = [pytest.mark.spark, pytest.mark.redis, pytest.mark.integration]

TARGET = 256 << 10
COMMITS = 160  # small files, two days (a fifth of the second day's commits are late rows)


def streamed_table(catalog: Any, name: str) -> Any:
    stream = OrderLines(commits_per_day=COMMITS // 2, seed=7)
    table = catalog.create_table(
        name,
        schema=OrderLines(commits_per_day=1).take().schema,
        properties={
            "write.parquet.compression-codec": "zstd",
            "write.target-file-size-bytes": str(64 * TARGET),  # each append: one file
        },
    )
    with table.update_spec() as spec:
        spec.add_field("l_shipdate", DayTransform(), "day")
    table = catalog.load_table(name)
    for _ in range(COMMITS):
        table.append(stream.take())
    with table.transaction() as tx:
        tx.set_properties({"write.target-file-size-bytes": str(TARGET)})
    return catalog.load_table(name)


def test_merged_outputs_land_on_target_and_are_not_merged_again(
    spark: Any, lake_home: Path, catalog: Any, namespace: str, redis_client: Any
) -> None:
    cfg = make_config(
        lake_home, managed={"namespaces": [namespace]}, defaults={"target_file_size_bytes": TARGET}
    )
    name = f"{namespace}.lines"
    table = streamed_table(catalog, name)
    rows = table.scan().to_arrow().num_rows
    before = read_view(catalog, name)
    ingested = {p for files in before.files.values() for p in files}
    assert sum(len(f) for f in before.files.values()) == COMMITS

    decider = open_decider(cfg, catalog, redis_client, settings=DeciderSettings())
    assert decider.step(block_ms=None).enqueued == 2  # both days
    done = run_actor(cfg, max_actions=None, idle_exit=0, spark=spark)
    assert done.failed == 0 and done.done >= 1

    after = read_view(catalog, name)
    assert after.rows == rows  # every row kept
    for key, files in after.files.items():
        outputs = sorted(s for p, s in files.items() if p not in ingested)
        assert outputs, f"{key}: nothing merged"
        on_target = outputs[1:]  # the smallest may be the partition's one remainder
        assert all(0.75 * TARGET <= s <= 1.15 * TARGET for s in on_target), (key, outputs)
        if on_target:
            assert 0.9 * TARGET <= statistics.mean(on_target) <= 1.1 * TARGET, (key, outputs)
    assert decider.step(block_ms=None).enqueued == 0  # nothing just merged is queued again

    entries = [json.loads(r) for r in redis_client.lrange(Keys.for_config(cfg).recent, 0, -1)]
    ok = [e for e in entries if e.get("ok") and e.get("action") == "merge"]
    assert ok
    for e in ok:  # predicted = measured: new bytes within 10%, MSE no worse than planned
        assert abs(e["bytes_added"] - e["bytes_added_predicted"]) <= 0.1 * e["bytes_added"], e
        assert e["mse_after"] <= e["mse_predicted"] + 0.02 * TARGET**2, e
