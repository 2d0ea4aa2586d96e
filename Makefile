VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run demo test lint bench clean

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test]"
	touch $(STAMP)

run: $(STAMP)
	$(VENV)/bin/branchbench run --split test --out results/latest

demo: $(STAMP)
	$(PY) -m branchmem.demo

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/ruff format --check src tests bench
	$(VENV)/bin/mypy

test: $(STAMP) lint
	$(VENV)/bin/pytest -q -n 2

bench: $(STAMP)
	BRANCHMEM_BENCH_SCALE=10 $(VENV)/bin/pytest -q -n 2 -k differential tests
	BRANCHMEM_BENCH_SCALE=10 $(VENV)/bin/pytest -q tests/test_importers_fuzz.py tests/test_importers_stream.py
	$(PY) bench/visibility.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
