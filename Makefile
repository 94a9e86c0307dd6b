# Two commands for a fresh clone: `make run` and `make test`. Needs only python3, make and git.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test install lint types contracts pytest bench accuracy load faults clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
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
	$(BIN)/ruff check app tests benchmarks migrations tools

types: $(STAMP)
	$(BIN)/mypy app

contracts: $(STAMP)
	$(BIN)/lint-imports

pytest: $(STAMP)
	$(BIN)/pytest -q

bench: $(STAMP)
	$(BIN)/pytest benchmarks -q --benchmark-only

clean:
	rm -rf $(VENV) data

## Compare the engine with the committed calibration grid; rewrite docs/accuracy.json and the plot
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
