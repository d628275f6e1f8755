# ltr: `make train` runs the default experiment, `make test` the test suite. `make help` lists all.
.DEFAULT_GOAL := help
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
ARGS ?=
# test processes (pytest-xdist; each test file runs whole in one of them): 1 runs the suite in this process
TEST_WORKERS ?= 2
# PYTHONDONTWRITEBYTECODE off: pytest keeps its rewritten test modules (and hypothesis') in __pycache__
# instead of compiling them again in every worker (seconds each where an image sets it)
PYTEST := PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest $(if $(filter-out 1,$(TEST_WORKERS)),-n $(TEST_WORKERS) --dist loadfile)

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "ltr needs Python >= 3.11; run make PYTHON=python3.11 ...")'
	@$(MAKE) --no-print-directory postgresql
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	@# the distribution was called ltr before it became ltr-harness: an old .venv drops it first
	$(BIN)/python -m pip uninstall --quiet --yes ltr 2>/dev/null || true
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	$(BIN)/python -m ltr.warmup
	touch $(STAMP)

# The tests of a team's server (tests/postgres.py) run a real PostgreSQL: Debian's server binaries,
# installed here when missing and we are root with apt (CI); elsewhere those tests skip, saying so.
.PHONY: postgresql
postgresql: ## install Debian's PostgreSQL server binaries for the server tests (root with apt; else a note)
	@if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "installing Debian's postgresql (the server tests start one)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql >/dev/null \
	    || echo "warning: apt-get install postgresql failed: the tests of a team's server will fail under CI, skip elsewhere"; \
	else echo "note: no PostgreSQL server binaries (apt-get install postgresql): the tests of a team's server will skip"; fi

.PHONY: install
install: $(STAMP) ## set up .venv from pyproject.toml (only when it changed); compile the numba kernels (quick when cached)
	$(BIN)/python -m ltr.warmup

.PHONY: train
train: $(STAMP) ## run the default experiment (extra Hydra overrides: make train ARGS="model.num_leaves=63")
	$(BIN)/ltr train $(ARGS)

.PHONY: test
test: $(STAMP) ## run the test suite (in TEST_WORKERS=2 processes)
	$(PYTEST) $(ARGS)

.PHONY: test-unit
test-unit: $(STAMP) ## tier 1: unit tests (no training, no store, no subprocess), a fifth of the hypothesis examples
	LTR_TEST_BUDGET=$${LTR_TEST_BUDGET:-dev} $(PYTEST) -m unit $(ARGS)

.PHONY: test-integration
test-integration: $(STAMP) ## tier 2: real training, MLflow stores and Dask in one process
	$(PYTEST) -m integration $(ARGS)

.PHONY: test-e2e
test-e2e: $(STAMP) ## tier 3: the ltr command in subprocesses, sweeps, servers, notebooks
	$(PYTEST) -m e2e $(ARGS)

.PHONY: test-fast
test-fast: $(STAMP) ## tiers 1 and 2 (everything but the slow subprocess tests)
	$(PYTEST) -m "not slow" $(ARGS)

.PHONY: lint
lint: $(STAMP) ## ruff and mypy
	$(BIN)/ruff check ltr tests benchmarks hydra_plugins
	$(BIN)/mypy

.PHONY: ui
ui: $(STAMP) ## open the MLflow UI on http://127.0.0.1:5000 for the local store
	$(BIN)/ltr ui $(ARGS)

.PHONY: bench
bench: $(STAMP) ## run the benchmarks (prints tables; see benchmarks/README.md)
	for b in benchmarks/bench_*.py; do $(BIN)/python $$b || exit 1; done

.PHONY: docs
docs: $(STAMP) ## build the manual (docs/) into site/, strictly: a broken link or reference fails
	$(BIN)/python -m mkdocs build --strict

.PHONY: docs-serve
docs-serve: $(STAMP) ## serve the manual on http://127.0.0.1:8000 while you edit it
	$(BIN)/python -m mkdocs serve -a 127.0.0.1:8000

.PHONY: dist
dist: $(STAMP) ## build the wheel and the sdist into dist/ and check them (twine check --strict)
	rm -rf dist
	$(BIN)/python -m build --no-isolation --sdist --wheel -o dist .
	$(BIN)/python -m twine check --strict dist/*

.PHONY: test-sdist
test-sdist: dist ## unpack the sdist and run its unit tier from there, on its own ltr
	rm -rf build/sdist && mkdir -p build/sdist && tar xzf dist/*.tar.gz -C build/sdist
	cd build/sdist/* && PYTHONPATH=$$PWD LTR_TEST_BUDGET=dev PYTHONDONTWRITEBYTECODE= ../../../$(BIN)/python -m pytest -m unit -p no:cacheprovider -n $(TEST_WORKERS) --dist loadfile -o addopts=--strict-markers

.PHONY: clean
clean: ## remove outputs of runs (keeps the MLflow store)
	rm -rf outputs multirun .pytest_cache .mypy_cache .ruff_cache site dist build

.PHONY: help
help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'
