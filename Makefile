# Everything a fresh machine needs goes through these targets.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Worker processes for `make test` (pytest-xdist); TEST_WORKERS=0 runs the suite in one process.
TEST_WORKERS ?= 2

.PHONY: venv test lint typecheck demo bench test-postgres test-claude-cli clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# The CPU wheel of torch first (a plain `torch` would pull the CUDA build), then the extras:
	# the three agent runtimes too, so the adapter tests run (under CI they fail when missing).
	$(BIN)/python -m pip install --quiet torch==2.13.0
	# [ui] and Playwright for the browser test (driving Debian's chromium; no browser download);
	# [train] so the artefact-reproduction test runs; [mcp] and [otel] for the no-code surfaces, and
	# OpenInference's LangChain instrumentation for the span processor's test.
	$(BIN)/python -m pip install --quiet -e '.[dev,e5,embeddings,langchain,openai-agents,claude-agent,ui,train,mcp,otel]' \
	  playwright openinference-instrumentation-langchain
	touch $(STAMP)

venv: $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check memos_feedback tests benchmarks migrations examples
	$(BIN)/mypy --strict memos_feedback
	$(BIN)/lint-imports

test: lint
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS)

demo: $(STAMP)
	$(BIN)/memos-feedback demo

bench: $(STAMP)
	$(BIN)/python -m benchmarks.hot_path
	$(BIN)/python -m benchmarks.repair_path
	$(BIN)/python -m benchmarks.guidance --sizes 1000,10000
	$(BIN)/python -m benchmarks.events
	$(BIN)/python -m benchmarks.plug_in

# The whole suite against a throwaway PostgreSQL server as well as SQLite
# (installs Debian's postgresql package when it is missing; needs root for that).
test-postgres: $(STAMP)
	scripts/pg-cluster.sh install
	dir=$$(mktemp -u /tmp/memos-feedback-pg.XXXXXX) && \
	  url=$$(scripts/pg-cluster.sh start $$dir) && \
	  trap "scripts/pg-cluster.sh stop $$dir" EXIT && \
	  MEMOS_FEEDBACK_TEST_PG_URL=$$url $(MAKE) test

# Optional, not in CI: the Claude Agent SDK's bundled CLI against a fake Messages API
# on 127.0.0.1 (tests/support/fake_messages_api.py); docs/ADAPTERS.md.
test-claude-cli: $(STAMP)
	$(BIN)/python -m pytest -q -m claude_cli tests/adapters/test_claude_cli.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build dist
