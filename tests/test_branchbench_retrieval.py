"""branchbench retrieval: the metrics on hand-made cases, each retriever on a tiny
conversation, and the whole table on a slice of the real corpora."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from pathlib import Path

import pytest

from branchbench.cli import main
from branchbench.corpora import read_beam_chat
from branchbench.errors import BenchError
from branchbench.retrieval import (
    BeamTask,
    Bm25s,
    ContradictionQuery,
    Dense,
    Document,
    EvidenceQuery,
    Haystack,
    LocomoTask,
    MemoryContext,
    MemorySearch,
    UpdateQuery,
    beam_task,
    in_split,
    load_tasks,
    locomo_text,
    make_retrievers,
    question_split,
)
from branchbench.retrieval_report import (
    Estimate,
    bootstrap_interval,
    contradiction_both,
    evidence_recall,
    first_rank,
    format_estimate,
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
    multi_hop = row.splits["all"].by_category["multi-hop"]
    assert {m: e.value for m, e in multi_hop.items()} == {"recall@5": 0.5, "recall@10": 1.0}
    assert list(row.splits["all"].by_category) == ["multi-hop", "single-hop"]  # upstream order
    assert {c: v["recall@5"].n for c, v in row.splits["all"].by_category.items()} == {
        "single-hop": 1,
        "multi-hop": 1,
    }
    # no question of the tuning split: its metrics are NaN over 0 questions
    assert row.splits["held-out"].metrics["recall@5"].n == 2
    assert row.splits["tuning"].metrics["recall@5"].n == 0
    assert math.isnan(row.splits["tuning"].metrics["recall@5"].value)


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
    assert row.n == {
        "updated@5": 3,
        "updated@10": 3,
        "stale-above-update@10": 2,
        "contradiction-both@10": 0,
    }
    assert math.isnan(row.metrics["contradiction-both@10"])


def test_contradiction_both_needs_a_turn_of_each_side_within_k() -> None:
    assert contradiction_both(["a", "x", "b"], ["a"], ["b", "c"], 3)
    assert not contradiction_both(["a", "x", "b"], ["a"], ["b"], 2)  # second side below k
    assert not contradiction_both(["a", "a2"], ["a", "a2"], ["b"], 10)  # one side only
    assert contradiction_both(["c", "a"], ["a"], ["c"], 2)  # order does not matter


def test_score_beam_scores_contradictions_in_the_same_pass() -> None:
    task = BeamTask(
        (TRIP,),
        (UpdateQuery("trip", "q1", ("t5",), ("t4",), "tuning"),),
        contradictions=(
            ContradictionQuery("trip", "c1", ("t1",), ("t3",), "tuning"),
            ContradictionQuery("trip", "c2", ("t1",), ("t3",)),
            ContradictionQuery("trip", "c3", ("t2",), ("t6",)),
        ),
    )
    ranked = FixedRanking(
        {"q1": ["t5"], "c1": ["t3", "t2", "t1"], "c2": ["t1"], "c3": ["t2", "t6"]},
    )
    row = score_beam(ranked, task)
    both = {s: row.splits[s].metrics["contradiction-both@10"] for s in ("all", "held-out")}
    assert (both["all"].value, both["all"].n) == (pytest.approx(2 / 3), 3)
    assert (both["held-out"].value, both["held-out"].n) == (0.5, 2)  # c2 misses t3
    assert row.splits["held-out"].metrics["updated@5"].n == 0  # q1 is a tuning question
    assert row.splits["tuning"].metrics["updated@5"].value == 1.0


# -- retrievers on a tiny conversation --------------------------------------------------
def test_memory_search_ranks_turns_through_record_sources() -> None:
    [ranking] = MemorySearch().rank(TRIP, ["What did Biscuit chew?"], 3)
    # both name Biscuit; t3 also says "chewed"; then t2, beside t3 on the path (0.3 of its
    # score; a larger share let the turns beside t3 pass t1: docs/retrieval.md)
    assert ranking == ["t3", "t1", "t2"]


def test_memory_search_with_an_embedder_ranks_every_turn() -> None:
    [lexical] = MemorySearch().rank(TRIP, ["puppy"], 10)
    [hybrid] = MemorySearch(HashingEmbedder()).rank(TRIP, ["puppy"], 10)
    assert lexical == ["t1", "t2"]  # the matching turn, and the turn beside it on the path
    assert hybrid[0] == "t1" and len(hybrid) == len(TRIP.documents)


def test_memory_context_ranks_by_order_of_use() -> None:
    question = "trip budget dollars"
    [searched] = MemorySearch().rank(TRIP, [question], 10)
    assert searched == ["t5", "t4", "t3", "t6"]  # the matching turns, then those beside them
    # 60 tokens: the records' half holds the matching turns, the transcript the last ones
    [ranking] = MemoryContext(budget=60).rank(TRIP, [question], 10)
    assert ranking[:2] == searched[:2]  # the records, in the order the context ranks them
    assert ranking[2] == "t6"  # then the anchor's own turn, from the transcript
    assert len(ranking) == len(set(ranking)) < len(TRIP.documents)
    [wide] = MemoryContext(budget=5000).rank(TRIP, [question], 10)
    assert wide[:4] == searched
    # every other record fits too (most recent first), so every turn is used by a record
    assert wide[4:] == ["t2", "t1"]


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
    needs = {"bm25s": "bm25s", "dense-wordllama": "wordllama", "search-paraphrase": "onnxruntime"}
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
    beam = tasks[1]
    assert isinstance(beam, BeamTask)
    assert [h.id for h in beam.haystacks] == ["beam-100k-1", "beam-500k-1"]
    assert beam.contradictions  # 100K and 500K chats each bring theirs
    names = _available(["search", "search-paraphrase", "context", "bm25s", "dense-wordllama"])
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
    metric = data["rows"][0]["splits"]["all"]["metrics"]["recall@5"]
    assert set(metric) == {"value", "ci", "n"} and len(metric["ci"]) == 2
    # the first conversation of each corpus is a tuning one: the only split shown
    assert (tmp_path / "retrieval.md").read_text().startswith("### Tuning questions")
    # --split held-out: the first held-out conversation of each corpus, and only its table
    held = tmp_path / "held"
    assert main([*argv[:2], str(held), *argv[3:], "--split", "held-out"]) == 0
    assert (held / "retrieval.md").read_text().startswith("### Held-out questions")
    haystacks = [
        t["conversations"] for t in json.loads((held / "retrieval.json").read_text())["tasks"]
    ]
    assert haystacks == [1, 2]  # LoCoMo 47; BEAM 100K 15 and 500K 9 (each folder limited apart)


def test_the_tuning_and_held_out_splits_partition_the_corpora() -> None:
    root = require_corpora()
    every, _ = load_tasks(root)
    tuning, _ = load_tasks(root, split="tuning")
    held, _ = load_tasks(root, split="held-out")
    for whole, tuned, rest in zip(every, tuning, held, strict=True):
        ids = {h.id for h in whole.haystacks}
        assert {h.id for h in tuned.haystacks} | {h.id for h in rest.haystacks} == ids
        assert not {h.id for h in tuned.haystacks} & {h.id for h in rest.haystacks}
        assert len(tuned.asked) + len(rest.asked) == len(whole.asked)
        assert {q.split for q in tuned.asked} == {"tuning"}
        assert {q.split for q in rest.asked} == {"held-out"}
        assert sorted(q.split for q in whole.asked) == sorted(
            [q.split for q in tuned.asked] + [q.split for q in rest.asked]
        )
    assert [len(t.haystacks) for t in tuning] == [6, 14 + 8]
    beam = every[1]
    assert isinstance(beam, BeamTask)
    # the headline BEAM counts: 62 updates with an update turn, 64 contradictions
    assert (len(beam.queries), beam.dropped) == (62, 2)
    assert (len(beam.contradictions), beam.contradictions_dropped) == (64, 0)
    with pytest.raises(BenchError, match="unknown split"):
        load_tasks(root, split="test")


# -- contradictions, splits and the report on small synthetic corpora -------------------
def _beam_chat(folder: Path, texts: Sequence[str], questions: dict[str, list[dict]]) -> Path:
    """A BEAM chat folder as upstream lays it out: one batch, turns with integer ids."""
    folder.mkdir(parents=True)
    turns = [
        {"id": i, "role": "user" if i % 2 == 0 else "assistant", "content": text}
        for i, text in enumerate(texts)
    ]
    (folder / "chat.json").write_text(json.dumps([{"batch_number": 1, "turns": [turns]}]))
    (folder / "probing_questions.json").write_text(json.dumps(questions))
    return folder


def _contradiction(question: str, **sources: list[int]) -> dict:
    return {"question": question, "ideal_answer": "Which is it?", "source_chat_ids": sources}


BEAM_TEXTS = (
    "I have never used Flask in this project. ->-> 1,1",
    "Noted.",
    "I wrote a Flask homepage route today. ->-> 1,2",
    "Nice.",
    "My budget is 500 dollars.",
    "Update: the budget is 800 dollars.",
)
BEAM_QUESTIONS = {
    "knowledge_update": [
        {
            "question": "What is my budget?",
            "answer": "800 dollars",
            "source_chat_ids": {"original_info": [4], "updated_info": [5]},
        }
    ],
    "contradiction_resolution": [
        _contradiction("Have I used Flask?", first_statement=[0], second_statement=[2, 3]),
        _contradiction("Only one side?", first_statement=[0]),  # no second statement
        {"question": "No sources?", "ideal_answer": "?"},
        _contradiction("Gone?", first_statement=[0], second_statement=[99]),  # no such turn
    ],
}


def test_beam_contradictions_are_read_and_unscorable_ones_dropped(tmp_path: Path) -> None:
    chat = read_beam_chat(_beam_chat(tmp_path / "15", BEAM_TEXTS, BEAM_QUESTIONS))
    assert [(c.first_ids, c.second_ids) for c in chat.contradictions] == [
        (("0",), ("2", "3")),
        (("0",), ()),
        ((), ()),
        (("0",), ("99",)),
    ]
    assert chat.contradictions[0].answer == "Which is it?"
    task = beam_task([chat], source="beam-500k")
    assert [h.id for h in task.haystacks] == ["beam-500k-15"]
    assert task.contradictions == (
        ContradictionQuery("beam-500k-15", "Have I used Flask?", ("0",), ("2", "3"), "held-out"),
    )
    assert task.contradictions_dropped == 3 and task.dropped == 0
    assert [q.question for q in task.asked] == ["What is my budget?", "Have I used Flask?"]


def test_questions_are_tagged_with_their_split() -> None:
    assert question_split("locomo", "26") == "tuning"
    assert question_split("locomo", "47") == "held-out"
    assert question_split("beam-100k", "14") == "tuning"
    assert question_split("beam-100k", "15") == "held-out"
    assert question_split("beam-500k", "8") == "tuning"
    assert question_split("beam-500k", "9") == "held-out"
    assert in_split("beam-500k", "9", "all") and not in_split("beam-500k", "9", "tuning")
    with pytest.raises(BenchError, match="unknown corpus"):
        question_split("beam", "1")
    with pytest.raises(BenchError, match="unknown split"):
        in_split("locomo", "26", "test")


def _locomo_file(path: Path, conversation: str) -> None:
    turns = [
        {"dia_id": "D1:1", "speaker": "Ann", "text": "I adopted a puppy named Biscuit."},
        {"dia_id": "D1:2", "speaker": "Bob", "text": "I painted a sunrise."},
    ]
    qa = [
        {"question": "What is the puppy called?", "answer": "Biscuit", "category": 4,
         "evidence": ["D1:1"]},
        {"question": "What did Bob paint?", "answer": "a sunrise", "category": 1,
         "evidence": ["D1:2"]},
        {"question": "Unanswerable?", "category": 5, "evidence": []},
    ]  # fmt: skip
    raw = {"speaker_a": "Ann", "speaker_b": "Bob", "session_1": turns, "qa": qa}
    raw["session_1_date_time"] = "1:00 pm on 8 May, 2023"
    path.write_text(json.dumps(raw))


def _corpora(root: Path) -> Path:
    """LoCoMo 26 (tuning) and 47 (held-out); BEAM 100K chats 1 (tuning) and 15 (held-out);
    BEAM 500K chat 9 (held-out)."""
    (root / "locomo").mkdir(parents=True)
    for conversation in ("26", "47"):
        _locomo_file(root / "locomo" / f"{conversation}.json", conversation)
    for folder in ("beam-100k/1", "beam-100k/15", "beam-500k/9"):
        _beam_chat(root / folder, BEAM_TEXTS, BEAM_QUESTIONS)
    return root


def test_load_tasks_joins_beam_folders_and_tags_splits(tmp_path: Path) -> None:
    tasks, skipped = load_tasks(_corpora(tmp_path))
    assert not skipped and [t.corpus for t in tasks] == ["locomo", "beam"]
    locomo, beam = tasks
    assert isinstance(beam, BeamTask)
    assert [h.id for h in beam.haystacks] == ["beam-100k-1", "beam-100k-15", "beam-500k-9"]
    assert [(q.haystack, q.split) for q in beam.contradictions] == [
        ("beam-100k-1", "tuning"),
        ("beam-100k-15", "held-out"),
        ("beam-500k-9", "held-out"),
    ]
    assert beam.contradictions_dropped == 9 and len(beam.queries) == 3
    assert [(q.haystack, q.split) for q in locomo.asked] == [
        ("locomo-26", "tuning"),
        ("locomo-26", "tuning"),
        ("locomo-47", "held-out"),
        ("locomo-47", "held-out"),
    ]
    held, _ = load_tasks(tmp_path, split="held-out")  # --split keeps one split's chats
    assert [h.id for t in held for h in t.haystacks] == [
        "locomo-47",
        "beam-100k-15",
        "beam-500k-9",
    ]


def test_report_shows_held_out_first_with_intervals(tmp_path: Path) -> None:
    tasks, _ = load_tasks(_corpora(tmp_path))
    report = run_retrieval(tasks, [Bm25s()] if _available(["bm25s"]) else [MemorySearch()])
    markdown = report.markdown()
    titles = [line for line in markdown.splitlines() if line.startswith("### ")]
    assert [t.split(" (")[0] for t in titles] == [
        "### Held-out questions",
        "### All questions",
        "### Tuning questions",
        "### LoCoMo evidence recall by category",
    ]
    held_out = markdown.split("### All questions")[0]
    assert "beam contradiction-both@10 (n=2)" in held_out  # 100K 15 and 500K 9
    assert "locomo recall@5 (n=2)" in held_out
    assert "held-out R@5" in markdown
    assert re.search(r"\| \d+\.\d% \[\d+\.\d–\d+\.\d\] \|", markdown)  # mean [95% interval]
    data = report.to_json()
    [beam] = [r for r in data["rows"] if r["corpus"] == "beam"]
    assert set(beam["splits"]) == {"all", "held-out", "tuning"}
    both = beam["splits"]["all"]["metrics"]["contradiction-both@10"]
    assert both["n"] == 3 and both["ci"][0] <= both["value"] <= both["ci"][1]
    assert data["tasks"][1]["questions"] == {"all": 6, "tuning": 2, "held-out": 4}
    assert data["tasks"][1]["dropped"] == {"knowledge-update": 0, "contradiction": 9}
    json.dumps(data, allow_nan=False)  # no NaN in the file: absent values are null


def test_report_of_one_split_shows_that_split_only(tmp_path: Path) -> None:
    tasks, _ = load_tasks(_corpora(tmp_path), split="held-out")
    markdown = run_retrieval(tasks, [MemorySearch()]).markdown()
    assert markdown.startswith("### Held-out questions")
    assert "### All questions" not in markdown and "### Tuning questions" not in markdown


# -- bootstrap intervals ----------------------------------------------------------------
def test_bootstrap_interval_of_a_constant_sample_has_zero_width() -> None:
    assert bootstrap_interval([0.25] * 40) == (0.25, 0.25)


def test_bootstrap_interval_contains_the_mean_and_is_reproducible() -> None:
    values = [1.0] * 30 + [0.0] * 20 + [0.5] * 7
    low, high = bootstrap_interval(values)
    mean = sum(values) / len(values)
    assert low < mean < high and high - low < 0.4
    assert bootstrap_interval(values) == (low, high)  # the fixed default seed
    assert bootstrap_interval(values, seed=7) == bootstrap_interval(values, seed=7)
    assert bootstrap_interval(values, seed=7) != (low, high)
    wider = bootstrap_interval(values, confidence=0.99)
    assert wider[0] <= low and wider[1] >= high
    assert all(math.isnan(x) for x in bootstrap_interval([]))


def test_estimates_print_mean_and_interval() -> None:
    estimate = Estimate.of([1.0, 0.0, 1.0, 1.0])
    assert (estimate.value, estimate.n) == (0.75, 4)
    assert format_estimate(Estimate(0.571, 0.5234, 0.618, 9)) == "57.1% [52.3–61.8]"
    assert format_estimate(Estimate.of([])) == "n/a"
    assert Estimate.of([]).to_json() == {"value": None, "ci": [None, None], "n": 0}
