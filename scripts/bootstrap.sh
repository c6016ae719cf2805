#!/usr/bin/env bash
# Idempotent set-up for a fresh Debian machine (root, Python 3.11, Java 17):
#   .venv/ with the pinned packages, the Iceberg/JDBC jars in .jars/, redis-server
#   installed and a local Redis answering at the configured URL.
# A second run checks each step in well under a minute and changes nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=${PYTHON:-python3}
say() { printf '[bootstrap] %s\n' "$*"; }

# --- Python environment ----------------------------------------------------------------
stamp_of() { cat setup.cfg pyproject.toml | sha256sum | cut -d' ' -f1; }
if [ ! -x .venv/bin/python ]; then
  say "creating .venv"
  "$PY" -m venv .venv
fi
if [ "$(cat .venv/.icefloe-stamp 2>/dev/null)" != "$(stamp_of)" ]; then
  say "installing pinned packages into .venv (first run: 2-3 minutes)"
  log=.venv/pip-install.log
  if ! { .venv/bin/python -m pip install -q --upgrade pip setuptools wheel &&
         .venv/bin/python -m pip install -q -e '.[dev]'; } >"$log" 2>&1; then
    tail -40 "$log"; say "pip install failed (full log: $log)"; exit 1
  fi
  stamp_of > .venv/.icefloe-stamp
else
  say "python packages: up to date"
fi

# --- Jars from Maven Central -------------------------------------------------------------
MAVEN=${ICEFLOE_MAVEN_REPO:-https://repo1.maven.org/maven2}
# the one list of artifacts and versions: service/versions.py (importable after the pip install)
mapfile -t JARS < <(.venv/bin/python -m service.versions maven-paths)
[ "${#JARS[@]}" -gt 0 ] || { say "no jars listed by service.versions"; exit 1; }
mkdir -p .jars
for path in "${JARS[@]}"; do
  jar=.jars/$(basename "$path")
  [ -s "$jar" ] && continue
  say "fetching $(basename "$path")"
  sha1=$(curl -fsSL --retry 3 "$MAVEN/$path.sha1" | cut -c1-40)
  curl -fsSL --retry 3 -o "$jar.part" "$MAVEN/$path"
  if [ "$(sha1sum "$jar.part" | cut -c1-40)" != "$sha1" ]; then
    rm -f "$jar.part"; say "checksum mismatch for $path"; exit 1
  fi
  mv "$jar.part" "$jar"
done

# --- Redis ---------------------------------------------------------------------------------
if ! command -v redis-server >/dev/null 2>&1; then
  say "installing redis-server (Debian)"
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq redis-server >/dev/null
fi
REDIS_URL=$(.venv/bin/python -c 'from service.config import load_config; print(load_config().redis.url)')
if .venv/bin/python -m service.ops.redis_local ping "$REDIS_URL"; then
  say "redis: answering"
else
  .venv/bin/python -m service.ops.redis_local start "$REDIS_URL" "$ROOT/.redis"
fi
say "ready"
