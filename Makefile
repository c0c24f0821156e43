# Entry points: `make demo` (the quickstart walkthrough, offline), `make test`, `make docs`,
# `make walkthroughs` (the notebooks in notebooks/ rerun, outputs included).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: setup demo lint test test-deps npm-deps hub-venv bench bench-peers labextension walkthroughs docs docs-screenshot

$(BIN)/nbagent: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q -U pip
	$(BIN)/pip install -q -e '.[test]'
	@touch $@

setup: $(BIN)/nbagent

demo: setup
	$(BIN)/nbagent demo

# What the tests need besides .venv, so that none is skipped: the npm packages of the Node test
# servers, the extension, the browser tests and the conformance suite, the built extension, and
# Chromium (installed with apt where this runs as root; otherwise one line says what to install),
# and the docs tools (tests/docs checks the generated references as Sphinx builds them).
NPM_DIRS := tests/node tests/hub labextension ui-tests conformance docs
CHROMIUM ?= /usr/bin/chromium

# The built extension is rebuilt whenever its sources are newer (a stale build tests old code).
EXT_BUILT := nbagent/labextension/package.json
EXT_SOURCES := labextension/package.json $(wildcard labextension/src/* labextension/schema/* labextension/style/*)

npm-deps:
	@command -v npm >/dev/null 2>&1 || { echo "make test: the tests need Node 20 and npm on PATH (https://nodejs.org/)"; exit 1; }
	@for dir in $(NPM_DIRS); do \
	  if [ -f $$dir/package-lock.json ] && [ ! -d $$dir/node_modules ]; then \
	    echo "npm ci --prefix $$dir"; npm ci --prefix $$dir --no-progress --loglevel=error --no-fund --no-audit || exit 1; \
	  fi; \
	done

$(EXT_BUILT): $(EXT_SOURCES) | setup npm-deps
	cd labextension && PATH="$(CURDIR)/$(BIN):$$PATH" npm run build
	@touch $@

test-deps: setup npm-deps $(EXT_BUILT) $(BIN)/sphinx-build hub-venv
	@if [ ! -x "$(CHROMIUM)" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "apt-get install chromium"; \
	    DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null || exit 1; \
	  fi; \
	  [ -x "$(CHROMIUM)" ] || { echo "make test: the browser tests need Chromium at $(CHROMIUM): install it (sudo apt-get install chromium) or pass CHROMIUM=/path/to/chromium"; exit 1; }; \
	fi

# The JupyterHub deployment test's venv (tests/hub/deploy.py): made from the system's Python in a
# folder every user can read, with this clone's nbagent. Only as root, which that test needs (it
# adds Linux users and runs the hub); elsewhere the test says so and is skipped.
hub-venv: setup npm-deps $(EXT_BUILT)
	@if [ "$$(id -u)" = 0 ]; then $(BIN)/python -m tests.hub.deploy; fi

# Static checks of the package, before the suite: ruff, then mypy (configured in pyproject.toml;
# its cache in .mypy_cache makes a rerun take seconds).
lint: setup
	$(BIN)/ruff check nbagent tests bench
	$(BIN)/mypy nbagent

test: lint test-deps
	CHROMIUM=$(CHROMIUM) $(BIN)/python -m pytest

# Every bench prints its numbers and OK or MISSED against each target, and exits non-zero when it
# missed one or could not run; the leading "-" lets make report that and run the next bench.
bench: setup
	-$(BIN)/python bench/core.py --strict
	-$(BIN)/python bench/render.py
	-$(BIN)/python bench/mcp_stdio.py
	-$(BIN)/python bench/mcp.py
	-$(BIN)/python bench/big_server_start.py
	-$(BIN)/python bench/conformance.py
	-$(BIN)/python bench/sandbox.py
	-$(BIN)/python bench/shell.py

# Other agent runtimes' MCP clients, for bench/mcp.py only: their own venv, since they may pin
# another mcp release than nbagent's.
PEERS := $(VENV)/peers
bench-peers: $(PEERS)/bin/python
$(PEERS)/bin/python:
	$(PY) -m venv $(PEERS)
	$(PEERS)/bin/pip install -q openai-agents 'pydantic-ai-slim[mcp]' fastmcp

labextension: $(EXT_BUILT)

# The notebooks in notebooks/ as committed, outputs included: written from their code, then each
# notebooks/*.ipynb run the ordinary way (nbclient, as `jupyter nbconvert --execute`, no NBAGENT_*
# variable), one at a time. tests/walkthroughs fails when a committed notebook is stale.
walkthroughs: setup
	$(BIN)/python -m nbagent.examples.walkthroughs commit

# The docs site: the walkthroughs (and the quickstart) executed afresh with their widgets rendered,
# then Sphinx with warnings as errors. The widget manager comes from docs/node_modules (npm ci),
# so the built site needs no network to draw the panels.
DOCS_OUT := build/docs/html
WALKTHROUGHS_OUT := build/walkthroughs
$(BIN)/sphinx-build: pyproject.toml | setup
	$(BIN)/pip install -q -e '.[docs]'
	@touch $@

docs: $(BIN)/sphinx-build npm-deps
	rm -rf $(WALKTHROUGHS_OUT)
	$(BIN)/python -m nbagent.examples.walkthroughs execute --out $(WALKTHROUGHS_OUT)
	NBAGENT_WALKTHROUGHS=$(CURDIR)/$(WALKTHROUGHS_OUT) $(BIN)/sphinx-build -W --keep-going -q -b html docs $(DOCS_OUT)

# Screenshots of built pages' approval panels (into test-artifacts/docs); fails when a panel is not
# drawn from its saved widget state. 04-approval is shot once that walkthrough exists.
DOCS_SHOT_PAGES ?= 00-quickstart $(if $(wildcard nbagent/examples/walkthroughs/w04_*.py),04-approval)
docs-screenshot:
	CHROMIUM=$(CHROMIUM) node ui-tests/docs_screenshot.mjs $(DOCS_SHOT_PAGES) --site $(DOCS_OUT) --out test-artifacts/docs
