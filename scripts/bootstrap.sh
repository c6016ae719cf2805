#!/usr/bin/env bash
# Idempotent set-up for a fresh Debian machine (root, Python 3.11, Java 17):
#   .venv/ with the pinned packages, the Iceberg/JDBC jars in .jars/, redis-server
#   installed and a local Redis answering at the configured URL; for `icefloe dev`, the
#   local backend servers: s3proxy (.jars/servers/), the Iceberg REST catalog server
#   (.jars/rest-catalog/, resolved by Maven, plus its launcher compiled) and PostgreSQL 15.
# A second run checks each step in well under a minute and changes nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=${PYTHON:-python3}
say() { printf '[bootstrap] %s\n' "$*"; }
APT_UPDATED=""
need_pkg() {  # need_pkg COMMAND DEBIAN-PACKAGE: install the package when COMMAND is missing
  if [ -x "$1" ] || command -v "$1" >/dev/null 2>&1; then return 0; fi
  say "installing $2 (Debian)"
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  [ -n "$APT_UPDATED" ] || { $SUDO apt-get update -qq; APT_UPDATED=1; }
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$2" >/dev/null
}

# --- Debian packages, once and before the parallel steps below (apt takes one lock) ------
need_pkg javac openjdk-17-jdk-headless
need_pkg mvn maven
need_pkg /usr/lib/postgresql/15/bin/initdb postgresql-15
need_pkg redis-server redis-server

# --- Python environment ----------------------------------------------------------------
UV_PIN=uv==0.13.10
# the build tools a wheel is built with (tests/integration/test_wheel.py, --no-build-isolation):
# a venv's own setuptools is Python's bundled one, older than pyproject.toml asks
BUILD_PINS=(pip==26.3 setuptools==84.2.1 wheel==0.48.0)
stamp_of() { { cat setup.cfg pyproject.toml; echo "$UV_PIN ${BUILD_PINS[*]}"; } | sha256sum | cut -d' ' -f1; }
if [ ! -x .venv/bin/python ]; then
  say "creating .venv"
  "$PY" -m venv .venv
fi
if [ "$(cat .venv/.icefloe-stamp 2>/dev/null)" != "$(stamp_of)" ]; then
  # uv resolves and installs what pip would, in parallel: about 30 s instead of 3 minutes
  say "installing pinned packages into .venv (first run: under a minute)"
  log=.venv/pip-install.log
  if ! { .venv/bin/python -m pip install -q "$UV_PIN" &&
         .venv/bin/uv pip install -q --python .venv/bin/python "${BUILD_PINS[@]}" -e '.[dev]'; } >"$log" 2>&1; then
    tail -40 "$log"; say "pip install failed (full log: $log)"; exit 1
  fi
  stamp_of > .venv/.icefloe-stamp
else
  say "python packages: up to date"
fi

# --- Jars from Maven Central -------------------------------------------------------------
MAVEN=${ICEFLOE_MAVEN_REPO:-https://repo1.maven.org/maven2}
fetch_jar() {  # fetch_jar MAVEN_PATH DIR: once, checked against Maven Central's sha1
  local path=$1 file
  file=$2/$(basename "$path")
  [ -s "$file" ] && return 0
  say "fetching $(basename "$path")"
  sha1=$(curl -fsSL --retry 3 "$MAVEN/$path.sha1" | cut -c1-40)
  curl -fsSL --retry 3 -o "$file.part" "$MAVEN/$path"
  if [ "$(sha1sum "$file.part" | cut -c1-40)" != "$sha1" ]; then
    rm -f "$file.part"; say "checksum mismatch for $path"; exit 1
  fi
  mv "$file.part" "$file"
}
# the one list of artifacts and versions: base/versions.py (importable after the pip install)
mapfile -t JARS < <(.venv/bin/python -m icefloe.base.versions maven-paths)
[ "${#JARS[@]}" -gt 0 ] || { say "no jars listed by icefloe.base.versions"; exit 1; }
# .jars/*.jar is Spark's classpath: the servers' jars live in folders below it
mapfile -t SERVER_JARS < <(.venv/bin/python -m icefloe.base.versions server-maven-paths)
mkdir -p .jars/servers
fetch_jars() {
  for path in "${JARS[@]}"; do fetch_jar "$path" .jars; done
  for path in "${SERVER_JARS[@]}"; do fetch_jar "$path" .jars/servers; done
  say "jars: up to date"
}

# --- Iceberg REST catalog server (icefloe dev --profile rest-s3) -------------------------
rest_server() {
  REST=.jars/rest-catalog
  POM=scripts/rest-catalog/pom.xml
  LAUNCHER=scripts/rest-catalog/IcefloeRestServer.java
  pom_sum=$(sha256sum "$POM" | cut -d' ' -f1)
  if [ "$(cat "$REST/.pom-sha256" 2>/dev/null)" != "$pom_sum" ]; then
    say "resolving the REST catalog server's classpath with Maven (first run: about a minute)"
    log=$(mktemp)
    rm -rf "$REST.part"
    if ! mvn -q -B --strict-checksums -f "$POM" dependency:copy-dependencies \
         -DincludeScope=runtime -DoutputDirectory="$ROOT/$REST.part" >"$log" 2>&1; then
      tail -40 "$log"; rm -rf "$REST.part"; say "mvn failed for $POM"; exit 1
    fi
    rm -f "$log"; rm -rf "$REST"; mv "$REST.part" "$REST"
    echo "$pom_sum" > "$REST/.pom-sha256"
  fi
  src_sum=$(cat "$LAUNCHER" "$REST/.pom-sha256" | sha256sum | cut -d' ' -f1)
  if [ "$(cat "$REST/classes/.sha256" 2>/dev/null)" != "$src_sum" ]; then
    say "compiling $(basename "$LAUNCHER")"
    rm -rf "$REST/classes"
    javac -nowarn -d "$REST/classes" -cp "$REST/*" "$LAUNCHER"
    echo "$src_sum" > "$REST/classes/.sha256"
  fi
  say "rest catalog server: ready ($(find "$REST" -maxdepth 1 -name '*.jar' | wc -l) jars)"
}

# --- icefloe's Spark SQL extension (jvm/: the skew rule), on Spark's classpath -------------
# Built when jvm/pom.xml or jvm/src/ changed (a sha256 over them, kept beside the jar), in a
# copy of jvm/ under a temporary folder (jvm/target/ is left to whoever works on it); then
# moved into place in one rename, replacing any other version's jar.
build_extension() {  # build_extension JVM_DIR: .jars/icefloe-spark-extensions-<pom version>.jar
  local src=$1 name sum stamp=.jars/.icefloe-spark-extensions.sha256 tmp log old
  name=$(.venv/bin/python -m icefloe.base.versions extensions-jar "$src/pom.xml")
  sum=$( (cd "$src" && find pom.xml src -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum) |
         sha256sum | cut -d' ' -f1)
  if [ "$(cat "$stamp" 2>/dev/null)" != "$sum $name" ] || [ ! -s ".jars/$name" ]; then
    say "building $name with Maven (first run: about a minute)"
    tmp=$(mktemp -d); log=$tmp/mvn.log
    cp -r "$src/pom.xml" "$src/src" "$tmp/"
    if ! mvn -q -B --strict-checksums -f "$tmp/pom.xml" package -DskipTests >"$log" 2>&1; then
      tail -40 "$log"; rm -rf "$tmp"; say "mvn failed for $src/pom.xml"; exit 1
    fi
    cp "$tmp/target/$name" ".jars/$name.part"
    mv -f ".jars/$name.part" ".jars/$name"
    rm -rf "$tmp"
    echo "$sum $name" > "$stamp"
  fi
  for old in .jars/icefloe-spark-extensions-*.jar; do
    if [ -e "$old" ] && [ "$old" != ".jars/$name" ]; then say "removing $old"; rm -f "$old"; fi
  done
  say "spark sql extension: up to date (.jars/$name)"
}

# --- the steps above: the downloads beside the two Maven builds (one after the other: two
# Maven processes must not write one local repository at once), each with its own log ------
LOGS=$(mktemp -d)
fetch_jars >"$LOGS/jars" 2>&1 & jars_pid=$!
{ rest_server; build_extension jvm; } >"$LOGS/maven" 2>&1 & maven_pid=$!
failed=""
for step in jars:$jars_pid maven:$maven_pid; do
  if ! wait "${step#*:}"; then failed="$failed ${step%%:*}"; fi
  cat "$LOGS/${step%%:*}"
done
rm -rf "$LOGS"
[ -z "$failed" ] || { say "failed:$failed"; exit 1; }

# --- Redis ---------------------------------------------------------------------------------
REDIS_URL=$(.venv/bin/python -c 'from icefloe.base.config import load_config; print(load_config().redis.url)')
if .venv/bin/python -m icefloe.app.ops.redis_local ping "$REDIS_URL"; then
  say "redis: answering"
else
  .venv/bin/python -m icefloe.app.ops.redis_local start "$REDIS_URL" "$ROOT/.redis"
fi
say "ready"
