# The two commands of the README. Both set up whatever is missing first (idempotent).
.PHONY: demo test test-fast bootstrap lint

bootstrap:
	@scripts/bootstrap.sh

# ICEFLOE_PROFILE=postgres|rest-s3 make demo: the same demo on that backend's local services
demo: bootstrap
	@if [ -n "$$ICEFLOE_PROFILE" ] && [ "$$ICEFLOE_PROFILE" != embedded ]; then \
	  .venv/bin/icefloe dev up --profile "$$ICEFLOE_PROFILE"; fi
	@.venv/bin/icefloe demo

test: bootstrap
	@scripts/test.sh

# lint, types, import contracts and the unit tests: under 3 minutes
test-fast: bootstrap
	@scripts/test.sh --fast

lint: bootstrap
	@scripts/test.sh --lint-only
