"""``search.terms.TermIndex`` against ``lexical.ranking``, the reference it must equal (cut at
``top``, and grown by ``with_hits``): the same
hits (ids, the same float scores, the same ``why``), the same matched terms and weights, on
random texts in the scripts and foldings that matter (ASCII words, full-width letters, CJK
runs with repeated characters, digits, underscores, case that folds to more letters)."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from branchmem.search.lexical import Ranking, ranking
from branchmem.search.terms import TermIndex

PIECES = [
    "hangzhou", "Hangzhou", "ＨＡＮＧＺＨＯＵ", "zhou", "chengdu", "ang", "moving", "mov",
    "杭州", "杭杭州州", "搬去杭州", "州", "成都", "都都都", "我要", "ß", "STRASSE", "strasse",
    "42", "4242", "x_y", "_", "redis", "150mb", "ｶﾞ", "ガ", "한국", "国国", "a", "to", "é",
    "e\u0301", " ", " ", ", ", "。", "-", "\n",
]  # fmt: skip


def text(rng: random.Random, pieces: int) -> str:
    return "".join(rng.choice(PIECES) for _ in range(pieces))


def top_of(full: Ranking, candidates: set[str], top: int) -> list[tuple[str, float, str]]:
    """The first ``top`` candidate hits of the full ranking, and every other hit."""
    kept: list[tuple[str, float, str]] = []
    taken = 0
    for hit in full.hits:
        if hit.doc_id in candidates:
            if taken == top:
                continue
            taken += 1
        kept.append(tuple(hit))  # type: ignore[arg-type]
    return kept


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), size=st.integers(0, 30), top=st.integers(0, 12))
def test_term_index_ranks_as_the_reference(seed: int, size: int, top: int) -> None:
    rng = random.Random(seed)
    documents = {f"d{i}": text(rng, rng.randint(0, 12)) for i in range(size)}
    also = {f"s{i}": text(rng, rng.randint(0, 12)) for i in range(rng.randint(0, 4))}
    if documents and rng.random() < 0.5:
        also[rng.choice(list(documents))] = "a candidate's id in also counts as the candidate"
    index = TermIndex(documents)
    for _ in range(5):
        query = text(rng, rng.randint(1, 5))
        full = ranking(query, documents, also)
        whole = index.ranking(query, also)
        assert whole.hits == full.hits, query
        assert whole.matched == full.matched
        assert whole.weights == full.weights
        wanted = set(rng.sample(sorted(documents), min(3, len(documents))))
        cut = index.ranking(query, also, top=top, matched_for=wanted)
        assert [tuple(h) for h in cut.hits] == top_of(full, set(documents), top), query
        for doc_id, terms in cut.matched.items():
            assert full.matched[doc_id] == terms
        for doc_id in wanted:
            assert cut.matched.get(doc_id) == full.matched.get(doc_id)
        assert cut.weights == full.weights
        more = set(rng.sample(sorted(documents), min(4, len(documents))))
        grown = index.with_hits(cut, query, more)
        first = {h[0] for h in top_of(full, set(documents), top)} | more
        first |= also.keys() - documents.keys()
        assert grown.hits == [h for h in full.hits if h.doc_id in first]
        for doc_id, terms in grown.matched.items():
            assert full.matched[doc_id] == terms


def test_an_empty_index_and_a_query_without_terms() -> None:
    assert TermIndex({}).ranking("hangzhou") == ranking("hangzhou", {})
    assert TermIndex({"a": "hangzhou"}).ranking("a to") == Ranking([], {}, {})
    assert [h.doc_id for h in TermIndex({"a": "x", "b": "去杭州"}).ranking("杭州").hits] == ["b"]


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), size=st.integers(0, 20), steps=st.integers(1, 4))
def test_an_index_grown_by_add_ranks_as_one_built_at_once(seed: int, size: int, steps: int) -> None:
    """A kept view's index takes the records a write added (``TermIndex.add``): its hits
    are the reference's over all of them, queried before and after each addition."""
    rng = random.Random(seed)
    documents = {f"d{i}": text(rng, rng.randint(0, 12)) for i in range(size)}
    index = TermIndex(documents)
    for step in range(steps):
        asked = text(rng, rng.randint(1, 3))
        index.ranking(asked)  # asked before and after: its kept scores must not survive
        added = {f"n{step}_{i}": text(rng, rng.randint(1, 12)) for i in range(rng.randint(0, 3))}
        index.add(added)
        documents |= added
        for query in (asked, *(text(rng, rng.randint(1, 5)) for _ in range(3))):
            assert index.ranking(query) == ranking(query, documents), query
        assert len(index) == len(documents)
