"""The one list of the JVM artifacts icefloe runs with, and where Spark gets them from.

``scripts/bootstrap.sh`` downloads exactly :data:`ARTIFACTS` into ``.jars/``
(``python -m icefloe.base.versions maven-paths`` prints their Maven repository paths); Spark
sessions and ``spark-submit`` command lines then take the local jars, or, where ``.jars/``
is empty, the same coordinates as ``--packages`` (:func:`jar_settings`).

The local backend servers of ``icefloe dev`` (:mod:`icefloe.app.ops.dev`) never go on Spark's
classpath: :data:`SERVER_ARTIFACTS` land in ``.jars/servers/`` (``server-maven-paths``), and
the REST catalog server's classpath in ``.jars/rest-catalog/`` (Maven resolves it from
``scripts/rest-catalog/pom.xml``).

icefloe's own Spark SQL extension (:data:`EXTENSIONS_CLASS`, the skew rule) is built from
``jvm/pom.xml`` by the same script into ``.jars/`` (``extensions-jar`` prints the jar's
name), so it is among the local jars; Maven Central does not have it, so a session that
resolves ``--packages`` runs without it (:func:`sql_extensions`).
"""

from __future__ import annotations

import os
import sys
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

# not icefloe.base.config's: that module imports pydantic, not needed here
PROJECT_ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Artifact:
    """One Maven artifact (a jar)."""

    group: str
    name: str
    version: str
    classifier: str = ""

    @property
    def coordinate(self) -> str:
        """``group:name:version``, what ``--packages`` / ``spark.jars.packages`` take."""
        return f"{self.group}:{self.name}:{self.version}"

    @property
    def jar(self) -> str:
        suffix = f"-{self.classifier}" if self.classifier else ""
        return f"{self.name}-{self.version}{suffix}.jar"

    @property
    def maven_path(self) -> str:
        """The jar's path under a Maven repository root (its ``.sha1`` sits beside it)."""
        return f"{self.group.replace('.', '/')}/{self.name}/{self.version}/{self.jar}"


ICEBERG = Artifact("org.apache.iceberg", "iceberg-spark-runtime-4.1_2.13", "1.12.0")
SQLITE_JDBC = Artifact("org.xerial", "sqlite-jdbc", "3.50.3.0")
POSTGRESQL = Artifact("org.postgresql", "postgresql", "42.7.8")
ICEBERG_AWS = Artifact("org.apache.iceberg", "iceberg-aws-bundle", "1.12.0")  # S3FileIO
ARTIFACTS: tuple[Artifact, ...] = (ICEBERG, SQLITE_JDBC, POSTGRESQL, ICEBERG_AWS)
ICEBERG_RUNTIME = ICEBERG.coordinate

S3PROXY = Artifact("org.gaul", "s3proxy", "4.1.0", "jar-with-dependencies")
SERVER_ARTIFACTS: tuple[Artifact, ...] = (S3PROXY,)  # .jars/servers/, never on Spark's classpath

ICEBERG_EXTENSIONS_CLASS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
EXTENSIONS_CLASS = "dev.icefloe.spark.IcefloeSparkExtensions"
"""icefloe's Spark SQL extension (``jvm/``): the skew rule."""
EXTENSIONS_ARTIFACT = "icefloe-spark-extensions"
"""Its jar: ``icefloe-spark-extensions-<version>.jar`` (:func:`extensions_jar`)."""
EXTENSIONS_POM = PROJECT_ROOT / "jvm" / "pom.xml"

JARS_DIR = Path(os.environ.get("ICEFLOE_JARS_DIR", PROJECT_ROOT / ".jars"))
SERVERS_DIR = JARS_DIR / "servers"
REST_CATALOG_DIR = JARS_DIR / "rest-catalog"  # its jars, and classes/ (IcefloeRestServer)


def local_jars(jars_dir: Path = JARS_DIR) -> list[str]:
    """The jars in ``jars_dir`` (``.jars/``), sorted; empty when there is no such folder."""
    return sorted(str(p) for p in jars_dir.glob("*.jar")) if jars_dir.is_dir() else []


def extensions_jar(pom: Path = EXTENSIONS_POM) -> str:
    """The jar name ``mvn package`` makes of ``pom``: ``<artifactId>-<version>.jar``."""
    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    root = ET.parse(pom).getroot()
    name, version = (
        root.findtext("m:artifactId", namespaces=ns),
        root.findtext("m:version", namespaces=ns),
    )
    if name != EXTENSIONS_ARTIFACT or not version:
        raise ValueError(f"{pom}: expected artifactId {EXTENSIONS_ARTIFACT} and a version")
    return f"{name}-{version}.jar"


def is_extensions_jar(path: str) -> bool:
    """``path`` (a file, or a URL as in ``spark.jars``) names icefloe's extension jar."""
    name = path.rstrip("/").rsplit("/", 1)[-1]
    return name.startswith(f"{EXTENSIONS_ARTIFACT}-") and name.endswith(".jar")


def sql_extensions(jars: Sequence[str]) -> str:
    """``spark.sql.extensions`` of a session whose classpath gets ``jars``: Iceberg's, and
    icefloe's when its jar is among them (never a class the session cannot load)."""
    if any(is_extensions_jar(j) for j in jars):
        return f"{ICEBERG_EXTENSIONS_CLASS},{EXTENSIONS_CLASS}"
    return ICEBERG_EXTENSIONS_CLASS


@dataclass(frozen=True)
class JarSettings:
    """Local jars, or (when there are none) Maven coordinates for Spark to resolve."""

    jars: tuple[str, ...]
    packages: tuple[str, ...]

    def spark_conf(self) -> dict[str, str]:
        """The same as ``spark.jars`` / ``spark.jars.packages`` settings."""
        if self.jars:
            return {"spark.jars": ",".join(self.jars)}
        return {"spark.jars.packages": ",".join(self.packages)}

    @property
    def sql_extensions(self) -> str:
        """``spark.sql.extensions`` for these jars (:func:`sql_extensions`)."""
        return sql_extensions(self.jars)


def jar_settings(jars_dir: Path = JARS_DIR) -> JarSettings:
    """``.jars/`` if bootstrap filled it, else every artifact as a package."""
    jars = tuple(local_jars(jars_dir))
    return JarSettings(jars, () if jars else tuple(a.coordinate for a in ARTIFACTS))


def main(argv: list[str]) -> int:
    if argv == ["maven-paths"]:
        print("\n".join(a.maven_path for a in ARTIFACTS))
        return 0
    if argv == ["server-maven-paths"]:
        print("\n".join(a.maven_path for a in SERVER_ARTIFACTS))
        return 0
    if argv == ["coordinates"]:
        print("\n".join(a.coordinate for a in ARTIFACTS))
        return 0
    if argv[:1] == ["extensions-jar"] and len(argv) <= 2:
        print(extensions_jar(Path(argv[1]) if len(argv) == 2 else EXTENSIONS_POM))
        return 0
    print(
        "usage: python -m icefloe.base.versions "
        "maven-paths|server-maven-paths|coordinates|extensions-jar [POM]",
        file=sys.stderr,
    )
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
