#!/usr/bin/env bash
# The whole check: ruff, mypy, the import contract, then pytest (unit, spark, redis,
# integration). Called by `make test` and by .ci/run after the bootstrap.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH"
echo "== ruff"; ruff check .
echo "== mypy"; mypy optimizer service
echo "== import contract"; lint-imports
[ "${1:-}" = "--lint-only" ] && exit 0
echo "== pytest"
set +e
python -m pytest "$@"
rc=$?
set -e
if [ "$rc" = 5 ]; then echo "pytest collected no tests: that is a failure"; exit 1; fi
exit "$rc"
