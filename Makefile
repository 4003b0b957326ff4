# Two commands do everything on a fresh clone: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-slow lint typecheck clean peers prices

$(STAMP): pyproject.toml
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "orchestrator needs Python 3.11+"'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev,dbos,mcp,otel]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/orchestrator demo

test: $(STAMP)
	$(BIN)/ruff check orchestrator tests examples
	$(BIN)/ruff format --check orchestrator tests examples
	$(BIN)/mypy orchestrator
	$(BIN)/mypy examples
# The examples as a user without pydantic's mypy plugin checks them (issue 39).
	$(BIN)/mypy --config-file= --strict --python-version 3.11 --follow-imports=silent \
		--cache-dir .mypy_cache/no-plugin --exclude '^examples/compare/(pydantic_ai|agents_sdk)_' examples
	$(BIN)/python -m pytest -q -n auto --dist worksteal --by-file

# The crash harnesses at their full counts (docs/testing.md); .ci/run runs them after `test`.
test-slow: $(STAMP)
	$(BIN)/python -m pytest -q -n auto --dist worksteal --by-file -m slow

# pydantic-ai beside this package, for the comparison in tests/benchmarks/bench_call.py
# (docs/performance.md); not part of `test`.
peers:
	$(PYTHON) -m venv .venv-peers
	.venv-peers/bin/pip install 'pydantic-ai-slim[openai]==2.68.0' -e .

# The known models' prices, from genai-prices (not a dependency: any Python that has it),
# e.g. `make prices PRICES_PYTHON=.venv-peers/bin/python` after `pip install genai-prices`.
PRICES_PYTHON ?= $(BIN)/python
prices:
	$(PRICES_PYTHON) tests/generate_price_table.py > orchestrator/prices/_table.py.new
	mv orchestrator/prices/_table.py.new orchestrator/prices/_table.py
	$(BIN)/ruff format orchestrator/prices/_table.py

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
