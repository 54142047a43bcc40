# `make run`: set up .venv and reproduce every implemented paper (quick preset).
# `make test`: set up .venv with the dev extras and run the whole test suite (what CI runs).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/pip install --quiet --disable-pip-version-check -c constraints.txt

.PHONY: run test bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.run-installed: pyproject.toml constraints.txt | $(BIN)/python
	$(PIP) -e ".[all]"
	touch $@

$(VENV)/.dev-installed: pyproject.toml constraints.txt | $(BIN)/python
	$(PIP) -e ".[all,dev]"
	touch $@ $(VENV)/.run-installed

run: $(VENV)/.run-installed
	$(BIN)/icml25 reproduce

test: $(VENV)/.dev-installed
	$(BIN)/python -m pytest -q

bench: $(VENV)/.dev-installed
	$(PIP) -e ".[all,dev,bench]"
	for f in benchmarks/bench_*.py; do $(BIN)/python $$f || exit 1; done

clean:
	rm -rf $(VENV) .icml25 reports .pytest_cache
