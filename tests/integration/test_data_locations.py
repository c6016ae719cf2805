"""New data files of a compaction land where Iceberg's own writers put them: one slash
between the data folder and the file of an unpartitioned table, a partition's folder for a
partitioned one, on both engines (#61.12: the Arrow engine wrote ``data//icefloe-*``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from icefloe.base.catalog import spark_table_name
from icefloe.base.tablestats import current_partitions
from icefloe.jobs.data.optimize import optimize_table
from icefloe.jobs.rewrite.locations import local_path
from tests.support.config import make_config

pytestmark = [pytest.mark.spark, pytest.mark.integration]


@pytest.mark.parametrize(
    ("engine", "partitioned"),
    [("auto", False), ("spark", False), ("auto", True)],
    ids=["arrow-unpartitioned", "spark-unpartitioned", "arrow-partitioned"],
)
def test_new_files_have_one_slash_and_iceberg_folders(
    spark: Any, lake_home: Path, catalog: Any, namespace: str, engine: str, partitioned: bool
) -> None:
    cfg = make_config(lake_home, managed={"namespaces": [namespace]}, defaults={"engine": engine})
    name = f"{namespace}.small_files"
    fq = spark_table_name(cfg, name)
    by = "PARTITIONED BY (day)" if partitioned else ""
    spark.sql(f"CREATE TABLE {fq} (id BIGINT, day STRING) USING iceberg {by}")
    for i in range(5):  # five commits of one row: five small files (min_input_files)
        spark.sql(f"INSERT INTO {fq} VALUES ({i}, 'd1')")
    report = optimize_table(spark, cfg, name)
    assert report.files_rewritten == 5
    table = catalog.load_table(name)
    (part,) = current_partitions(table)
    (path,) = part.paths
    local = local_path(path)
    assert local is not None and "//" not in local, path
    data = f"{local_path(table.location()).rstrip('/')}/data/"  # type: ignore[union-attr]
    assert local.startswith(data), path
    folders = local.removeprefix(data).split("/")[:-1]
    if engine == "spark":  # Spark's writer: under the attempt's own prefix (attempt_table)
        assert folders[0].startswith("icefloe-"), path
        folders = folders[1:]
    else:  # the Arrow engine names its files as the location provider says
        assert local.rsplit("/", 1)[1].startswith("icefloe-"), path
    assert folders == (["day=d1"] if partitioned else []), path
    assert sorted(r.id for r in spark.table(fq).collect()) == [0, 1, 2, 3, 4]
