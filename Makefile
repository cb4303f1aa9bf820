# Two commands on a fresh machine with only Python 3.11+:
#   make demo   - create .venv, install pinned dependencies, run the order example locally
#   make test   - create .venv, install pinned dependencies (and Debian's chromium for the
#                 console's browser tests, via apt when missing), run ruff, mypy and the whole
#                 test suite
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.orbit-installed
PYTEST_ARGS ?= -n 2

.PHONY: demo test install lock bench clean-venv

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

bench: $(STAMP)
	$(PY) benchmarks/bench_local.py

lock: $(STAMP)
	( echo '# Exact versions for `make` (pip -c constraints). Regenerate with `make lock`.'; \
	  $(PY) -m pip freeze --exclude-editable | grep -v '^orbit-engine' ) > requirements.lock

clean-venv:
	rm -rf $(VENV)
