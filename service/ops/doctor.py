"""``icefloe doctor``: is everything icefloe needs here, and if not, how to fix it."""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import asdict, dataclass

from service.config import Config
from service.redact import scrub

BOOTSTRAP = "run scripts/bootstrap.sh (or `make bootstrap`)"


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


def check_jars(cfg: Config) -> Check:
    from service.spark import JARS_DIR, local_jars

    names = [j.rsplit("/", 1)[-1] for j in local_jars()]
    need = ["iceberg-spark-runtime-4.1_2.13"]
    if cfg.catalog.type == "sql":
        need.append("postgresql" if "postgres" in cfg.catalog.uri else "sqlite-jdbc")
    missing = [n for n in need if not any(j.startswith(n) for j in names)]
    if missing:
        return Check("jars", False, f"missing in {JARS_DIR}: {', '.join(missing)}", BOOTSTRAP)
    return Check("jars", True, f"{len(names)} jars in {JARS_DIR}")


def check_catalog(cfg: Config) -> Check:
    from service.catalog import load_catalog

    try:
        namespaces = load_catalog(cfg).list_namespaces()
    except Exception as e:
        return Check(
            "catalog",
            False,
            f"{cfg.catalog.name}: {scrub(str(e).splitlines()[0][:200])}",
            "check catalog.uri / catalog.warehouse in the config",
        )
    return Check(
        "catalog", True, f"{cfg.catalog.name} ({cfg.catalog.type}): {len(namespaces)} namespaces"
    )


def check_redis(cfg: Config) -> Check:
    import redis

    url = cfg.redis.redacted_url()
    try:
        client = redis.Redis.from_url(cfg.redis.url, socket_timeout=2, socket_connect_timeout=2)
        client.ping()
        version = client.info("server").get("redis_version", "?")
    except Exception as e:
        return Check(
            "redis",
            False,
            f"{url}: {type(e).__name__}",
            f"start Redis or fix redis.url; {BOOTSTRAP}",
        )
    return Check("redis", True, f"{url} (Redis {version})")


def check_python_packages() -> Check:
    from importlib.metadata import PackageNotFoundError, version

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
    return [
        check_python_packages(),
        check_java(),
        check_jars(cfg),
        check_catalog(cfg),
        check_redis(cfg),
    ]
