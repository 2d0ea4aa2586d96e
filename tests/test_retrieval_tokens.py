"""The default token counter: CJK-aware, pluggable, and the same numbers branchbench cuts with."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from branchmem.errors import InvalidInput
from branchmem.search.tokens import (
    CjkAwareCounter,
    TokenCounter,
    count_tokens,
    truncate,
)

# Latin, digits, punctuation, spaces/newlines, ideographs, kana, hangul, full-width forms.
MIXED = st.text(
    alphabet=st.sampled_from(
        list("abcXYZ019 .,!?\n\t-'") + list("杭州搬去成都ひらカナ한국어ＡＢ１，。")
    ),
    max_size=80,
)


def test_each_cjk_character_is_one_token() -> None:
    assert count_tokens("搬去杭州") == 4
    assert count_tokens("ひらがな") == 4
    assert count_tokens("항저우") == 3
    assert count_tokens("杭州。") == 3  # CJK punctuation counts too


def test_other_words_cost_one_token_per_started_four_characters() -> None:
    assert count_tokens("move") == 1
    assert count_tokens("moving") == 2
    assert count_tokens("I am moving to Hangzhou") == 1 + 1 + 2 + 1 + 2
    assert count_tokens("") == 0
    assert count_tokens(" \n\t ") == 0


def test_mixed_text_counts_cjk_and_words_separately() -> None:
    assert count_tokens("I live in 杭州 now") == 1 + 1 + 1 + 2 + 1


@given(MIXED, MIXED)
def test_counts_add_up_over_whitespace(a: str, b: str) -> None:
    assert count_tokens(a + "\n" + b) == count_tokens(a) + count_tokens(b)


@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=80))
def test_ascii_text_is_counted_as_the_rule_says(text: str) -> None:
    """ASCII text takes a shortcut (str.split); it must count what the regex rule counts."""
    words = re.findall(r"\S+", text)  # no CJK in ASCII: words are the non-space runs
    assert count_tokens(text) == sum(math.ceil(len(word) / 4) for word in words)


def test_any_object_with_count_is_a_counter() -> None:
    class Characters:
        def count(self, text: str) -> int:
            return len(text)

    assert isinstance(Characters(), TokenCounter)
    assert isinstance(CjkAwareCounter(), TokenCounter)
    assert truncate("abcdefgh", 4, Characters()) == "abc…"


def test_truncate_keeps_text_that_fits() -> None:
    assert truncate("搬去杭州", 4) == "搬去杭州"


def test_truncate_cuts_chinese_per_character() -> None:
    assert truncate("我下个月搬去杭州", 4) == "我下个…"


def test_truncate_returns_nothing_when_no_character_fits() -> None:
    assert truncate("杭州", 1) == ""
    assert truncate("杭州", 0) == ""


@pytest.mark.parametrize("budget", [-1, 1.5, "3", True, None])
def test_truncate_rejects_a_budget_that_is_not_a_token_count(budget: object) -> None:
    with pytest.raises(InvalidInput, match="budget"):
        truncate("text", budget)  # type: ignore[arg-type]


@given(MIXED, st.integers(min_value=0, max_value=40))
def test_truncate_never_exceeds_the_budget_and_keeps_a_prefix(text: str, budget: int) -> None:
    cut = truncate(text, budget)
    assert count_tokens(cut) <= budget
    if cut != text:
        assert cut == "" or (cut.endswith("…") and text.startswith(cut[:-1]))


@given(MIXED, st.integers(min_value=1, max_value=40))
def test_truncate_keeps_the_longest_prefix_that_fits(text: str, budget: int) -> None:
    cut = truncate(text, budget)
    if cut and cut != text:
        kept = len(cut) - 1
        assert count_tokens(text[: kept + 1] + "…") > budget
