"""bench/figures.py builds docs/scaling.md's figures block from what the benchmarks wrote:
a figure from its JSON with the goal it is held to, "not measured" where nothing ran, and
only the block of the document rewritten."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).parent.parent / "bench"


@pytest.fixture(scope="module")
def figures() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_figures", BENCH / "figures.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def row(block: str, starts: str) -> list[str]:
    (line,) = [line for line in block.splitlines() if line.startswith(f"| {starts}")]
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_a_figure_is_read_from_its_json_and_held_to_its_goal(
    figures: ModuleType, tmp_path: Path
) -> None:
    (tmp_path / "current_sqlite.json").write_text(
        json.dumps({"turns": [100, 300], "goal": 4, "over_plain": {"Memory.current": 4.5}})
    )
    (tmp_path / "ingest_floor.json").write_text(json.dumps({"ratio": 0.42, "load": [1.5]}))
    (tmp_path / "search_visible.json").write_text("[]")  # a benchmark that writes a list
    block = figures.table(tmp_path)
    assert row(block, "SQLite `Memory.current`") == [
        "SQLite `Memory.current` / a plain latest-by-key lookup (WAL), 300 turns",
        "4.50", "<= 4", "**no**",
    ]  # fmt: skip
    assert row(block, "SQLite batched ingest")[1:] == ["0.42", ">= 0.3", "yes"]
    assert ", load 1.5" in block.splitlines()[1] and "ingest_floor 20" in block.splitlines()[1]


def test_a_benchmark_that_did_not_run_shows_not_measured(
    figures: ModuleType, tmp_path: Path
) -> None:
    block = figures.table(tmp_path)
    rows = [line for line in block.splitlines() if line.startswith("| ") and "**" not in line]
    assert len(rows) > 30
    assert all("| not measured |" in line for line in rows[1:]), rows  # the header first


def test_the_service_rows_read_every_run(figures: ModuleType, tmp_path: Path) -> None:
    visible = {
        "operation": "visible",
        "ratio_p50": 1.2,
        "ratio_p99": 1.4,
        "server_cpu_ms": 2.0,
        "no-direct_server_cpu_ms": 2.5,
        "hop_ratio_p99": 1.1,
    }
    runs = [{"rows": [visible]}, {"rows": [dict(visible, **{"no-direct_server_cpu_ms": 2.75})]}]
    (tmp_path / "service.json").write_text(json.dumps({
        "goal_p99_ratio": 1.5, "worst_p99_ratio_per_run": [1.4, 1.6], "all_within_goal": False,
        "rows": [visible], "runs": runs,
    }))  # fmt: skip
    block = figures.table(tmp_path)
    assert row(block, "service / embedded p99, worst")[1:] == ["1.40 1.60", "<= 1.5 every run",
                                                               "**no**"]  # fmt: skip
    assert row(block, "server CPU the direct reads save")[1] == "0.50 0.75"
    assert row(block, "the hop")[1] == "1.10 1.10"


def test_only_the_block_of_the_document_is_rewritten(
    figures: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text(f"before\n{figures.BEGIN}\nold figures\n{figures.END}\nafter\n")
    results = tmp_path / "results"
    results.mkdir()
    monkeypatch.setattr(sys, "argv", ["figures.py", "--results", str(results), "--doc", str(doc)])
    assert figures.main() == 0
    text = doc.read_text()
    assert text.startswith(f"before\n{figures.BEGIN}\nRebuilt ")
    assert text.endswith(f"{figures.END}\nafter\n") and "old figures" not in text


def test_the_langgraph_put_rows_read_ratios_and_round_trips(
    figures: ModuleType, tmp_path: Path
) -> None:
    (tmp_path / "langgraph_pg_put.json").write_text(json.dumps({
        "batch": 10, "goal": 3, "ratios": {"put": 2.5, "batch": 4.0, "get": 0.8},
        "round_trips": {"BranchStore": {"put": 6.0, "batch": 6.5},
                        "PostgresStore": {"put": 1.0, "batch": 1.0}},
    }))  # fmt: skip
    block = figures.table(tmp_path)
    assert row(block, "LangGraph `BranchStore.put`")[1:] == ["2.50", "<= 3", "yes"]
    assert row(block, "LangGraph `BranchStore.batch`")[:2] == [
        "LangGraph `BranchStore.batch` / `PostgresStore.batch` of 10 puts, per put", "4.00",
    ]  # fmt: skip
    assert row(block, "LangGraph `BranchStore.batch`")[3] == "**no**"
    assert row(block, "LangGraph round trips")[1] == "6 / 1; 6.5 / 1"
    assert row(block, "LangGraph client CPU")[1] == "not measured"  # an older run's file
    (tmp_path / "langgraph_pg_put.json").write_text(json.dumps({
        "batch": 10, "goal": 3, "ratios": {}, "round_trips": {}, "psycopg_floor_cpu_ms": 0.4,
        "cpu_ms": {"BranchStore put": 1.1, "PostgresStore put": 0.1},
    }))  # fmt: skip
    assert row(figures.table(tmp_path), "LangGraph client CPU")[1] == "1.10; 0.40; 0.10"


def test_the_search_rows_read_both_benchmarks(figures: ModuleType, tmp_path: Path) -> None:
    visible = [
        {
            "visible": 10_000,
            "history": 0,
            "path": "memory",
            "ratio_to_bm25s": 1.8,
            "after_turn_ms": 1.234,
            "after_turn_ratio_to_bm25s": 4.81,
        },
        {"visible": 10_000, "history": 100_000, "path": "memory", "ratio_to_bm25s": 9.0},
        {"visible": 100_000, "history": 0, "path": "sqlite", "ratio_to_bm25s": 3.5},
    ]
    (tmp_path / "search_visible.json").write_text(json.dumps(visible))
    grown = {"rows": [{"records": 10_000, "ratio_gated_ungated": 0.4}]}
    (tmp_path / "search.json").write_text(json.dumps({"backends": {"sqlite": grown}}))
    block = figures.table(tmp_path)
    assert row(block, "memory gated search / `bm25s`, 10,000")[1:] == ["1.80", "<= 3", "yes"]
    assert row(block, "sqlite gated search / `bm25s`, 100,000")[1:] == ["3.50", "<= 3", "**no**"]
    assert row(block, "memory gated search / `bm25s`, 100,000")[1] == "not measured"
    assert row(block, "sqlite gated / ungated search at 10,000")[1:] == ["0.40", "<= 1.2", "yes"]
    assert row(block, "memory gated / ungated search")[1] == "not measured"
    turns = [line for line in block.splitlines() if "search at an agent's new turn" in line]
    assert [line.split("|")[2].strip() for line in turns] == [
        "1.23; 4.8", "not measured", "not measured", "not measured",
    ]  # fmt: skip
    assert "memory" in turns[0] and "10,000 visible" in turns[0]


def test_the_answer_cost_rows_read_every_pair(figures: ModuleType, tmp_path: Path) -> None:
    pairs = {f"memory {read}": {"ratio": 2.0 + n} for n, read in enumerate(figures.READS_ANSWERED)}
    pairs["sqlite get_event"] = {"ratio": 1.25}  # an incomplete run: the row says so
    (tmp_path / "answer_cost.json").write_text(
        json.dumps({"turns": 500, "pairs": pairs, "question_and_answer_built_us": 6.04})
    )
    block = figures.table(tmp_path)
    assert row(block, "in memory, every per-item read through `answer`")[1:] == [
        "2.00; 3.00; 4.00; 5.00", "—", "—",
    ]  # fmt: skip
    assert row(block, "in memory, every per-item read")[0].endswith("500 turns")
    assert row(block, "SQLite, every per-item read through `answer`")[1] == "not measured"
    assert row(block, "a single-id question and its empty answer")[1] == "6.04"
