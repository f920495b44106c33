# Every target sets itself up on a fresh machine: a bootstrap venv with a pinned uv, then the
# project venv synced from uv.lock. Nothing outside the checkout is needed but python3 >= 3.11.
SHELL := /bin/bash
.DEFAULT_GOAL := help
PYTHON ?= python3
UV_VERSION := 0.13.8
BOOT := .tools
UV := $(BOOT)/bin/uv
VENV := .venv
BIN := $(VENV)/bin
SYNCED := $(VENV)/.synced
# pytest-xdist workers (each with its own PostgreSQL database and Redis db: tests/_services.py)
# and basedpyright's checker threads; `make test WORKERS=1` runs the suite in one process.
WORKERS ?= 2
PYTEST := $(BIN)/pytest -q -n $(WORKERS)
export UV_PROJECT_ENVIRONMENT := $(VENV)
export UV_PYTHON_DOWNLOADS := never
export UV_PYTHON := $(PYTHON)

.PHONY: help install system-deps format lint typecheck services test test-slow test-fast bench demo clean

help:  ## List the targets
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

$(UV):
	$(PYTHON) -m venv $(BOOT)
	$(BOOT)/bin/pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)

$(SYNCED): uv.lock pyproject.toml | $(UV)
	$(UV) sync --frozen --all-groups --quiet
	@touch $@

install: $(SYNCED) system-deps  ## Create .venv from the lock file (and the system packages)

# The sandboxed runtime runs commands in bubblewrap, the console's browser tests drive
# Debian's Chromium (through Playwright, never `playwright install`); their tests fail
# (never skip) without them.
system-deps:  ## Install the Debian packages the tests need (bubblewrap, chromium) when missing
	@missing=""; \
	command -v bwrap >/dev/null 2>&1 || missing="$$missing bubblewrap"; \
	[ -x /usr/bin/chromium ] || missing="$$missing chromium"; \
	[ -z "$$missing" ] || { \
		SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
		$$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq $$missing; \
	}

format: $(SYNCED)  ## Format and autofix
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

lint: $(SYNCED)  ## Ruff, formatting, import-linter layers
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

typecheck: $(SYNCED)  ## basedpyright, strict, over src, tests and examples
	$(BIN)/basedpyright --threads $(WORKERS)

services: $(SYNCED)  ## Check that PostgreSQL and Redis, which the suite needs, are reachable
	$(BIN)/python -m tests.check_services

test: lint typecheck services system-deps  ## Lint, types, then the suite but its slow end-to-end tests
	$(PYTEST) -m "not slow"

test-slow: services system-deps  ## The slow end-to-end tests (Temporal servers, worker and CLI processes)
	$(PYTEST) -m slow

test-fast: services system-deps  ## The suite without lint and type checks
	$(PYTEST) -x

bench: $(SYNCED)  ## Benchmarks against pydantic-ai, openai-agents and LangGraph
	$(BIN)/python -m benchmarks
	$(BIN)/python -m benchmarks.providers
	$(BIN)/python -m benchmarks.providers_whole
	$(BIN)/python -m benchmarks.providers_compat
	$(BIN)/python -m benchmarks.executor
	$(BIN)/python -m benchmarks.inbound
	$(BIN)/python -m benchmarks.tool_search
	$(BIN)/python -m benchmarks.code_mode
	$(BIN)/python -m benchmarks.governance
	$(BIN)/python -m benchmarks.stores
	$(BIN)/python -m benchmarks.journal
	$(BIN)/python -m benchmarks.graph
	$(BIN)/python -m benchmarks.sessions
	$(BIN)/python -m benchmarks.context
	$(BIN)/python -m benchmarks.runtimes
	$(BIN)/python -m benchmarks.mcp
	$(BIN)/python -m benchmarks.subagent
	$(BIN)/python -m benchmarks.handoff
	$(BIN)/python -m benchmarks.fanout
	$(BIN)/python -m benchmarks.registration
	$(BIN)/python -m benchmarks.dataflow
	$(BIN)/python -m benchmarks.injection
	$(BIN)/python -m benchmarks.tracing
	$(BIN)/python -m benchmarks.server sqlite

# The demo needs python3 and make only: no bubblewrap, no Chromium (its tools are plain Python).
demo: $(SYNCED)  ## The demo app, offline: a run suspends for approval, a new process resumes it
	@rm -f .bastion/demo/next.sh
	$(BIN)/bastion demo --next-command-file .bastion/demo/next.sh
	@if [ -f .bastion/demo/next.sh ]; then \
		echo "+ $$(cat .bastion/demo/next.sh)"; \
		PATH="$(abspath $(BIN)):$$PATH" sh .bastion/demo/next.sh; \
	fi

clean:  ## Remove the virtual envs and caches
	rm -rf $(BOOT) $(VENV) .pytest_cache .ruff_cache
