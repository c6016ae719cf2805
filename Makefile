# The two commands of the README. Both set up whatever is missing first (idempotent).
.PHONY: demo test bootstrap lint

bootstrap:
	@scripts/bootstrap.sh

demo: bootstrap
	@.venv/bin/icefloe demo

test: bootstrap
	@scripts/test.sh

lint: bootstrap
	@scripts/test.sh --lint-only
