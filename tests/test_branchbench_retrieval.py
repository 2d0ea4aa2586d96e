"""branchbench retrieval: the metrics on hand-made cases, each retriever on a tiny
conversation, and the whole table on a slice of the real corpora."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import pytest

from branchbench.cli import main
from branchbench.errors import BenchError
from branchbench.retrieval import (
    BeamTask,
    Bm25s,
    Dense,
    Document,
    EvidenceQuery,
    Haystack,
    LocomoTask,
    MemoryContext,
    MemorySearch,
    UpdateQuery,
    evidence_recall,
    first_rank,
    load_tasks,
    locomo_text,
    make_retrievers,
    run_retrieval,
    score_beam,
    score_locomo,
    stale_above_update,
    updated_at,
)
from branchmem.search.embedding import HashingEmbedder
from corpora_env import require_corpora

TRIP = Haystack(
    "trip",
    (
        Document("t1", "user", "Caroline: I adopted a puppy named Biscuit last week."),
        Document("t2", "user", "Melanie: I painted a sunrise over the lake."),
        Document("t3", "user", "Caroline: Biscuit chewed my running shoes."),
        Document("t4", "user", "Melanie: My budget for the trip is 500 dollars."),
        Document("t5", "user", "Melanie: Update: the trip budget is now 800 dollars."),
        Document("t6", "user", "Caroline: See you on Saturday!"),
    ),
)


class FixedRanking:
    """A retriever that returns given rankings: input for the scorers' arithmetic."""

    name = "fixed"

    def __init__(self, rankings: dict[str, list[str]]) -> None:
        self.rankings = rankings

    def rank(self, haystack: Haystack, questions: Sequence[str], depth: int) -> list[list[str]]:
        return [self.rankings[q][:depth] for q in questions]


# -- metrics ---------------------------------------------------------------------------
def test_evidence_recall_counts_gold_turns_within_k() -> None:
    ranking = ["a", "b", "c", "d", "e", "f"]
    assert evidence_recall(ranking, ["b", "f"], 5) == 0.5
    assert evidence_recall(ranking, ["b", "f"], 6) == 1.0
    assert evidence_recall(ranking, ["z"], 10) == 0.0
    assert evidence_recall(ranking, ["b", "b"], 2) == 1.0  # a repeated gold id counts once


def test_evidence_recall_refuses_empty_gold() -> None:
    with pytest.raises(BenchError, match="gold"):
        evidence_recall(["a"], [], 5)


def test_update_metrics_compare_first_ranks() -> None:
    ranking = ["old", "x", "new", "y"]
    assert first_rank(ranking, ["new", "y"]) == 3
    assert first_rank(ranking, ["z"]) is None
    assert updated_at(ranking, ["new"], 3) and not updated_at(ranking, ["new"], 2)
    assert stale_above_update(ranking, ["new"], ["old"], 10)  # old ranked first
    assert not stale_above_update(["new", "old"], ["new"], ["old"], 10)
    assert stale_above_update(["old", "x"], ["new"], ["old"], 10)  # update not retrieved
    assert not stale_above_update(["x", "new"], ["new"], ["old"], 10)  # old not retrieved
    assert not stale_above_update(["x", "y", "old"], ["new"], ["old"], 2)  # old below k


def test_locomo_text_renders_shared_images() -> None:
    assert locomo_text("Mel", "Look!", "a photo of a dog") == "Mel: Look! [shares a photo of a dog]"
    assert locomo_text("Mel", "Hi") == "Mel: Hi"


# -- scorers ---------------------------------------------------------------------------
def test_score_locomo_averages_per_question_and_category() -> None:
    task = LocomoTask(
        (TRIP,),
        (
            EvidenceQuery("trip", "q1", ("t1",), "single-hop"),
            EvidenceQuery("trip", "q2", ("t1", "t3"), "multi-hop"),
        ),
    )
    ranked = FixedRanking(
        {"q1": ["t1", "t2"], "q2": ["t2", "t4", "t6", "t5", "t1", "t3"]},
    )
    row = score_locomo(ranked, task)
    assert row.metrics == {"recall@5": pytest.approx(0.75), "recall@10": 1.0}
    assert row.n == {"recall@5": 2, "recall@10": 2}
    assert row.by_category["multi-hop"] == {"recall@5": 0.5, "recall@10": 1.0}
    assert row.category_n == {"single-hop": 1, "multi-hop": 1}


def test_score_beam_counts_updates_and_stale_rankings() -> None:
    task = BeamTask(
        (TRIP,),
        (
            UpdateQuery("trip", "q1", ("t5",), ("t4",)),
            UpdateQuery("trip", "q2", ("t5",), ("t4",)),
            UpdateQuery("trip", "q3", ("t5",), ()),
        ),
    )
    ranked = FixedRanking({"q1": ["t4", "t5"], "q2": ["t5", "t4"], "q3": ["t1"]})
    row = score_beam(ranked, task)
    assert row.metrics["updated@5"] == pytest.approx(2 / 3)
    assert row.metrics["stale-above-update@10"] == 0.5  # q3 names no original turn
    assert row.n == {"updated@5": 3, "updated@10": 3, "stale-above-update@10": 2}


# -- retrievers on a tiny conversation --------------------------------------------------
def test_memory_search_ranks_turns_through_record_sources() -> None:
    [ranking] = MemorySearch().rank(TRIP, ["What did Biscuit chew?"], 3)
    assert ranking[:2] == ["t3", "t1"]  # both name Biscuit; t3 also says "chewed"


def test_memory_search_with_an_embedder_ranks_every_turn() -> None:
    [lexical] = MemorySearch().rank(TRIP, ["puppy"], 10)
    [hybrid] = MemorySearch(HashingEmbedder()).rank(TRIP, ["puppy"], 10)
    assert lexical == ["t1"]  # only matching turns
    assert hybrid[0] == "t1" and len(hybrid) == len(TRIP.documents)


def test_memory_context_ranks_by_order_of_use() -> None:
    question = "trip budget dollars"
    [searched] = MemorySearch().rank(TRIP, [question], 10)
    assert sorted(searched) == ["t4", "t5"]
    # 60 tokens: the records' half holds the matching turns, the transcript the last ones
    [ranking] = MemoryContext(budget=60).rank(TRIP, [question], 10)
    assert ranking[:2] == searched  # the records, in the order the context ranks them
    assert ranking[2] == "t6"  # then the anchor's own turn, from the transcript
    assert len(ranking) == len(set(ranking)) < len(TRIP.documents)
    [wide] = MemoryContext(budget=5000).rank(TRIP, [question], 10)
    assert wide[:2] == searched
    # every other record fits too (most recent first), so every turn is used by a record
    assert wide[2:] == ["t6", "t3", "t2", "t1"]


def test_bm25s_ranks_matching_turns_only() -> None:
    pytest.importorskip("bm25s")
    [ranking] = Bm25s().rank(TRIP, ["Biscuit puppy"], 10)
    assert ranking == ["t1", "t3"]
    [nothing] = Bm25s().rank(TRIP, ["the"], 10)  # a stop word only
    assert nothing == []


def test_wordllama_embedder_is_unit_and_zero_for_empty_text() -> None:
    pytest.importorskip("wordllama")
    from branchbench.retrieval import WordLlamaEmbedder

    embedder = WordLlamaEmbedder()
    vectors = embedder.embed(["a puppy named Biscuit", ""])
    assert len(vectors[0]) == embedder.dimensions
    assert math.isclose(math.fsum(x * x for x in vectors[0]), 1.0, rel_tol=1e-6)
    assert all(x == 0.0 for x in vectors[1])
    [ranking] = Dense(embedder, "dense").rank(TRIP, ["my dog"], 2)
    assert len(ranking) == 2


def test_unknown_retriever_is_refused_by_name() -> None:
    with pytest.raises(BenchError, match="nope"):
        make_retrievers(["search", "nope"])


def test_cli_refuses_unknown_retriever(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["retrieval", "--out", str(tmp_path), "--retrievers", "nope"]) == 2
    assert "nope" in capsys.readouterr().err


# -- the real corpora -------------------------------------------------------------------
def _available(names: Sequence[str]) -> list[str]:
    needs = {"bm25s": "bm25s", "dense-wordllama": "wordllama"}
    found = []
    for name in names:
        module = needs.get(name)
        if module is not None:
            try:
                __import__(module)
            except ImportError:
                continue
        found.append(name)
    return found


def test_table_on_a_corpus_slice() -> None:
    root = require_corpora()
    tasks, skipped = load_tasks(root, conversations_limit=1, questions_limit=12)
    assert not skipped and [t.corpus for t in tasks] == ["locomo", "beam"]
    assert all(t.truncated for t in tasks)
    names = _available(["search", "context", "bm25s", "dense-wordllama"])
    report = run_retrieval(tasks, make_retrievers(names, budget=2000))
    assert len(report.rows) == 2 * len(names)
    for row in report.rows:
        assert all(0.0 <= v <= 1.0 for v in row.metrics.values() if not math.isnan(v))
        assert all(n > 0 for n in row.n.values())
    search = next(
        r for r in report.rows if r.retriever == "branchmem search" and r.corpus == "locomo"
    )
    assert search.metrics["recall@10"] > 0  # real questions find some of their evidence
    assert search.metrics["recall@5"] <= search.metrics["recall@10"]
    table = report.markdown()
    assert "TRUNCATED" in table and all(r.retriever in table for r in report.rows)


def test_cli_writes_json_and_markdown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = require_corpora()
    argv = ["retrieval", "--out", str(tmp_path), "--corpora", str(root)]
    argv += ["--conversations", "1", "--questions", "4", "--retrievers", "search", "context"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "branchmem search" in printed and "locomo recall@5" in printed
    data = json.loads((tmp_path / "retrieval.json").read_text())
    assert {(r["retriever"], r["corpus"]) for r in data["rows"]} == {
        ("branchmem search", "locomo"),
        ("branchmem search", "beam"),
        ("branchmem context (2000 tokens)", "locomo"),
        ("branchmem context (2000 tokens)", "beam"),
    }
    assert (tmp_path / "retrieval.md").read_text().startswith("| retriever |")
