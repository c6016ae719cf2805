"""``icefloe doctor``: is everything icefloe needs here, and if not, how to fix it.

Checks, in order: packages, java, jars, catalog, warehouse (a write-read-delete probe
through PyIceberg's FileIO), spark (the master) and redis. No check's detail or fix ever
holds a secret: URLs go through :func:`icefloe.base.redact.display_url`, library messages
through :func:`icefloe.base.redact.scrub`.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import asdict, dataclass
from importlib.metadata import PackageNotFoundError, version
from urllib.parse import urlsplit

from icefloe.app.ops import probes
from icefloe.base.catalog import load_catalog, pyiceberg_properties, sqlite_path
from icefloe.base.config import CatalogConfig, Config
from icefloe.base.redact import display_url, register_secrets, scrub
from icefloe.base.spark import JARS_DIR, local_jars
from icefloe.base.versions import EXTENSIONS_ARTIFACT

BOOTSTRAP = "run scripts/bootstrap.sh (or `make bootstrap`)"
S3_FILE_IO = "org.apache.iceberg.aws.s3.S3FileIO"
MASTERS = "local[*], local-cluster[N,C,M], spark://host:port, yarn or k8s://…"


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def check_java() -> Check:
    java = shutil.which("java")
    if java is None:
        return Check(
            "java",
            False,
            "java not found on PATH",
            "install Java 17+ (apt-get install openjdk-17-jre-headless)",
        )
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30).stderr
    except (OSError, subprocess.TimeoutExpired) as e:
        return Check("java", False, f"java -version failed: {e}", "reinstall Java 17+")
    m = re.search(r'version "(\d+)', out)
    major = int(m.group(1)) if m else 0
    if major < 17:
        return Check(
            "java", False, f"Java {major or '?'} found, Spark 4.1 needs 17+", "install Java 17+"
        )
    return Check("java", True, f"Java {major} at {java}")


def _is_postgres(uri: str) -> bool:
    return urlsplit(uri).scheme.split("+", 1)[0] in ("postgresql", "postgres")


def uses_s3(cat: CatalogConfig) -> bool:
    """Whether Spark reaches this catalog's files through S3FileIO (iceberg-aws-bundle)."""
    return cat.properties.get("io-impl") == S3_FILE_IO or cat.warehouse.startswith(
        ("s3://", "s3a://")
    )


def required_jars(cat: CatalogConfig) -> list[str]:
    """The name prefixes of the jars Spark needs in ``.jars/`` for this catalog (and icefloe's
    SQL extension, the skew rule, which every session names when its jar is there)."""
    need = ["iceberg-spark-runtime-4.1_2.13", EXTENSIONS_ARTIFACT]
    if cat.type == "sql":
        need.append("postgresql" if _is_postgres(cat.uri) else "sqlite-jdbc")
    if uses_s3(cat):
        need.append("iceberg-aws-bundle")
    return need


def check_jars(cfg: Config) -> Check:
    names = [j.rsplit("/", 1)[-1] for j in local_jars()]
    need = required_jars(cfg.catalog)
    missing = [n for n in need if not any(j.startswith(n) for j in names)]
    if missing:
        return Check("jars", False, f"missing in {JARS_DIR}: {', '.join(missing)}", BOOTSTRAP)
    return Check("jars", True, f"{len(names)} jars in {JARS_DIR}")


def catalog_fix(cat: CatalogConfig) -> str:
    """How to fix an unreachable catalog, by its type."""
    if cat.type == "sql" and cat.uri.startswith("sqlite:"):
        path = cat.uri[len("sqlite:///") :] if cat.uri.startswith("sqlite:///") else cat.uri
        return f"is {path} a SQLite database in a folder icefloe can write? fix catalog.uri"
    if cat.type == "sql" and _is_postgres(cat.uri):
        return "is PostgreSQL running? `icefloe dev up --profile postgres` (or fix catalog.uri)"
    if cat.type == "rest":
        return (
            f"is the REST server at {display_url(cat.uri)} running? "
            "`icefloe dev up --profile rest-s3` (or fix catalog.uri)"
        )
    return "check catalog.uri / catalog.warehouse in the config"


def check_catalog(cfg: Config) -> Check:
    cat = cfg.catalog
    where = f"{cat.name} ({cat.type}, {display_url(cat.uri)})"
    db = sqlite_path(cat)
    if db is not None and not db.exists():  # read-only: doctor creates no catalog
        return Check(
            "catalog",
            True,
            f"{where}: not created yet (the first command that writes, e.g. `icefloe demo`, "
            "creates it; if it should hold tables, check catalog.uri)",
        )
    try:
        namespaces = load_catalog(cfg, read_only=True).list_namespaces()
    except Exception as e:
        first = str(e).strip().splitlines()[0][:200] if str(e).strip() else type(e).__name__
        return Check("catalog", False, f"{where}: {scrub(first)}", catalog_fix(cat))
    return Check("catalog", True, f"{where}: {len(namespaces)} namespaces")


def warehouse_fix(cat: CatalogConfig, scheme: str) -> str:
    """The likely cause of a failed warehouse probe, by the warehouse's scheme."""
    if scheme in probes.S3_SCHEMES:
        bucket = urlsplit(cat.warehouse).netloc or "?"
        endpoint = cat.properties.get("s3.endpoint", "")
        where = f"s3.endpoint {display_url(endpoint)}" if endpoint else "the S3 endpoint"
        return (
            f"check {where}, the S3 keys (s3.access-key-id, s3.secret-access-key) and that "
            f"bucket {bucket!r} exists (local S3: `icefloe dev up --profile rest-s3`)"
        )
    if scheme == "file":
        folder = urlsplit(cat.warehouse).path if "://" in cat.warehouse else cat.warehouse
        return (
            f"make {folder} a folder icefloe can write: check its permissions (and that no "
            "part of the path is a file), or fix catalog.warehouse"
        )
    return "check catalog.warehouse and the storage credentials in catalog.properties"


def check_warehouse(cfg: Config) -> Check:
    cat = cfg.catalog
    shown = display_url(cat.warehouse)
    scheme = probes.location_scheme(cat.warehouse)
    if scheme is None:
        return Check(
            "warehouse",
            True,
            f"{shown}: not checked (not a location PyIceberg can write, e.g. a REST "
            "catalog's warehouse name; the catalog server resolves it)",
        )
    try:
        io_name = probes.probe_warehouse(pyiceberg_properties(cat), cat.warehouse)
    except probes.ProbeError as e:
        return Check("warehouse", False, f"{shown}: {scrub(str(e))}", warehouse_fix(cat, scheme))
    return Check("warehouse", True, f"{shown}: write, read, delete ok ({io_name})")


def check_spark(cfg: Config) -> Check:
    master = cfg.spark.master
    shown = display_url(master)
    parsed = probes.parse_master(master)
    if parsed.kind == "local":
        return Check("spark", True, f"{shown}: in-process")
    if parsed.kind == "local-cluster":
        return Check("spark", True, f"{shown}: a local cluster started in-process")
    if parsed.kind in ("yarn", "k8s"):
        return Check("spark", True, f"{shown}: not checked ({parsed.kind} schedules the job)")
    if parsed.kind == "invalid":
        return Check(
            "spark", False, f"{shown}: not a Spark master URL", f"set spark.master to {MASTERS}"
        )
    failed = [
        (host, port, why)
        for host, port in parsed.endpoints
        if (why := probes.tcp_connect(host, port)) is not None
    ]
    if not failed:
        return Check("spark", True, f"{shown}: master answering")
    host, port, _ = failed[0]
    reasons = "; ".join(f"{h}:{p}: {scrub(why)}" for h, p, why in failed)
    return Check(
        "spark",
        False,
        f"{shown}: cannot connect to {reasons}",
        "start the master (`spark-class org.apache.spark.deploy.master.Master "
        f"--host {host} --port {port}`) or fix spark.master",
    )


def check_redis(cfg: Config) -> Check:
    # redis-py, slow to import: only when Redis is used
    import redis

    url = cfg.redis.redacted_url()
    try:
        client = redis.Redis.from_url(cfg.redis.url, socket_timeout=2, socket_connect_timeout=2)
        client.ping()
        version = client.info("server").get("redis_version", "?")
    except (redis.AuthenticationError, redis.exceptions.AuthenticationWrongNumberOfArgsError) as e:
        return Check(
            "redis",
            False,
            f"{url}: {scrub(probes.error_line(e))}",
            "check the password in redis.url (`redis://:PASSWORD@host:port/db`, or "
            "`redis://USER:PASSWORD@…` for an ACL user)",
        )
    except Exception as e:
        return Check(
            "redis",
            False,
            f"{url}: {scrub(probes.error_line(e))}",
            f"start Redis or fix redis.url; {BOOTSTRAP}",
        )
    return Check("redis", True, f"{url} (Redis {version})")


def check_python_packages() -> Check:
    want = {"pyspark": "4.1.3", "pyiceberg": "0.12.0", "pyarrow": "26.0.1", "redis": "8.1.0"}
    bad = []
    for pkg, pinned in want.items():
        try:
            got = version(pkg)
        except PackageNotFoundError:
            got = "missing"
        if got != pinned:
            bad.append(f"{pkg} {got} (want {pinned})")
    if bad:
        return Check("packages", False, "; ".join(bad), BOOTSTRAP)
    return Check("packages", True, ", ".join(f"{k} {v}" for k, v in want.items()))


def run_checks(cfg: Config) -> list[Check]:
    """Every check, in order; the config's secrets are registered first, so no library
    message can carry one into a detail."""
    register_secrets(cfg.secret_values())
    return [
        check_python_packages(),
        check_java(),
        check_jars(cfg),
        check_catalog(cfg),
        check_warehouse(cfg),
        check_spark(cfg),
        check_redis(cfg),
    ]
