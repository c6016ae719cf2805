#!/usr/bin/env bash
# The whole check: ruff (lint and format), mypy, the import contracts, the JVM tests, then pytest.
#   scripts/test.sh           everything: jvm/ (mvn test), unit, spark, redis, integration, DAG tests (make test)
#   scripts/test.sh --fast    lint, types, contracts, the docs site and the unit tests only (make test-fast)
#   scripts/test.sh --lint-only
# Called by `make test` and by .ci/run after the bootstrap.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH"
mode=${1:-}
echo "== ruff"; ruff check .; ruff format --check --quiet .
echo "== mypy"; mypy -p icefloe
echo "== import contracts"; lint-imports --no-cache >/dev/null; echo "contracts kept"
# the docs site: a broken link, a missing page or a reference page that fails to generate
echo "== docs site"; site=$(mktemp -d)
if ! NO_MKDOCS_2_WARNING=1 mkdocs build --strict --quiet --site-dir "$site"; then
  rm -rf "$site"; echo "mkdocs build --strict failed"; exit 1
fi
rm -rf "$site"; echo "site built"
[ "$mode" = "--lint-only" ] && exit 0
# promtool checks the alert rules (tests/integration/test_alert_rules.py): Debian's prometheus
if [ "$mode" != "--fast" ] && ! command -v promtool >/dev/null 2>&1; then
  echo "== installing promtool (Debian package prometheus)"
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
      --no-install-recommends prometheus >/dev/null; } ||
    { echo "promtool is missing and apt-get could not install prometheus: install it by hand"; exit 1; }
fi
# headless Chromium drives the dashboard (tests/integration/test_ui_browser.py): Debian's
if [ "$mode" != "--fast" ] && { [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; }; then
  echo "== installing chromium and chromium-driver (Debian packages)"
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
      --no-install-recommends chromium chromium-driver >/dev/null; } ||
    { echo "chromium is missing and apt-get could not install chromium chromium-driver: install them by hand"; exit 1; }
fi
# the Spark extension's JVM unit tests (jvm/src/test), in a copy of jvm/ as scripts/bootstrap.sh
# builds it (jvm/target/ is left to whoever works there); Maven came with the bootstrap
if [ "$mode" != "--fast" ]; then
  echo "== jvm tests"
  command -v mvn >/dev/null 2>&1 || { echo "mvn is missing: run scripts/bootstrap.sh"; exit 1; }
  jvm_tmp=$(mktemp -d)
  cp -r jvm/pom.xml jvm/src "$jvm_tmp/"
  if ! mvn -q -B --strict-checksums -f "$jvm_tmp/pom.xml" test; then
    rm -rf "$jvm_tmp"; echo "jvm tests failed"; exit 1
  fi
  rm -rf "$jvm_tmp"
fi
echo "== pytest"
set +e
if [ "$mode" = "--fast" ]; then python -m pytest -m unit -q; else python -m pytest "$@"; fi
rc=$?
set -e
if [ "$rc" = 5 ]; then echo "pytest collected no tests: that is a failure"; exit 1; fi
exit "$rc"
