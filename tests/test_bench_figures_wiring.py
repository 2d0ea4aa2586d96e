"""The benchmarks whose figures moved out of the prose, and the Mem0 add beside Mem0's, write
them where bench/figures.py reads them: each run at a tiny size into a folder of its own, and
its rows of the figures block are then measured, not "not measured"."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from test_bench_scripts import run

BENCH = Path(__file__).parent.parent / "bench"


def rows(results: Path) -> dict[str, str]:
    spec = importlib.util.spec_from_file_location("bench_figures_wiring", BENCH / "figures.py")
    assert spec is not None and spec.loader is not None
    figures = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(figures)
    return {what: measured for _, rows_of in figures.SECTIONS
            for what, measured, _, _ in rows_of(results)}  # fmt: skip


def test_current_sqlite_and_decision_split_fill_their_rows(tmp_path: Path) -> None:
    run("current_sqlite.py", "--turns", "20,40", "--queries", "3",
        "--out", str(tmp_path / "current_sqlite.json"))  # fmt: skip
    run("decision_split.py", "--records", "300", "--queries", "3",
        "--out", str(tmp_path / "decision_split.json"))  # fmt: skip
    found = rows(tmp_path)
    current = next(what for what in found if what.startswith("SQLite `Memory.current`"))
    assert current.endswith("40 turns") and found[current] != "not measured"
    split = next(what for what in found if "decide / read" in what)
    assert "300 records" in split and found[split] != "not measured"


def test_langgraph_store_fills_its_rows(tmp_path: Path) -> None:
    pytest.importorskip("langgraph.store.sqlite", reason="needs the 'langgraph' extra")
    run("langgraph_store.py", "--puts", "20,40", "--queries", "3", "--loop", "50",
        "--rounds", "1", "--out", str(tmp_path / "langgraph_store.json"))  # fmt: skip
    langgraph = {what: got for what, got in rows(tmp_path).items() if "LangGraph `Branch" in what}
    measured = {what for what, got in langgraph.items() if got != "not measured"}
    assert len(measured) == 4, langgraph  # the agent-history row is another benchmark's


def test_langgraph_pg_put_fills_its_rows(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    pytest.importorskip("langgraph.store.postgres", reason="needs the 'langgraph' extra")
    dsn = request.getfixturevalue("pg_dsn")  # the tests' server: no second embedded one
    run("langgraph_pg_put.py", "--dsn", dsn, "--calls", "3", "--rounds", "1", "--keys", "4",
        "--batch", "2", "--out", str(tmp_path / "langgraph_pg_put.json"))  # fmt: skip
    ours = ("LangGraph `BranchStore.put`", "LangGraph `BranchStore.batch`", "LangGraph round trips")
    ours += ("LangGraph client CPU",)
    put = {what: got for what, got in rows(tmp_path).items() if what.startswith(ours)}
    assert len(put) == 4 and "not measured" not in put.values(), put
    assert any("of 2 puts" in what for what in put), put


def test_mem0_add_fills_its_rows(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    pytest.importorskip("mem0", reason="needs the 'mem0' extra")
    dsn = request.getfixturevalue("pg_dsn")  # the tests' server: no second embedded one
    run("mem0_add.py", "--sizes", "10,30", "--adds", "2", "--dsn", dsn,
        "--out", str(tmp_path / "mem0_add.json"))  # fmt: skip
    added = {what: got for what, got in rows(tmp_path).items() if "add`" in what}
    assert len(added) == 7 and "not measured" not in added.values(), added
    assert any("30 memories, pgvector" in what for what in added), added
    assert any("30 memories, local Qdrant" in what for what in added), added


def test_erase_soak_fills_its_rows(tmp_path: Path) -> None:
    run("erase_soak.py", "--rounds", "5", "--backends", "sqlite",
        "--out", str(tmp_path / "erase_soak.json"))  # fmt: skip
    soak = {what: got for what, got in rows(tmp_path).items() if "erased markers" in what}
    assert soak[next(w for w in soak if w.startswith("SQLite"))].startswith("5; 0; 0; ok; 5 ")
    assert soak[next(w for w in soak if w.startswith("PostgreSQL"))] == "not measured"


def test_search_embedder_fills_its_rows(tmp_path: Path) -> None:
    run("search_embedder.py", "--sizes", "30,60", "--queries", "3",
        "--out", str(tmp_path / "search_embedder.json"))  # fmt: skip
    ours = ("the query's embedding", "search with the embedder")
    embedder = {what: got for what, got in rows(tmp_path).items() if what.startswith(ours)}
    assert len(embedder) == 6 and "not measured" not in embedder.values(), embedder
    assert any(what.endswith("60 visible") for what in embedder), embedder


def test_answer_cost_fills_its_rows(tmp_path: Path) -> None:
    run("answer_cost.py", "--turns", "40", "--rounds", "2",
        "--out", str(tmp_path / "answer_cost.json"))  # fmt: skip
    through = {what: got for what, got in rows(tmp_path).items() if "`answer`" in what}
    assert len(through) == 2 and "not measured" not in through.values(), through
    assert all(what.endswith("40 turns") and got.count(";") == 3 for what, got in through.items())
    built = rows(tmp_path)["a single-id question and its empty answer built, nothing read, µs"]
    assert float(built) > 0
