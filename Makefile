# Two entry points for a fresh machine: `make demo` (install, then check, compile and run examples)
# and `make test` (install with test extras, then run the suite but its `slow` tests; `make test-all`
# runs those too). All build .venv/.
PYTHON ?= python3.11
VENV ?= .venv
BIN = $(VENV)/bin

.PHONY: demo test test-all install install-test clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

install: $(BIN)/python
	$(BIN)/pip install --quiet -e .

install-test: $(BIN)/python
	$(BIN)/pip install --quiet -e ".[test]" -e examples/lir_eval_plugin

demo: install
	$(BIN)/transpile check examples/quickstart.rly
	$(BIN)/transpile run examples/quickstart.rly 10 "[1.0, 2.0, 3.0, 4.0]"
	$(BIN)/transpile run --prelude examples/lists.rly 5
	$(BIN)/transpile run -b python examples/quickstart.rly 10 "[1.0, 2.0, 3.0, 4.0]"
	$(BIN)/transpile run -b cpp examples/quickstart.rly 10 "[1.0, 2.0, 3.0, 4.0]"
	$(BIN)/transpile run -b tir examples/quickstart.rly 10 "[1.0, 2.0, 3.0, 4.0]"

# The whole suite but the `slow` tests (the conformance suite runs on every installed backend, the
# example plugin's too), then the suite as a third party runs it against their own backend.
test: install-test
	$(BIN)/python -m pytest -q -n 2 -m "not slow"
	cd /tmp && $(abspath $(BIN))/python -m pytest -q -p no:cacheprovider --pyargs transpile.testing --transpile-backend lir-eval

# Everything, the `slow` builds of the big corpus models (ResNeXt-50, GPT-2 on cpp and tir) too.
test-all: install-test
	$(BIN)/python -m pytest -q -n 2
	cd /tmp && $(abspath $(BIN))/python -m pytest -q -p no:cacheprovider --pyargs transpile.testing --transpile-backend lir-eval

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
