"""Spark and PyIceberg get the same catalog, from the same config, with the same name."""

from __future__ import annotations

from typing import Any

import pytest

from icefloe.base.catalog import pyiceberg_properties, spark_catalog_conf, spark_table_name
from icefloe.base.config import CatalogConfig, build_config
from icefloe.base.errors import ConfigError
from icefloe.base.spark import spark_conf
from tests.support.config import base

pytestmark = pytest.mark.unit


def test_sqlite_catalog_maps_to_jdbc() -> None:
    cat = CatalogConfig("lake", "sql", "sqlite:////data/cat.db", "file:///data/wh", {"k": "v"})
    conf = spark_catalog_conf(cat)
    assert conf["spark.sql.catalog.lake"] == "org.apache.iceberg.spark.SparkCatalog"
    assert conf["spark.sql.catalog.lake.type"] == "jdbc"
    assert conf["spark.sql.catalog.lake.uri"] == "jdbc:sqlite:/data/cat.db"
    assert conf["spark.sql.catalog.lake.warehouse"] == "file:///data/wh"
    assert conf["spark.sql.catalog.lake.k"] == "v"
    assert pyiceberg_properties(cat) == {
        "type": "sql",
        "uri": "sqlite:////data/cat.db",
        "warehouse": "file:///data/wh",
        "k": "v",
    }


def test_postgres_catalog_credentials_move_to_properties() -> None:
    cat = CatalogConfig("lake", "sql", "postgresql+psycopg2://ice:pw@db:5433/cat", "s3://b/wh")
    conf = spark_catalog_conf(cat)
    assert conf["spark.sql.catalog.lake.uri"] == "jdbc:postgresql://db:5433/cat"
    assert conf["spark.sql.catalog.lake.jdbc.user"] == "ice"
    assert conf["spark.sql.catalog.lake.jdbc.password"] == "pw"


def test_rest_catalog_passes_uri() -> None:
    conf = spark_catalog_conf(
        CatalogConfig("prod", "rest", "https://cat/api", "wh", {"token": "t"})
    )
    assert conf["spark.sql.catalog.prod.type"] == "rest"
    assert conf["spark.sql.catalog.prod.uri"] == "https://cat/api"
    assert conf["spark.sql.catalog.prod.token"] == "t"


def test_unsupported_sql_uri_is_a_config_error_without_secrets() -> None:
    with pytest.raises(ConfigError) as err:
        spark_catalog_conf(CatalogConfig("lake", "sql", "mysql://u:secret@h/db", "wh"))
    assert "secret" not in str(err.value)


def test_spark_conf_local_and_under_submit() -> None:
    raw: dict[str, Any] = base()
    raw["spark"]["conf"]["spark.sql.shuffle.partitions"] = 3
    cfg = build_config(raw)
    local = spark_conf(cfg)
    assert local["spark.master"] == "local[*]"
    assert "spark.jars" in local or "spark.jars.packages" in local
    assert local["spark.sql.shuffle.partitions"] == "3"
    submitted = spark_conf(cfg, under_submit=True)
    assert "spark.master" not in submitted and "spark.jars" not in submitted
    assert submitted["spark.sql.catalog.lake.type"] == "jdbc"


def test_spark_table_name_quotes_parts() -> None:
    cfg = build_config(base())
    assert spark_table_name(cfg, "db.events") == "lake.`db`.`events`"
