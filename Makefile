# Set-up and entry points. Every target that runs something first makes sure .venv and the services are ready.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: setup services run test lint bench screenshots

$(BIN)/tqadmin: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[all,dev]'
	touch $@

setup: $(BIN)/tqadmin

services:
	@scripts/ready-services

# With nothing configured the demo runs embedded (broker and store in one SQLite file): no service to start.
run: setup
	@$(BIN)/python -c 'import sys; from tqadmin.config import Overrides, resolve; s = resolve(Overrides()); \
	  sys.exit(0 if s.broker_url.startswith("sqlite:") and s.store_url.startswith("sqlite:") else 1)' \
	  || scripts/ready-services
	$(BIN)/tqadmin demo

test: setup services
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/pytest -n 2 --dist loadgroup

bench: setup services
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[all,dev,bench]'
	$(BIN)/python bench/worker_sqlite.py
	$(BIN)/python bench/move.py
	$(BIN)/python bench/poll.py
	$(BIN)/python bench/worker_redis.py
