"""Per-task stage metrics of a Spark action: how skewed was the work, really?

:class:`Meter` runs an action (a ``noop`` write of a DataFrame) in its own job group, then
reads that group's stages from the status tracker and their per-task metrics from the
Spark UI's REST API (``/stages/<id>/<attempt>/taskList``): task durations and shuffle
bytes read. The "main" stage is the one that read the most shuffle bytes; max/median is
over its tasks that read the shuffle (the join's partitions: an isolated join's hot part
runs in that stage as map-side join tasks over the table's splits, which are left out).
Needs ``spark.ui.enabled=true``. Used by the demo and the skew benchmark.
"""

from __future__ import annotations

import json
import statistics
import time
import urllib.request
from typing import Any

from icefloe.optimizer.skew_stats import makespan


class Meter:
    """Runs an action in a job group and reads its stages' task metrics over REST."""

    def __init__(self, spark: Any) -> None:
        self.spark = spark
        self.sc = spark.sparkContext
        self.base = f"{self.sc.uiWebUrl}/api/v1/applications/{self.sc.applicationId}"
        self.n = 0

    def _get(self, path: str) -> Any:
        with urllib.request.urlopen(self.base + path, timeout=30) as r:
            return json.loads(r.read())

    def run(self, name: str, df: Any, conf: dict[str, str]) -> dict[str, Any]:
        for k, v in conf.items():
            self.spark.conf.set(k, v)
        self.n += 1
        group = f"bench-{self.n}"
        self.sc.setJobGroup(group, name)
        start = time.perf_counter()
        df.write.format("noop").mode("overwrite").save()
        wall = time.perf_counter() - start
        return {"name": name, "wall": wall, **self.stage_metrics(group)}

    def stage_metrics(self, group: str) -> dict[str, Any]:
        time.sleep(1.0)  # let the listener bus deliver the last task-end events
        tracker = self.sc.statusTracker()
        stage_ids = sorted(
            {
                s
                for j in tracker.getJobIdsForGroup(group)
                for s in (tracker.getJobInfo(j).stageIds if tracker.getJobInfo(j) else [])
            }
        )
        stages = []
        for sid in stage_ids:
            try:
                attempts = self._get(f"/stages/{sid}")
            except Exception:
                continue
            for att in attempts:
                if att.get("status") != "COMPLETE":
                    continue
                tasks = self._get(f"/stages/{sid}/{att['attemptId']}/taskList?length=1000000")
                timed = [t for t in tasks if "duration" in t]
                if timed:
                    durs = [t["duration"] / 1000 for t in timed]
                    reads = [_shuffle_read(t) for t in timed]
                    joins = [t["duration"] / 1000 for t in timed if reads_shuffle(t)]
                    stages.append({"id": sid, "durs": durs, "reads": reads, "joins": joins})
        if not stages:
            return {
                "max_over_median": 0.0,
                "max_read_mb": 0.0,
                "tasks": 0,
                "task_seconds": [],
                "makespan16": 0.0,
                "makespan64": 0.0,
            }
        main = max(stages, key=lambda s: (sum(s["reads"]), sum(s["durs"])))
        durs = main["joins"] or main["durs"]
        med = statistics.median(durs)
        return {
            "max_over_median": max(durs) / med if med > 0 else float("inf"),
            "max_read_mb": max(main["reads"]) / 2**20,
            "tasks": len(durs),
            "task_seconds": sorted(durs, reverse=True),  # the join stage's, longest first
            "makespan16": sum(makespan(s["durs"], 16) for s in stages),
            "makespan64": sum(makespan(s["durs"], 64) for s in stages),
        }


def reads_shuffle(task: dict[str, Any]) -> bool:
    """Whether a task (the REST API's) read a shuffle: fetched a block or read a record."""
    m = task.get("taskMetrics", {}).get("shuffleReadMetrics", {})
    fetched = int(m.get("localBlocksFetched", 0)) + int(m.get("remoteBlocksFetched", 0))
    return fetched > 0 or int(m.get("recordsRead", 0)) > 0


def _shuffle_read(task: dict[str, Any]) -> int:
    m = task.get("taskMetrics", {}).get("shuffleReadMetrics", {})
    return int(m.get("remoteBytesRead", 0)) + int(m.get("localBytesRead", 0))
