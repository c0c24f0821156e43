# Two entry points: `make demo` (the quickstart walkthrough, offline) and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: setup demo test bench labextension

$(BIN)/nbagent: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q -U pip
	$(BIN)/pip install -q -e '.[test]'
	@touch $@

setup: $(BIN)/nbagent

demo: setup
	$(BIN)/nbagent demo

test: setup
	$(BIN)/python -m pytest

bench: setup
	$(BIN)/python bench/core.py
	$(BIN)/python bench/render.py
	$(BIN)/python bench/mcp_stdio.py
	$(BIN)/python bench/conformance.py

labextension: setup
	cd labextension && PATH="$(CURDIR)/$(BIN):$$PATH" npm run build
