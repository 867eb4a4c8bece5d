# Two entry points for a fresh machine: `make demo` (install, then check and run an example)
# and `make test` (install with test extras, then run the whole suite). Both build .venv/.
PYTHON ?= python3.11
VENV ?= .venv
BIN = $(VENV)/bin

.PHONY: demo test install install-test clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

install: $(BIN)/python
	$(BIN)/pip install --quiet -e .

install-test: $(BIN)/python
	$(BIN)/pip install --quiet -e ".[test]"

demo: install
	$(BIN)/transpile check examples/quickstart.rly
	$(BIN)/transpile run examples/quickstart.rly 10 "[1.0, 2.0, 3.0, 4.0]"
	$(BIN)/transpile run --prelude examples/lists.rly 5

test: install-test
	$(BIN)/python -m pytest -q

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
