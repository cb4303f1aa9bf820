# Two commands on a fresh machine with only Python 3.11+:
#   make demo   - create .venv, install pinned dependencies, run the order example locally
#   make test   - create .venv, install pinned dependencies (and Debian's chromium for the
#                 console's browser tests, via apt when missing), run ruff, mypy and the whole
#                 test suite, then the local-stack tests unpatched and on the newest moto in range
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.orbit-installed
PYTEST_ARGS ?= -n 2

.PHONY: demo test test-local-unpatched test-newest-moto install lock bench chaos clean-venv conformance conformance-node

install: $(STAMP)

# Every dependency is pinned by requirements.lock (pip constraints), so a fresh
# clone installs exactly what the suite was run with.
$(STAMP): pyproject.toml requirements.lock
	$(PYTHON) -c 'import sys; sys.exit("Orbit needs Python 3.11+" if sys.version_info < (3, 11) else 0)'
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -c requirements.lock -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	@$(VENV)/bin/orbit run examples/order_fulfilment.yaml --input @examples/inputs/order.json \
		--workers examples/workers/orders.py --signal 'approval={"approved": true, "by": "demo"}'

# The template is also checked by `sam validate --lint` in a venv of its own
# (aws-sam-cli pins boto3 and cfn-lint); tests/template lints the transformed
# template with cfn-lint inside the suite.
# ruff and mypy (configured in pyproject.toml: strict on orbit/core) run first: a lint or type
# error fails `make test`, and so CI (.ci/run), before the suite starts.
test: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	bash scripts/ensure_chromium.sh
	bash scripts/check_template.sh
	$(PY) -m pytest $(PYTEST_ARGS) tests
	$(MAKE) --no-print-directory test-local-unpatched
	$(MAKE) --no-print-directory test-newest-moto

# The local stack without its moto speed patches (orbit/local/moto_speed*.py): what any other moto
# gets. A representative subset (workflows, retries, sleeps, redrive, inline steps, the SQS and
# DynamoDB answers the patches change), about 30 s; the 1,000-wide fan-out alone takes 75 s
# unpatched, so it is left out.
LOCAL_UNPATCHED_TESTS := tests/e2e/test_local_stack.py tests/e2e/test_local_inline.py \
	tests/e2e/test_local_cloud.py tests/e2e/test_local_unsigned.py tests/e2e/test_local_moto_speed.py \
	tests/e2e/test_local_moto_speed_calls.py tests/e2e/test_local_moto_speed_dynamodb.py \
	tests/e2e/test_local_moto_speed_requests.py
test-local-unpatched: $(STAMP)
	ORBIT_LOCAL_SPEED_PATCHES=0 $(PY) -m pytest $(PYTEST_ARGS) $(LOCAL_UNPATCHED_TESTS)

# The local-stack tests once more against the newest moto the range allows, in a venv of its own
# (the speed patches switch themselves off unless that moto is the one they were read from,
# moto_speed.MOTO_VERSION). The venv (the lock minus moto) is built once and kept; each run asks the
# index for the newest moto in MOTO_RANGE, installs it, prints both versions and fails if they
# differ. Part of `make test`: the venv costs ~2 min once, a run ~40 s
# (docs/decisions/found2-queue-bodies-ci-engine.md). NEWEST_MOTO_TESTS: every local test, if wanted.
NEWEST_MOTO_VENV ?= .venv-newest-moto
NEWEST_PY := $(NEWEST_MOTO_VENV)/bin/python
NEWEST_STAMP := $(NEWEST_MOTO_VENV)/.orbit-installed
MOTO_RANGE ?= moto[server]>=5.0.13,<6
NEWEST_MOTO_TESTS ?= $(LOCAL_UNPATCHED_TESTS)
$(NEWEST_STAMP): pyproject.toml requirements.lock
	test -x $(NEWEST_PY) || $(PYTHON) -m venv $(NEWEST_MOTO_VENV)
	grep -iv '^moto==' requirements.lock > $(NEWEST_MOTO_VENV)/constraints.txt
	$(NEWEST_PY) -m pip install --quiet --disable-pip-version-check \
		-c $(NEWEST_MOTO_VENV)/constraints.txt -e '.[dev]'
	touch $(NEWEST_STAMP)
test-newest-moto: $(NEWEST_STAMP)
	$(NEWEST_PY) -m pip install --quiet --disable-pip-version-check --ignore-installed --no-deps \
		--dry-run --report $(NEWEST_MOTO_VENV)/newest.json '$(MOTO_RANGE)'
	$(NEWEST_PY) -m pip install --quiet --disable-pip-version-check --upgrade '$(MOTO_RANGE)'
	$(NEWEST_PY) scripts/newest_moto.py $(NEWEST_MOTO_VENV)/newest.json
	$(NEWEST_PY) -m pytest $(PYTEST_ARGS) $(NEWEST_MOTO_TESTS)

# AWS's durable execution conformance suite against Orbit's durable-function endpoint
# (docs/durable-functions.md). The suite declares Python >= 3.14 but runs on 3.11: it is installed
# from its wheel with --ignore-requires-python into a venv of its own, so .venv stays honest.
CONFORMANCE_VENV ?= .venv-conformance
CONFORMANCE_PKGS := aws-durable-execution-conformance-tests==1.0.0 aws-durable-execution-sdk-python-testing==1.4.0
$(CONFORMANCE_VENV)/.installed:
	test -x $(CONFORMANCE_VENV)/bin/python || $(PYTHON) -m venv $(CONFORMANCE_VENV)
	$(CONFORMANCE_VENV)/bin/pip install --quiet --disable-pip-version-check boto3==1.44.8 botocore==1.44.8 pyyaml packaging
	rm -rf $(CONFORMANCE_VENV)/wheels
	$(CONFORMANCE_VENV)/bin/pip download --quiet --disable-pip-version-check --python-version 3.14 --only-binary=:all: \
		--no-deps -d $(CONFORMANCE_VENV)/wheels $(CONFORMANCE_PKGS) aws-durable-execution-sdk-python==3.0.0
	$(CONFORMANCE_VENV)/bin/pip install --quiet --disable-pip-version-check --ignore-requires-python --no-deps \
		$(CONFORMANCE_VENV)/wheels/*.whl
	touch $@

conformance: $(STAMP) $(CONFORMANCE_VENV)/.installed
	CVENV=$(abspath $(CONFORMANCE_VENV)) VENV=$(abspath $(VENV)) bash conformance/run.sh $(CONFORMANCE_ARGS)

# The same suite with the TypeScript SDK (@aws/durable-execution-sdk-js 2.4.0 from npm; Debian's
# nodejs where `node` is missing): the handlers of conformance/node run in `node` child processes.
conformance/node/node_modules/.installed: conformance/node/package.json
	command -v node >/dev/null || (apt-get update -qq && apt-get install -y -qq nodejs npm)
	cd conformance/node && npm install --no-audit --no-fund --silent
	touch $@

conformance-node: $(STAMP) $(CONFORMANCE_VENV)/.installed conformance/node/node_modules/.installed
	LANGUAGE=node CVENV=$(abspath $(CONFORMANCE_VENV)) VENV=$(abspath $(VENV)) bash conformance/run.sh $(CONFORMANCE_ARGS)

bench: $(STAMP)
	$(PY) benchmarks/bench_local.py

# Seeded delivery chaos through the real handlers on moto (docs/testing-delivery.md):
#   make chaos SEEDS=1-10000   - any range; a failing seed prints the command that reproduces it
SEEDS ?= 1-250
chaos: $(STAMP)
	$(PY) -m tests.chaos.run --seeds $(SEEDS)

lock: $(STAMP)
	( echo '# Exact versions for `make` (pip -c constraints). Regenerate with `make lock`.'; \
	  $(PY) -m pip freeze --exclude-editable | grep -v '^orbit-engine' ) > requirements.lock

clean-venv:
	rm -rf $(VENV)
