VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
MEM0V1_VENV ?= .venv-mem0v1
MEM0V1_STAMP := $(MEM0V1_VENV)/.installed

.PHONY: run demo test test-mem0v1 smoke lint bench propagation-report clean

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test]"
	touch $(STAMP)

$(MEM0V1_STAMP): pyproject.toml
	python3 -m venv $(MEM0V1_VENV)
	$(MEM0V1_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(MEM0V1_VENV)/bin/python -m pip install --quiet -e ".[test-core,bench]" "mem0ai==1.0.11"
	touch $(MEM0V1_STAMP)

# The frozen test split, then the splits built from ../shared/corpora (LoCoMo, BEAM):
# skipped with a message when the corpora are absent, an error when they do not match.
run: $(STAMP)
	$(VENV)/bin/branchbench run --split test --out results/latest
	@for split in locomo beam; do \
		$(PY) -m branchbench.corpusgen check $$split; rc=$$?; \
		if [ $$rc -eq 0 ]; then \
			$(VENV)/bin/branchbench run --split $$split --out results/$$split || exit 1; \
		elif [ $$rc -eq 3 ]; then echo "skipped split $$split (corpora absent)"; \
		else exit $$rc; fi; \
	done

demo: $(STAMP)
	$(PY) -m branchmem.demo

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/ruff format --check src tests bench
	$(VENV)/bin/mypy

test: $(STAMP) lint
	$(VENV)/bin/pytest -q -n 2

# Mem0 1.0.x (ADD/UPDATE/DELETE/NONE) in its own venv; the main venv runs mem0ai 2.x.
test-mem0v1: $(MEM0V1_STAMP)
	$(MEM0V1_VENV)/bin/pytest -q -n 2 tests/test_mem0_integration.py tests/test_mem0_systems.py \
		tests/test_mem0_api.py tests/test_mem0_tap.py tests/test_mem0_compat.py tests/test_mem0_follow.py

# The package as a user gets it: a wheel in throwaway venvs, base and each extra alone.
smoke:
	bash .ci/smoke.sh

bench: $(STAMP)
	BRANCHMEM_BENCH_SCALE=10 $(VENV)/bin/pytest -q -n 2 -k differential tests
	BRANCHMEM_BENCH_SCALE=10 $(VENV)/bin/pytest -q tests/test_importers_fuzz.py tests/test_importers_stream.py
	BRANCHMEM_BENCH_SCALE=1 $(VENV)/bin/pytest -q tests/test_reliability.py
	$(PY) bench/visibility.py
	$(PY) bench/storage.py
	$(PY) bench/search.py
	$(PY) bench/search_visible.py
	$(PY) bench/search_embedder.py
	$(PY) bench/load.py
	$(PY) bench/agent_history.py
	$(PY) bench/records.py
	$(PY) bench/footprint.py --records 1000000
	$(PY) bench/erase_soak.py --rounds 10000
	$(PY) bench/forget_scale.py
	$(PY) bench/deep_path.py
	$(PY) bench/disk.py
	$(PY) bench/service.py --runs 5 --hop --compare no-direct
	$(PY) bench/context.py
	$(PY) bench/langgraph_store.py
	$(PY) bench/current_sqlite.py
	$(PY) bench/mem0_add.py
	$(PY) bench/active_conversations.py
	$(PY) bench/ingest_floor.py
	$(PY) bench/answer_cost.py
	$(PY) bench/langgraph_pg_put.py
	$(PY) bench/decision_split.py --full
	$(PY) bench/corpus_retrieval.py
	$(PY) bench/figures.py

propagation-report: $(STAMP)
	$(VENV)/bin/branchbench propagation-report docs/propagation-report.md

clean:
	rm -rf $(VENV) $(MEM0V1_VENV) .pytest_cache .mypy_cache .ruff_cache
