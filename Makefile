# `make run`: set up .venv and reproduce every implemented paper (quick preset).
# `make test`: set up .venv with the dev extras and run the whole test suite (what CI runs).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/pip install --quiet --disable-pip-version-check -c constraints.txt

.PHONY: run test lint test-portable bench clean

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

test: lint $(VENV)/.dev-installed
	$(BIN)/python -m pytest -q

# ruff's rules and the per-file exceptions are in pyproject.toml ([tool.ruff]); `make test` runs this first.
lint: $(VENV)/.dev-installed
	$(BIN)/ruff check --no-cache src tests benchmarks

# The torch paper tests again with one thread and torch's portable kernels (ATEN_CPU_CAPABILITY=default):
# they must not depend on the machine's vector unit or thread count (CI runs this after `make test`).
test-portable: $(VENV)/.dev-installed
	OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 ATEN_CPU_CAPABILITY=default $(BIN)/python -m pytest -q -p no:cacheprovider \
		$$(grep -l "^import torch\|^from torch\|^torch = " tests/papers/test_*.py)

bench: $(VENV)/.dev-installed
	$(PIP) -e ".[all,dev,bench]"
	for f in benchmarks/bench_*.py; do $(BIN)/python $$f || exit 1; done

clean:
	rm -rf $(VENV) .icml25 reports .pytest_cache
