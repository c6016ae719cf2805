"""Readers seen: a Spark session whose catalog names icefloe's reporter
(``icefloe reads --spark-conf``) reads 3 of 12 managed tables, and ``icefloe reads`` shows
those 3 with their scans; a reader whose Redis is gone loses no query, and the reports it
dropped are counted."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from icefloe.app.cli import cli
from icefloe.base.catalog import spark_catalog_conf
from icefloe.base.config import load_config
from icefloe.service.observe.reads import REPORTER, reporter_conf
from tests.support.config import config_raw, redis_url

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.redis]


def _reader(spark: Any, cfg: Any, conf: dict[str, str]) -> Any:
    """A reader's session: the run's SparkContext, its own catalogs, the lake's reporting as
    ``conf`` says (a session loads a catalog from its conf the first time a query names it)."""
    session = spark.newSession()
    for key, value in (spark_catalog_conf(cfg.catalog) | conf).items():
        session.conf.set(key, value)
    return session


def _flush(spark: Any) -> None:
    jvm = spark.sparkContext._jvm
    assert jvm.dev.icefloe.iceberg.ReadReporter.flush(20_000), "reports still queued"


def test_the_tables_a_reader_scans_are_the_ones_icefloe_reads_shows(
    spark: Any, lake_home: Path, tmp_path: Path, redis_client: Any
) -> None:
    ns = f"r_{uuid.uuid4().hex[:8]}"
    prefix = f"icefloe-reads-{uuid.uuid4().hex[:6]}"
    raw = config_raw(lake_home, managed={"namespaces": [ns]})
    raw["redis"] = {"url": redis_url(), "key_prefix": prefix}
    conf_file = tmp_path / "icefloe.yaml"
    conf_file.write_text(yaml.safe_dump(raw))
    cfg = load_config(str(conf_file))
    lake = cfg.catalog.name
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {lake}.{ns}")
    for i in range(12):
        spark.sql(f"CREATE TABLE {lake}.{ns}.t{i} (id BIGINT, day STRING) USING iceberg")
        spark.sql(f"INSERT INTO {lake}.{ns}.t{i} VALUES (1, 'a'), (2, 'b')")
        spark.sql(f"INSERT INTO {lake}.{ns}.t{i} VALUES (3, 'a')")

    # what the README says: the settings `icefloe reads --spark-conf` prints
    printed = CliRunner().invoke(cli, ["--config", str(conf_file), "reads", "--spark-conf"])
    assert printed.exit_code == 0, printed.output
    settings = dict(line.split("=", 1) for line in printed.stdout.splitlines())
    assert settings[f"spark.sql.catalog.{lake}.metrics-reporter-impl"] == REPORTER
    assert settings == reporter_conf(cfg)  # the test Redis has no password
    reader = _reader(spark, cfg, settings)

    scans = {"t1": 3, "t4": 1, "t7": 2}
    for t, n in scans.items():
        for _ in range(n):
            rows = reader.sql(f"SELECT * FROM {lake}.{ns}.{t} WHERE day = 'a'").collect()
            assert sorted(r.id for r in rows) == [1, 3]
    _flush(spark)

    shown = CliRunner().invoke(cli, ["--config", str(conf_file), "reads", "--json"])
    assert shown.exit_code == 0, shown.output
    data = json.loads(shown.stdout)
    got = {r["table"]: r for r in data["tables"]}
    assert {t: r["scans"] for t, r in got.items()} == {f"{ns}.{t}": n for t, n in scans.items()}
    t1 = got[f"{ns}.t1"]
    assert t1["files_per_scan"] == 2 and t1["filter_columns"] == ["day"]
    assert t1["bytes_per_scan"] > 0 and t1["last_read"]
    assert {"id", "day"} <= set(t1["projected_columns"])
    assert data["reports"]["pending"] == 0 and data["reports"]["folded"] == 6

    one = CliRunner().invoke(cli, ["--config", str(conf_file), "reads", f"{ns}.t0", "--json"])
    assert json.loads(one.stdout)["tables"] == [
        {"table": f"{ns}.t0", "scans": 0, "last_read": None}
    ]
    bad = CliRunner().invoke(cli, ["--config", str(conf_file), "reads", "nope.t0"])
    assert bad.exit_code != 0 and "not managed" in str(bad.exception)


def test_a_reader_whose_redis_is_gone_loses_no_query_and_counts_what_it_dropped(
    spark: Any, lake_home: Path, tmp_path: Path
) -> None:
    from tests.support.cluster import free_ports

    ns = f"r_{uuid.uuid4().hex[:8]}"
    raw = config_raw(lake_home, managed={"namespaces": [ns]})
    raw["redis"] = {"url": f"redis://127.0.0.1:{free_ports(1)[0]}/0", "key_prefix": "gone"}
    cfg = load_config(_write(tmp_path, raw))
    lake = cfg.catalog.name
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {lake}.{ns}")
    spark.sql(f"CREATE TABLE {lake}.{ns}.t (id BIGINT) USING iceberg")
    spark.sql(f"INSERT INTO {lake}.{ns}.t VALUES (1), (2)")
    reader = _reader(spark, cfg, reporter_conf(cfg))
    jvm = spark.sparkContext._jvm
    before = jvm.dev.icefloe.iceberg.ReadReporter.dropped()
    for _ in range(5):  # nothing listens on that port: every query still answers
        assert reader.sql(f"SELECT count(*) FROM {lake}.{ns}.t").collect()[0][0] == 2
    _flush(spark)
    assert jvm.dev.icefloe.iceberg.ReadReporter.dropped() - before == 5


def _write(tmp_path: Path, raw: dict[str, Any]) -> str:
    path = tmp_path / "icefloe.yaml"
    path.write_text(yaml.safe_dump(raw))
    return str(path)
