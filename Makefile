# Set-up and entry points. Every target that runs something first makes sure .venv and the services are ready.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# Exact versions for the dev and CI environment (the package keeps ranges); scripts/lock regenerates it.
# An environment variable rather than -c, so that pip's isolated build of the project obeys it too.
PIN    := PIP_CONSTRAINT=$(CURDIR)/constraints.txt

.PHONY: setup services tools run test check lint bench screenshots

$(BIN)/tqadmin: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PIN) $(BIN)/pip install --quiet --upgrade pip
	$(PIN) $(BIN)/pip install --quiet --disable-pip-version-check -e '.[all,dev]'
	touch $@

setup: $(BIN)/tqadmin

services:
	@scripts/ready-services

# promtool, for the alert-rule tests (.tools/, from Debian's prometheus package)
tools:
	@scripts/ready-promtool

# With nothing configured the demo runs embedded (broker and store in one SQLite file): no service to start.
run: setup
	@$(BIN)/python -c 'import sys; from tqadmin.config import Overrides, resolve; s = resolve(Overrides()); \
	  sys.exit(0 if s.broker_url.startswith("sqlite:") and s.store_url.startswith("sqlite:") else 1)' \
	  || scripts/ready-services
	$(BIN)/tqadmin demo

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# The whole suite, as CI runs it. Four test processes on two cores: most tests wait (on brokers, windows,
# child processes) rather than compute; at -n 2 the suite took 19 minutes of CI, at -n 4 about 10.
test: setup services tools lint
	$(BIN)/pytest -n 4 --dist loadgroup

# The fast lane, for every change: the same but the tests marked slow (long chaos, outage and scale runs).
check: setup services tools lint
	$(BIN)/pytest -n 4 --dist loadgroup -m "not slow"

# What README's Benchmarks section says `make bench` runs, in its order: keep the two lists the same.
bench: setup services
	$(PIN) $(BIN)/pip install --quiet --disable-pip-version-check -e '.[all,dev,bench]'
	$(BIN)/python bench/summary.py --run
	$(BIN)/python bench/publisher.py
	$(BIN)/python bench/move.py
	$(BIN)/python bench/poll.py
	$(BIN)/python bench/exporter.py
	$(BIN)/python bench/store.py
	$(BIN)/python bench/tui.py
