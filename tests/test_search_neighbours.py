"""Path neighbours (branchmem.search.neighbours, docs/retrieval.md "Path neighbours").

``with_neighbours`` is compared with the naive reference of tests/test_search.py on random
rankings; ``Memory.search`` is checked on a question and its answer: the answer turn shares
no word with the question yet comes back beside the turn that does, only on the anchor's
path, and a record off the path lends to nothing.
"""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from branchmem import Memory
from branchmem.search import neighbours
from branchmem.search.lexical import LexicalHit
from branchmem.search.neighbours import by_place, with_neighbours
from branchmem.search.voice import ASSISTANT_SHARE
from search_reference import LENDERS, NEIGHBOUR_SHARE, REACH, naive_neighbours


def test_the_reference_uses_the_library_constants() -> None:
    assert (NEIGHBOUR_SHARE, REACH, LENDERS) == (
        neighbours.NEIGHBOUR_SHARE,
        neighbours.REACH,
        neighbours.LENDERS,
    )


@settings(max_examples=400, deadline=None)
@given(st.integers(min_value=0, max_value=10**9), st.integers(min_value=0, max_value=30))
def test_with_neighbours_matches_the_naive_reference(seed: int, size: int) -> None:
    rng = random.Random(seed)
    candidates = [f"r{i:02}" for i in rng.sample(range(40), size)]
    place: dict[str, int | None] = {
        doc_id: None if rng.random() < 0.15 else rng.randrange(10) for doc_id in candidates
    }
    scores = (0.0, 0.5, 1.0, 1.0, 2.5, rng.random())  # ties on purpose
    hits = [LexicalHit(d, rng.choice(scores), f"w{d}") for d in candidates if rng.random() < 0.5]
    hits.sort(key=lambda hit: (-hit.score, hit.doc_id))
    got = with_neighbours([(h.doc_id, h.score, h.why) for h in hits], place, by_place(place))
    want = naive_neighbours(hits, place)
    assert got == [(h.doc_id, h.score, h.why) for h in want]
    old = {h.doc_id for h in hits}
    for doc_id, score, why in got:  # only a placed candidate beside a hit ever gains
        if doc_id not in old or "beside" in why:
            assert place[doc_id] is not None and score > 0


def answered(mem: Memory) -> None:
    """A question turn, its answer (no word in common with the question), and an edit of
    the answer on a sibling branch."""
    mem.add_event("u1", content="Where did you go last summer?")
    mem.add_record("q", sources=["u1"], content="Where did you go last summer?")
    mem.add_event("a1", "u1", role="assistant", content="Lisbon, with my sister.")
    mem.add_record("a", sources=["a1"], content="Lisbon, with my sister.")
    mem.add_event("u2", "a1", content="Nice. And the food?")
    mem.add_record("food", sources=["u2"], content="And the food?")
    mem.add_event("x1", "u1", role="assistant", content="Porto, alone.")  # regenerated
    mem.add_record("x", sources=["x1"], content="Porto, alone.")


def test_the_answer_beside_the_question_comes_back_on_the_path_only() -> None:
    mem = Memory()
    answered(mem)
    hits = mem.search("last summer", "u2")
    assert [h.record.id for h in hits] == ["q", "a"]
    assert hits[1].why.startswith("beside q on the path (+")
    # the answer is the assistant's: it keeps ASSISTANT_SHARE of what it gains (search.voice)
    assert hits[1].score == ASSISTANT_SHARE * (0.3 * hits[0].score)
    # at the regenerated answer, that answer stands beside the question, and nothing else
    assert [h.record.id for h in mem.search("last summer", "x1")] == ["q", "x"]
    # records at the same place (facts of one message) do not lend to each other
    mem.add_record("q2", sources=["u1"], content="trip planning")
    assert "q2" not in [h.record.id for h in mem.search("last summer", "u2")]


def test_an_off_path_record_lends_to_nothing() -> None:
    clean, noisy = Memory(), Memory()
    answered(clean)
    answered(noisy)
    noisy.add_event("x2", "x1", content="summer summer summer")
    noisy.add_record("loud", sources=["x2"], content="last summer, last summer")
    for query in ("last summer", "Lisbon", "food summer"):
        want = [(h.record.id, h.score, h.why) for h in clean.search(query, "u2", k=10)]
        got = [(h.record.id, h.score, h.why) for h in noisy.search(query, "u2", k=10)]
        assert got == want, query


def test_a_kept_view_ranks_the_neighbours_of_its_top_as_the_full_ranking_does() -> None:
    """The kept view's term index scores only the best hits and then the neighbours of the
    lenders among them (_engine/retrieval.py): on a long chain where most records match, the
    second search (indexed) must equal the first (every candidate ranked)."""
    rng = random.Random(7)
    words = ("apple", "pear", "plum", "fig", "kiwi", "lime", "date", "tea")
    mem = Memory()
    mem.add_events(
        {"id": f"e{i}", "parent": None if i == 0 else f"e{i - 1}", "content": "t"}
        for i in range(80)
    )
    mem.add_records(
        {"id": f"r{i:02}", "sources": [f"e{i}"], "content": " ".join(rng.sample(words, 3))}
        for i in range(80)
        if i % 5  # every fifth turn has no record: gaps in the path
    )
    for query in ("apple", "pear plum", "fig kiwi lime", "date tea apple"):
        for k in (1, 3, 10, 25):
            first = [(h.record.id, h.score, h.why) for h in mem.search(query, "e79", k=k)]
            again = [(h.record.id, h.score, h.why) for h in mem.search(query, "e79", k=k)]
            assert again == first, (query, k)
        assert any("beside" in why for _, _, why in first), query
