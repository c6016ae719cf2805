"""The one place that builds a SparkSession from the icefloe config.

Local runs get ``spark.master`` and the Iceberg jars from the config and ``.jars/``; under
``spark-submit`` the master and jars come from the command line and are left alone.
``spark.sql.extensions`` names Iceberg's extensions, and icefloe's (the skew rule) whenever
its jar is among the jars the session gets (:func:`icefloe.base.versions.sql_extensions`).

A driver JVM icefloe starts itself logs through :data:`LOG4J2_CONF`: nothing on the console,
errors to :func:`spark_log_file`, so a command's stderr holds its own lines only
(``ICEFLOE_DEBUG=1``: Spark's defaults, everything on stderr). Under ``spark-submit`` the
cluster's logging configuration applies.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from icefloe.base.catalog import spark_catalog_conf
from icefloe.base.config import Config
from icefloe.base.errors import ConfigError
from icefloe.base.redact import is_secret_name
from icefloe.base.versions import JARS_DIR, JarSettings, jar_settings, local_jars

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

ARCHIVE_ALIAS = "icefloe_deps"
"""The directory Spark extracts the ``icefloe pack`` archive into, in each executor's working
directory."""

LOG4J2_CONF = Path(__file__).with_name("spark_log4j2.properties")
"""The driver JVM's log4j2 configuration unless ``ICEFLOE_DEBUG`` is set (see the module doc)."""
DRIVER_JAVA_OPTIONS = "spark.driver.extraJavaOptions"
_OWN_LOG4J = re.compile(r"-Dlog4j2?\.configuration")  # the user's own log4j configuration

__all__ = [
    "JARS_DIR",
    "LOG4J2_CONF",
    "activate",
    "build_spark",
    "executor_deps_conf",
    "in_process_master",
    "local_jars",
    "public_conf",
    "python_workers_env",
    "quiet_driver_conf",
    "register_catalog",
    "secret_conf",
    "session_conf",
    "spark_conf",
    "spark_log_file",
    "submit_conf",
    "under_spark_submit",
]


def in_process_master(master: str) -> bool:
    """``local`` / ``local[N]``: executors are threads of the driver's JVM, Python tasks run
    on this machine. ``local-cluster[...]`` is not: it starts executor JVMs like a cluster."""
    return master == "local" or master.startswith("local[")


def executor_deps_conf(deps: str, conf: Mapping[str, str]) -> dict[str, str]:
    """``spark.archives`` and the executors' ``PYTHONPATH`` for the ``icefloe pack`` archive,
    added to whatever ``conf`` already sets for them."""
    if "://" not in deps and not Path(deps).is_file():
        raise ConfigError(
            f"config key 'spark.executor_deps': no archive at {deps} (build it with `icefloe pack`)"
        )
    archives = [a for a in conf.get("spark.archives", "").split(",") if a]
    path = [p for p in conf.get("spark.executorEnv.PYTHONPATH", "").split(":") if p]
    return {
        "spark.archives": ",".join([*archives, f"{deps}#{ARCHIVE_ALIAS}"]),
        "spark.executorEnv.PYTHONPATH": ":".join([ARCHIVE_ALIAS, *path]),
    }


def spark_conf(
    cfg: Config, under_submit: bool = False, jars: JarSettings | None = None
) -> dict[str, str]:
    """Every Spark setting icefloe applies, as a plain dict (tested without a JVM).

    ``jars``: what the session's classpath gets (default: :func:`jar_settings`, ``.jars/``);
    a local session gets them as ``spark.jars``, under ``spark-submit`` the command line
    carries them. Either way they decide ``spark.sql.extensions``."""
    jars = jar_settings() if jars is None else jars
    conf = {
        "spark.sql.extensions": jars.sql_extensions,
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.showConsoleProgress": "false",
    }
    conf.update(spark_catalog_conf(cfg.catalog))
    if not under_submit:
        conf["spark.master"] = cfg.spark.master
        conf.update(jars.spark_conf())
    conf.update(cfg.spark.conf)
    if cfg.spark.executor_deps and not in_process_master(cfg.spark.master):
        conf.update(executor_deps_conf(cfg.spark.executor_deps, conf))
    return conf


def submit_conf(cfg: Config, jars: JarSettings | None = None) -> dict[str, str]:
    """:func:`spark_conf` for a ``spark-submit`` command line that carries ``jars`` (default:
    :func:`jar_settings`) as ``--jars``/``--packages``: without the entries that hold a
    secret (S3 keys, a JDBC password, any secret-named catalog property). A command line
    is seen by ``ps`` and logged by schedulers; the job's driver loads the config itself
    and adds them to its session (:func:`build_spark`)."""
    return public_conf(cfg, spark_conf(cfg, under_submit=True, jars=jars))


def public_conf(cfg: Config, conf: Mapping[str, str]) -> dict[str, str]:
    """``conf`` without the entries that hold one of ``cfg``'s secrets (or a secret-named
    key): what may go on a command line; :func:`secret_conf` is the rest."""
    secrets = cfg.secret_values()
    return {
        key: value
        for key, value in conf.items()
        if not is_secret_name(key.rsplit(".", 1)[-1]) and not any(s in value for s in secrets)
    }


def secret_conf(cfg: Config, conf: Mapping[str, str]) -> dict[str, str]:
    """The entries of ``conf`` that :func:`public_conf` leaves out."""
    public = public_conf(cfg, conf)
    return {key: value for key, value in conf.items() if key not in public}


def under_spark_submit(env: Mapping[str, str] = os.environ) -> bool:
    """True inside a driver started by ``spark-submit`` (the JVM launched this Python)."""
    return "PYSPARK_GATEWAY_PORT" in env


def python_workers_env(
    master: str, conf: Mapping[str, str], env: Mapping[str, str]
) -> dict[str, str]:
    """The ``PYSPARK_PYTHON`` an in-process SparkContext gives its Python workers.

    PySpark reads only the environment variable; ``spark.pyspark.python`` is applied by
    ``spark-submit`` alone. Here the conf wins too, as under ``spark-submit``. Without
    either, in-process masters run the tasks (the Arrow engine) in this interpreter's
    environment; on a cluster the executors' own Python runs them, with
    ``spark.executor_deps`` on its path.
    """
    if conf.get("spark.pyspark.python"):
        return {"PYSPARK_PYTHON": conf["spark.pyspark.python"]}
    if in_process_master(master) and "PYSPARK_PYTHON" not in env:
        return {"PYSPARK_PYTHON": sys.executable}
    return {}


def _java_option(value: str) -> str:
    """``value`` as one word of a Spark ``extraJavaOptions`` string (the launcher splits it
    on whitespace, honouring double quotes and backslash escapes)."""
    if not re.search(r"[\s\"'\\]", value):
        return value
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def quiet_driver_conf(conf: Mapping[str, str], log_file: Path) -> dict[str, str]:
    """``spark.driver.extraJavaOptions`` of ``conf`` with :data:`LOG4J2_CONF` (and the log
    file it writes to) appended; nothing when those options name a log4j configuration of
    their own. Set before the driver JVM starts: it is read at JVM start only."""
    options = conf.get(DRIVER_JAVA_OPTIONS, "").strip()
    if _OWN_LOG4J.search(options):
        return {}
    ours = (
        f"-Dlog4j2.configurationFile={_java_option(LOG4J2_CONF.as_uri())} "
        f"-Dicefloe.spark.log={_java_option(str(log_file))}"
    )
    return {DRIVER_JAVA_OPTIONS: f"{options} {ours}".strip()}


def spark_log_file() -> Path:
    """Where a quiet driver JVM writes its errors: ``spark.log`` in a folder of this user's
    own under the temporary directory (a fresh folder if that one is not ours to write)."""
    folder = Path(tempfile.gettempdir()) / f"icefloe-{os.getuid()}"
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        if folder.is_symlink() or folder.stat().st_uid != os.getuid():  # not ours
            raise PermissionError(folder)
    except OSError:
        folder = Path(tempfile.mkdtemp(prefix="icefloe-"))
    return folder / "spark.log"


def session_conf(
    cfg: Config,
    extra: Mapping[str, str] | None = None,
    env: Mapping[str, str] = os.environ,
    log_file: Path | None = None,
    submitted_jars: Sequence[str] = (),
) -> dict[str, str]:
    """What :func:`build_spark` configures: :func:`spark_conf`, then ``extra``, then (for a
    driver JVM icefloe starts, unless ``ICEFLOE_DEBUG`` is set) :func:`quiet_driver_conf`.
    Under ``spark-submit``, ``submitted_jars`` are the jars its command line gave the
    driver (``spark.jars``): they, not ``.jars/``, decide ``spark.sql.extensions``."""
    under_submit = under_spark_submit(env)
    jars = JarSettings(tuple(submitted_jars), ()) if under_submit else None
    conf = {**spark_conf(cfg, under_submit, jars), **(extra or {})}
    if not under_submit and not env.get("ICEFLOE_DEBUG"):
        conf.update(quiet_driver_conf(conf, log_file or spark_log_file()))
    return conf


def build_spark(
    cfg: Config, app_name: str = "icefloe", extra: Mapping[str, str] | None = None
) -> SparkSession:
    # pyspark: only where Spark runs (the module loads without it)
    from pyspark.sql import SparkSession

    if cfg.spark.master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    submitted = _submitted_jars() if under_spark_submit() else []
    conf = session_conf(cfg, extra, submitted_jars=submitted)
    os.environ.update(python_workers_env(cfg.spark.master, conf, os.environ))
    builder = SparkSession.builder.appName(app_name)
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _submitted_jars() -> list[str]:
    """The ``spark.jars`` that ``spark-submit`` gave this driver (a system property of the
    JVM it launched this Python from): read before the session's own conf replaces it."""
    # pyspark: only where Spark runs (the module loads without it)
    from pyspark import SparkContext

    SparkContext._ensure_initialized()  # connects to spark-submit's JVM, starts no context
    jvm = SparkContext._jvm
    assert jvm is not None
    jars = str(jvm.java.lang.System.getProperty("spark.jars", ""))
    return [j for j in jars.split(",") if j]


def register_catalog(spark: SparkSession, cfg: Config) -> None:
    """Register ``cfg``'s catalog on a running session (a catalog is instantiated on its
    first use, so this works for a name the session has not used yet): one session can
    then work on several catalogs, e.g. one per backend."""
    for key, value in spark_catalog_conf(cfg.catalog).items():
        spark.conf.set(key, value)


def activate(spark: SparkSession) -> None:
    """Make ``spark`` the JVM's active session on the calling thread.

    PySpark pins each Python thread to its own JVM thread, and a fresh JVM thread has no
    active session: direct JVM calls such as ``Spark3Util.loadIcebergTable`` then resolve
    catalog names against ``spark_catalog`` and fail. Call this before such calls.
    """
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    jvm.org.apache.spark.sql.SparkSession.setActiveSession(spark._jsparkSession)
