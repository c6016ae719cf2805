# The two commands of the README. Both set up whatever is missing first (idempotent).
.PHONY: demo test test-fast bootstrap lint

bootstrap:
	@scripts/bootstrap.sh

demo: bootstrap
	@.venv/bin/icefloe demo

test: bootstrap
	@scripts/test.sh

# lint, types, import contracts and the unit tests: under 3 minutes
test-fast: bootstrap
	@scripts/test.sh --fast

lint: bootstrap
	@scripts/test.sh --lint-only
