# Two commands for a fresh clone: `make run` and `make test`. Needs only python3, make and git.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Exact versions, with hashes, of what CI tested (docs/development.md, "Dependencies"): the service's own
# dependencies (the Docker image installs these) and those plus the dev extra (make, CI).
LOCK := requirements.lock
DEV_LOCK := requirements-dev.lock
LOCK_TOOLS := $(VENV)/lock-tools
LOCK_FLAGS := --universal --python-version 3.11 --generate-hashes --quiet \
	--custom-compile-command 'make lock'
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test install lint types contracts pytest bench accuracy load faults probe clean lock image wheel

# The locked versions first (every one hash-checked), then the project itself without
# resolving anything again; `pip check` fails when pyproject.toml asks for what the lock
# lacks (refresh it with `make lock`).
$(STAMP): pyproject.toml $(DEV_LOCK)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet --require-hashes -r $(DEV_LOCK)
	$(BIN)/python -m pip install --quiet --no-deps -e .
	$(BIN)/python -m pip check
	touch $(STAMP)

install: $(STAMP)

## Set up, migrate and seed the embedded SQLite database, serve on http://$(HOST):$(PORT)
run: $(STAMP)
	$(BIN)/sizer db upgrade
	$(BIN)/sizer db seed
	$(BIN)/sizer serve --host $(HOST) --port $(PORT)

## Set up, then lint, type-check, check import contracts and run the whole suite
test: $(STAMP) lint types contracts pytest

lint: $(STAMP)
	$(BIN)/ruff check app tests benchmarks tools

types: $(STAMP)
	$(BIN)/mypy app tests tools benchmarks

contracts: $(STAMP)
	$(BIN)/lint-imports

# One pytest process per core (pytest-xdist; a test file stays in one process, so its module
# fixtures and servers are made once; the files marked `long` or `e2e` first, then by size, so no
# core waits at the end on an image build or a browser walk: tests/conftest.py orders them, and
# --no-loadscope-reorder keeps that order). Beside it, in a process of its own, the `serial` tests,
# which share one node id among several cases and would each run once under xdist (their output
# follows the suite's; they take a core for about 20 s while the workers collect and start).
# PYTEST_WORKERS=0 runs all but the serial tests in one process.
# The first run is also the coverage gate: branch coverage of app/engine/ over the whole suite
# must stay at ENGINE_COVERAGE % or more (pyproject.toml, [tool.coverage]). Only the engine is
# measured: tracing the whole app would slow every test, the engine's share is the part whose
# every branch is arithmetic a customer's answer depends on.
PYTEST_WORKERS ?= auto
ENGINE_COVERAGE ?= 95
pytest: $(STAMP)
	$(BIN)/pytest -q -m serial > $(VENV)/serial-tests.log 2>&1 & serial=$$!; \
	$(BIN)/pytest -q -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder -m "not serial" \
		--cov=app/engine --cov-fail-under=$(ENGINE_COVERAGE); status=$$?; \
	wait $$serial; serial_status=$$?; echo "serial tests (run beside the others):"; \
	cat $(VENV)/serial-tests.log; test $$status -eq 0 && test $$serial_status -eq 0

## Build the wheel into dist/: the package with its templates, static files, catalogs,
## migrations and data (what `pip install` and the image install; tests/test_wheel.py)
wheel: $(STAMP)
	$(BIN)/python -m pip wheel --quiet --no-deps --wheel-dir dist .

## Build the service image localhost/gpu-sizer:latest: docker where a daemon answers, otherwise
## buildah on a Debian base made with debootstrap (root; tools/image.py, docs/operations.md)
image:
	$(PYTHON) -m tools.image

# The figures go to benchmarks/results.json and the table in docs/performance.md
# (tools/bench_results.py; tests/test_bench_results.py holds the two together): commit both.
bench: $(STAMP)
	$(BIN)/pytest benchmarks -q --benchmark-only --benchmark-json=$(VENV)/bench-raw.json
	$(BIN)/python -m tools.bench_results $(VENV)/bench-raw.json

clean:
	rm -rf $(VENV) data

## Re-resolve both lock files: the newest releases pyproject.toml's ranges allow, with hashes
## (needs the package index; then `make clean test` and commit the locks with what they fix)
lock:
	$(PYTHON) -m venv $(LOCK_TOOLS)
	$(LOCK_TOOLS)/bin/python -m pip install --quiet 'uv>=0.9'
	$(LOCK_TOOLS)/bin/uv pip compile pyproject.toml $(LOCK_FLAGS) --upgrade --extra dev \
		-o $(DEV_LOCK)
	$(LOCK_TOOLS)/bin/uv pip compile pyproject.toml $(LOCK_FLAGS) -c $(DEV_LOCK) -o $(LOCK)

## Compare the engine with the committed calibration grid; rewrite app/web/published/accuracy.json and the plot
accuracy: $(STAMP)
	$(BIN)/python -m pip install --quiet 'matplotlib>=3.8'
	$(BIN)/python -m tools.calibrate accuracy

## Load: API estimates, the result fragment and /healthz side by side, 60 s at 64 connections,
## against `sizer serve --workers 2` on a PostgreSQL database it creates (SIZER_LOAD_DB_SERVER)
load: $(STAMP)
	$(BIN)/python -m benchmarks.load $(if $(SIZER_LOAD_DB_SERVER),--database-server $(SIZER_LOAD_DB_SERVER))

## Faults: PostgreSQL stopped and started under load, the app left running (stops PostgreSQL!)
faults: $(STAMP)
	$(BIN)/python -m benchmarks.faults $(if $(SIZER_LOAD_DB_SERVER),--database-server $(SIZER_LOAD_DB_SERVER))

## Probe: issue 13's attack reproductions over HTTP against a fresh `sizer serve` on PostgreSQL;
## one line each (refused / harmless / OPEN), exit 1 if any is open
probe: $(STAMP)
	$(BIN)/python -m benchmarks.probe $(if $(SIZER_LOAD_DB_SERVER),--database-server $(SIZER_LOAD_DB_SERVER))
