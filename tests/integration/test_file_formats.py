"""Tables whose data files are Avro or ORC (``write.format.default``) are compacted as
Iceberg's ``rewrite_data_files`` compacts them (issue 45, item 10): Spark's writer, new
files in the table's format, one ``replace``, every row kept. The new files are verified
through Iceberg's own reader (Spark's Avro source is not on the classpath)."""

from __future__ import annotations

from typing import Any

import pytest
from chispa import assert_df_equality

from icefloe.jobs.data.optimize import optimize_table
from tests.integration.test_actors import PROPS, contents, current_operation, make_table
from tests.support.config import with_engine

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def formats(spark: Any, ident: str) -> list[str]:
    ns, name = ident.split(".")
    rows = spark.sql(f"SELECT file_format FROM lake.`{ns}`.`{name}`.files").collect()
    return sorted(r.file_format for r in rows)


@pytest.mark.parametrize("file_format", ["avro", "orc"])
def test_avro_and_orc_tables_are_rewritten_in_their_own_format(
    spark, cfg, catalog, namespace, file_format
):
    props = f"{PROPS}, 'write.format.default'='{file_format}'"
    ident = make_table(spark, namespace, inserts=4, props=props)
    before = spark.createDataFrame(contents(spark, ident).collect(), contents(spark, ident).schema)
    assert formats(spark, ident) == [file_format.upper()] * 8
    report = optimize_table(spark, with_engine(cfg, "auto"), ident, action="merge")
    assert report.partitions_rewritten == 2 and len(report.snapshot_ids) == 1
    assert [p.engine for p in report.partitions] == ["spark", "spark"]
    assert report.rows_verified == before.count()
    assert current_operation(catalog, ident) == "replace"
    assert formats(spark, ident) == [file_format.upper()] * 2
    assert_df_equality(contents(spark, ident), before, ignore_row_order=True)
