# Set-up and entry points. Every target that runs something first makes sure .venv and the services are ready.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: setup services run test lint bench screenshots

$(BIN)/tqadmin: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[all,dev]'
	touch $@

setup: $(BIN)/tqadmin

services:
	@scripts/ready-services

run: setup services
	$(BIN)/tqadmin queues

test: setup services
	$(BIN)/ruff check tqadmin plugins tests bench
	$(BIN)/ruff format --check tqadmin plugins tests bench
	$(BIN)/mypy
	$(BIN)/pytest -n 2 --dist loadgroup

bench: setup services
	$(BIN)/pip install --quiet -e '.[all,dev,bench]'
	$(BIN)/python bench/move.py
	$(BIN)/python bench/poll.py
