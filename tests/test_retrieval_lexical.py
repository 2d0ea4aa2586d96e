"""Lexical matching (substring on normalised text, CJK bigrams) and the reference BM25 ranking."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from branchmem.errors import InvalidInput
from branchmem.search.lexical import (
    LexicalHit,
    index_grams,
    matches,
    normalize,
    query_terms,
    rank,
    stem,
)

STORE = {
    "city-1": "用户下个月搬去成都",
    "city-2": "用户下个月搬去杭州",
    "food": "用户喜欢吃火锅",
    "en-city": "The user is moving to Hangzhou next month",
    "en-food": "The user loves hotpot",
}

# Small alphabets so random documents and queries share substrings often.
ZH = st.text(alphabet=st.sampled_from(list("杭州搬去成都用户喜欢")), min_size=0, max_size=12)
EN = st.text(alphabet=st.sampled_from(list("abcdeh ")), min_size=0, max_size=24)
DOCS = st.dictionaries(
    st.text(alphabet="xyz0123", min_size=1, max_size=4), st.one_of(ZH, EN), max_size=12
)
QUERIES = st.one_of(ZH, EN, st.builds(lambda a, b: a + " " + b, ZH, EN))


def test_a_two_character_chinese_query_finds_the_word_inside_a_sentence() -> None:
    assert [hit.doc_id for hit in rank("杭州", STORE)] == ["city-2"]


def test_an_english_term_matches_as_a_substring_ignoring_case() -> None:
    assert [hit.doc_id for hit in rank("hangzhou", STORE)] == ["en-city"]
    assert matches("HANGZHOU", "moving to Hangzhou")
    assert matches("ang", "moving to Hangzhou")  # trigram semantics: any substring


def test_a_chinese_question_matches_through_its_bigrams() -> None:
    assert query_terms("我要搬去杭州") == ("我要", "要搬", "搬去", "去杭", "杭州")
    hits = rank("用户搬去哪个城市？", STORE)
    assert {hit.doc_id for hit in hits} == {"city-1", "city-2", "food"}
    assert hits[0].doc_id in {"city-1", "city-2"}  # 用户 and 搬去 beat 用户 alone


def test_full_width_and_case_fold_before_matching() -> None:
    assert normalize("ＨＡＮＧＺＨＯＵ２０２６") == "hangzhou2026"
    assert matches("hangzhou", "ＨＡＮＧＺＨＯＵ")
    assert matches("Straße", "STRASSE")


def test_short_latin_words_are_not_terms() -> None:
    assert query_terms("is it a go to") == ()
    assert rank("to be", STORE) == []
    assert query_terms("Go to Hangzhou") == ("hangzhou",)


def test_one_cjk_character_is_a_term() -> None:
    assert query_terms("猫") == ("猫",)
    assert query_terms("猫 or 狗") == ("猫", "狗")


def test_stop_words_are_dropped_unless_nothing_else_is_asked() -> None:
    assert query_terms("What is the budget we have?") == ("budget",)
    assert query_terms("what is the") == ("what", "the")
    # a reply repeating "the" no longer outranks the short turn that states the fact
    docs = {
        "fact": "My grocery budget is $550 now",
        "reply": "The plan: the list, the store, the budget, the receipts and the rest of the week",
    }
    assert rank("What is the grocery budget?", docs)[0].doc_id == "fact"


def test_a_word_keeps_its_stem_so_its_other_forms_match() -> None:
    assert query_terms("groceries grocery attended workshops") == ("grocer", "attend", "workshop")
    assert matches("groceries", "a grocery list") and matches("grocery", "bought groceries")
    assert query_terms("many days class") == ("many", "days", "class")  # 3 left, or "ss"
    assert stem("business") == "business" and stem("agreed") == "agre"


def test_punctuation_separates_terms_and_latin_separates_from_cjk() -> None:
    assert query_terms("杭州2026年，move!") == ("杭州", "2026", "年", "move")


def test_why_names_the_matched_terms_with_their_counts() -> None:
    (hit,) = rank("杭州", {"d": "杭州，杭州，还是杭州"})
    assert hit.why == "杭州×3"


def test_more_occurrences_score_higher_at_equal_length() -> None:
    hits = rank("杭州", {"once": "杭州成都成都", "twice": "杭州成都杭州"})
    assert [hit.doc_id for hit in hits] == ["twice", "once"]


def test_a_rarer_term_weighs_more() -> None:
    docs = {"a": "用户 杭州", "b": "用户 成都", "c": "用户 成都"}
    hits = rank("用户 杭州 成都", docs)
    assert hits[0].doc_id == "a"


def test_bm25_score_of_a_single_match_follows_the_formula() -> None:
    (hit,) = rank("杭州", {"a": "搬去杭州", "b": "成都"})
    idf = math.log(1 + (2 - 1 + 0.5) / (1 + 0.5))
    norm = 1 - 0.75 + 0.75 * 4 / 3  # length 4, mean length (4 + 2) / 2
    assert hit.score == pytest.approx(idf * 1 * 2.2 / (1 + 1.2 * norm))


def test_index_grams_hold_every_short_cjk_term_that_matches() -> None:
    grams = index_grams("用户下个月搬去杭州！Moving")
    assert {"杭州", "杭", "搬去", "去杭"} <= grams
    assert "州！" not in grams and "moving" not in grams


@pytest.mark.parametrize("k", [-1, 1.5, True])
def test_k_must_be_a_count(k: object) -> None:
    with pytest.raises(InvalidInput, match="k must be"):
        rank("杭州", STORE, k)  # type: ignore[arg-type]


@given(DOCS, QUERIES, st.integers(min_value=0, max_value=15))
@settings(max_examples=150, deadline=None)
def test_k_results_whenever_k_documents_match(docs: dict[str, str], query: str, k: int) -> None:
    matching = {doc_id for doc_id, text in docs.items() if matches(query, text)}
    hits = rank(query, docs, k)
    assert len(hits) == min(k, len(matching))
    assert {hit.doc_id for hit in hits} <= matching
    assert all(hit.score > 0 for hit in hits)


@given(DOCS, QUERIES)
@settings(max_examples=150, deadline=None)
def test_matching_is_substring_of_a_query_term(docs: dict[str, str], query: str) -> None:
    terms = query_terms(query)
    for doc_id, text in docs.items():
        expected = any(term in normalize(text) for term in terms)
        assert matches(query, text) == expected, doc_id
        for term in terms:  # terms are what the SQL mirror looks up
            assert term == normalize(term) and " " not in term
            assert len(term) >= 3 or all(not ch.isascii() for ch in term)


@given(DOCS, QUERIES, st.randoms(use_true_random=False))
@settings(max_examples=150, deadline=None)
def test_ranking_is_deterministic_and_ignores_input_order(
    docs: dict[str, str], query: str, random: object
) -> None:
    items = list(docs.items())
    random.shuffle(items)  # type: ignore[attr-defined]
    first = rank(query, docs, k=len(docs))
    assert rank(query, dict(items), k=len(docs)) == first
    keys = [(-hit.score, hit.doc_id) for hit in first]
    assert keys == sorted(keys)


@given(DOCS, QUERIES, st.integers(min_value=0, max_value=15))
@settings(max_examples=100, deadline=None)
def test_top_k_is_a_prefix_of_the_full_ranking(docs: dict[str, str], query: str, k: int) -> None:
    assert rank(query, docs, k) == rank(query, docs, len(docs))[:k]


def test_hits_unpack_as_id_score_why() -> None:
    doc_id, score, why = rank("杭州", STORE)[0]
    assert isinstance(rank("杭州", STORE)[0], LexicalHit)
    assert (doc_id, why) == ("city-2", "杭州×1") and score > 0
