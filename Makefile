# costtrack: every set-up step lives here, so a fresh clone needs only `make dev` or `make test`.
#
#   make dev     run the local stack (DynamoDB Local + the API on http://127.0.0.1:3000), with a
#                month of demo history (make dev ARGS=--empty: without)
#   make test    install what is missing, then run every test: lint, service, both SDKs, template,
#                the documentation site
#   make docs    build the documentation site (docs/ and the generated reference) into site/
#   make lint    ruff, mypy, the SAM template checks and sam build
#   make build   sam build only
#   make bench   benchmarks (figures to bench/results.json)
#   make chaos   full-size chaos and fuzzing
#   make compat  both SDKs against the newest client releases, 20 rounds of the app-call tests
#   make catalogue  regenerate the bundled prices from the pinned genai-prices
#   make openapi    regenerate the served OpenAPI document (functions/costtrack_service/openapi.json)
#   make dist    the SDKs' release artefacts in dist/: the Python wheel and sdist, the Node tarball
#   make requirements  export each function's and the Powertools layer's packages from uv.lock
#
# Tools are installed into the project: .venv (service, uv-managed), .costtrack/tools (uv,
# SAM CLI), node_modules (DynamoDB Local), sdk/node/node_modules. Nothing global is touched.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
MAKEFLAGS += --no-print-directory

ROOT := $(abspath .)
TOOLS := $(ROOT)/.costtrack/tools
UV_VERSION := 0.13.9
UV := $(or $(shell command -v uv 2>/dev/null),$(TOOLS)/bin/uv)
SAM := $(TOOLS)/sam/bin/sam

# Interpreters: the service runs on Lambda's python3.13 (3.12 will do locally); the SDK is
# tested on the oldest and newest supported interpreters found on this machine. When none is
# found, uv is given the bare version and may download one.
SERVICE_PYTHON := $(or $(shell scripts/find-python 3.13 3.12),3.13)
SDK_PYTHON_OLDEST := $(or $(shell scripts/find-python 3.9 3.10 3.11 3.12 3.13),3.9)
SDK_PYTHON_NEWEST := $(or $(shell scripts/find-python 3.13 3.12 3.11 3.10 3.9),3.13)

export SAM_CLI_TELEMETRY := 0
export UV_PYTHON_DOWNLOADS := automatic
# Write .pyc files at install time: every test spawns Python processes (local stack containers,
# subprocess tests), and environments that set PYTHONDONTWRITEBYTECODE would compile boto3 each time.
export UV_COMPILE_BYTECODE := 1
PYTEST := $(ROOT)/scripts/pytest-run

.PHONY: help dev test docs node-sdk-built compat test-sdk-compat dist dist-python dist-node catalogue openapi requirements botocore-endpoints lint build bench chaos chromium test-service test-sdk-python test-sdk-python-oldest test-sdk-python-newest test-sdk-node lint-template deps clean

help:
	@echo "make dev    - run the local stack on http://127.0.0.1:3000 (Ctrl-C stops it)"
	@echo "make test   - install what is missing and run every test"
	@echo "make lint   - ruff, mypy, SAM template checks and sam build"
	@echo "make docs   - build the documentation site into site/ (strict: a warning fails it)"
	@echo "make build  - sam build (functions and both SDK layers) into .aws-sam/build"
	@echo "make dist   - the SDKs' artefacts in dist/: Python wheel and sdist, Node tarball"
	@echo "make bench  - benchmarks: prints a table, writes bench/results.json"
	@echo "make chaos  - full-size chaos and fuzzing runs (a fast slice is part of make test)"
	@echo "make compat - both SDKs against the newest client releases (20 rounds of the app-call tests)"
	@echo "make catalogue - regenerate the bundled prices from the pinned genai-prices"
	@echo "make openapi - regenerate the OpenAPI document the ingestion function serves"
	@echo "make requirements - export the deployed functions' and Powertools layer's packages from uv.lock"
	@echo "make botocore-endpoints - regenerate DynamoDB's part of botocore's endpoint data"

# -- installs ----------------------------------------------------------------------------

$(TOOLS)/bin/uv:
	python3 -m venv "$(TOOLS)"
	"$(TOOLS)/bin/pip" install --quiet --disable-pip-version-check "uv==$(UV_VERSION)"

.venv/.synced: pyproject.toml uv.lock sdk/python/pyproject.toml | $(UV)
	"$(UV)" sync --frozen --python "$(SERVICE_PYTHON)"
	touch "$@"

node_modules/.package-lock.json: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error

$(SAM): | $(UV)
	"$(UV)" venv --quiet --allow-existing --python "$(SERVICE_PYTHON)" "$(TOOLS)/sam"
	VIRTUAL_ENV="$(TOOLS)/sam" "$(UV)" pip install --quiet "aws-sam-cli==1.170.0"

deps: .venv/.synced node_modules/.package-lock.json

# The dashboard's browser tests drive the machine's Chromium (Debian's package): installed when
# missing, with sudo when not root. No test tool downloads a browser of its own.
chromium:
	@if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then \
	  echo "installing Debian's chromium for the dashboard's browser tests"; \
	  sudo=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium \
	  || { $$sudo apt-get update -q && $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium; }; \
	fi

# -- the documentation site ---------------------------------------------------------------

# docs/ with the reference generated from the code (scripts/docs_hooks.py: the OpenAPI document,
# the CLI's parser, the SDKs' docstrings and TSDoc, the catalogue), built into site/ (git-ignored).
# Strict: a warning, a broken link or a missing anchor fails the build. The Node SDK's TSDoc is
# read with the typescript of its own dev install (no build, no scripts run).
docs: .venv/.synced sdk/node/node_modules/.package-lock.json
	NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --site-dir "$(ROOT)/site"
	@echo "make docs: site/index.html"

sdk/node/node_modules/.package-lock.json: sdk/node/package.json sdk/node/package-lock.json
	cd sdk/node && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error

# -- the SDKs' artefacts -----------------------------------------------------------------

# What gets published and what the SAM layers are built from. Each SDK's version lives in one
# place: sdk/python/src/costtrack/_version.py (hatchling reads it) and sdk/node/package.json (the
# build writes it into the code). Both land in dist/ (git-ignored) under their own names:
# costtrack-<version>-py3-none-any.whl, costtrack-<version>.tar.gz and costtrack-<version>.tgz.
PYTHON_SDK_VERSION = $(shell sed -n 's/^__version__ = "\(.*\)"$$/\1/p' sdk/python/src/costtrack/_version.py)
NODE_SDK_VERSION = $(shell node -p 'require("./sdk/node/package.json").version')

dist: dist-python dist-node
	@ls -1 dist/*-$(PYTHON_SDK_VERSION)-py3-none-any.whl dist/*-$(PYTHON_SDK_VERSION).tar.gz dist/*-$(NODE_SDK_VERSION).tgz

# The sdist, then the wheel built from it (uv build's default), so the sdist is known to build.
dist-python: | $(filter $(TOOLS)/bin/uv,$(UV))
	"$(UV)" build --quiet --python "$(SDK_PYTHON_NEWEST)" --out-dir "$(ROOT)/dist" sdk/python

# npm pack builds (the package's prepack script) and packs package.json's "files"; the install
# before it skips scripts, so that prepare does not build the same code once more.
dist-node:
	mkdir -p dist
	cd sdk/node && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error && \
		npm pack --silent --pack-destination "$(ROOT)/dist" >/dev/null

# -- running -----------------------------------------------------------------------------

# make dev ARGS="--empty --port 3001": options of costtrack dev (see .venv/bin/costtrack dev --help).
dev: deps
	.venv/bin/costtrack dev $(ARGS)

# -- checks ------------------------------------------------------------------------------

test: deps
	@$(MAKE) lint
	@$(MAKE) docs
	@$(MAKE) test-service
	@# The SDK suites wait on sockets and child processes more than they compute: side by side,
	@# each one's output kept together (--output-sync), they take about the time of the longest.
	@$(MAKE) -j 4 --output-sync=target test-sdk-python-oldest test-sdk-python-newest test-sdk-node test-sdk-compat
	@echo "make test: all suites passed"

lint: .venv/.synced lint-template
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/mypy

# Offline: no AWS account or credentials needed (PyPI and npm are, for the layers).
lint-template: .venv/.synced $(SAM)
	.venv/bin/cfn-lint template.yaml
	"$(SAM)" validate --lint --template template.yaml
	@$(MAKE) build

# sam build: the functions, the Python SDK layer and the Node SDK layer into .aws-sam/build.
# SAM looks for python3.13 on PATH; the layer recipes use this project's uv and npm.
build: $(SAM)
	PATH="$(dir $(SERVICE_PYTHON)):$$PATH" UV="$(UV)" "$(SAM)" build --template template.yaml

# The Node SDK built once before the service's tests, which run it (e2e, docs): a test worker that
# built it itself would run npm ci, emptying node_modules under another worker's feet.
node-sdk-built: sdk/node/node_modules/.package-lock.json
	cd sdk/node && npm run build --silent

# The slowest tests are printed so that the suite's time (the aim is 15 minutes for `make test`) is
# spent knowingly.
test-service: deps chromium node-sdk-built
	"$(PYTEST)" .venv/bin/pytest tests -n 2 --dist loadfile -q -p no:cacheprovider --durations=30

# The oldest and the newest Python the SDK supports, side by side (each target fails on its own:
# a loop over both would report only the last one's status).
test-sdk-python: test-sdk-python-oldest test-sdk-python-newest

test-sdk-python-oldest test-sdk-python-newest: | $(UV)
	@python="$(if $(filter %-oldest,$@),$(SDK_PYTHON_OLDEST),$(SDK_PYTHON_NEWEST))"; \
	version=$$("$$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || echo "$$python"); \
	echo "== Python SDK tests on $$version"; \
	COSTTRACK_APP_ROUNDS=1 UV_PROJECT_ENVIRONMENT="$(ROOT)/.costtrack/venvs/sdk-python-$$version" \
	  "$(PYTEST)" "$(UV)" run --frozen --project sdk/python --python "$$python" --group test \
	  python -m pytest sdk/python/tests -q -p no:cacheprovider

test-sdk-node:
	cd sdk/node && npm ci --no-audit --no-fund --loglevel=error && npm test  # npm ci builds (prepare)

# Both SDKs against the newest releases of the official clients (resolved now, not locked), the
# Python SDK as its built wheel in a new environment (scripts/test-compat says what and why).
test-sdk-compat: | $(UV)
	UV="$(UV)" PYTHON="$(SDK_PYTHON_NEWEST)" scripts/test-compat

compat: | $(UV)
	COSTTRACK_APP_ROUNDS=20 UV="$(UV)" PYTHON="$(SDK_PYTHON_NEWEST)" scripts/test-compat

# The bundled catalogue, spec/pricing-names.json and the pricing page's tables, from the pinned
# genai-prices (bump the pin in pyproject.toml, uv lock, then this; a test holds them equal).
catalogue: .venv/.synced
	.venv/bin/python scripts/generate_catalogue.py

# The OpenAPI document, built from edge/api_document.py (the routes' declared types) at build time and committed, so the ingestion
# function serves a file and never imports its builder (a test holds the file current).
openapi: .venv/.synced
	.venv/bin/python scripts/generate_openapi.py

# What sam build installs beyond our code: each function's and the Powertools layer's packages,
# exported from uv.lock with hashes (run after `uv lock`; a test holds them equal to the lock).
requirements: .venv/.synced | $(UV)
	UV="$(UV)" .venv/bin/python scripts/generate_requirements.py

# DynamoDB's entries of the pinned botocore's endpoints.json, which the store's client reads
# instead of the whole file (a test holds it current; run after a botocore bump).
botocore-endpoints: .venv/.synced
	.venv/bin/python scripts/generate_botocore_endpoints.py

# -- proof --------------------------------------------------------------------------------

# Figures, printed and written to bench/results.json; never asserted.
bench: deps
	cd sdk/node && npm ci --no-audit --no-fund --loglevel=error  # builds dist/ (prepare)
	.venv/bin/python bench/run.py

# The full chaos and fuzzing sizes (make test runs a fast slice of the same tests). Exits
# non-zero on any lost or double-counted event.
chaos: deps
	cd sdk/node && npm ci --no-audit --no-fund --loglevel=error  # builds dist/ (prepare)
	COSTTRACK_CHAOS=full "$(PYTEST)" .venv/bin/pytest tests/chaos tests/fuzz \
		tests/integration/test_list_paging.py tests/integration/test_owner_list_paging.py -q -p no:cacheprovider

clean:
	rm -rf .venv .costtrack/tools .costtrack/venvs node_modules sdk/node/node_modules sdk/node/dist .aws-sam dist site
