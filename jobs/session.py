"""The one place that builds a SparkSession from the icefloe config.

Local runs get ``spark.master`` and the Iceberg jars from the config and ``.jars/``; under
``spark-submit`` the master and jars come from the command line and are left alone.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from service.catalog import ICEBERG_RUNTIME, SPARK_EXTENSIONS, spark_catalog_conf
from service.config import PROJECT_ROOT, Config

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

JARS_DIR = Path(os.environ.get("ICEFLOE_JARS_DIR", PROJECT_ROOT / ".jars"))


def local_jars(jars_dir: Path = JARS_DIR) -> list[str]:
    return sorted(str(p) for p in jars_dir.glob("*.jar")) if jars_dir.is_dir() else []


def spark_conf(cfg: Config, under_submit: bool = False) -> dict[str, str]:
    """Every Spark setting icefloe applies, as a plain dict (tested without a JVM)."""
    conf = {
        "spark.sql.extensions": SPARK_EXTENSIONS,
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.showConsoleProgress": "false",
    }
    conf.update(spark_catalog_conf(cfg.catalog))
    if not under_submit:
        conf["spark.master"] = cfg.spark.master
        jars = local_jars()
        if jars:
            conf["spark.jars"] = ",".join(jars)
        else:
            conf["spark.jars.packages"] = ICEBERG_RUNTIME + ",org.xerial:sqlite-jdbc:3.50.3.0"
    conf.update(cfg.spark.conf)
    return conf


def under_spark_submit(env: Mapping[str, str] = os.environ) -> bool:
    """True inside a driver started by ``spark-submit`` (the JVM launched this Python)."""
    return "PYSPARK_GATEWAY_PORT" in env


def build_spark(
    cfg: Config, app_name: str = "icefloe", extra: Mapping[str, str] | None = None
) -> SparkSession:
    from pyspark.sql import SparkSession

    if cfg.spark.master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        # Python tasks (the Arrow engine) run in this interpreter's environment
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    for key, value in {**spark_conf(cfg, under_spark_submit()), **(extra or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def activate(spark: SparkSession) -> None:
    """Make ``spark`` the JVM's active session on the calling thread.

    PySpark pins each Python thread to its own JVM thread, and a fresh JVM thread has no
    active session: direct JVM calls such as ``Spark3Util.loadIcebergTable`` then resolve
    catalog names against ``spark_catalog`` and fail. Call this before such calls.
    """
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    jvm.org.apache.spark.sql.SparkSession.setActiveSession(spark._jsparkSession)
