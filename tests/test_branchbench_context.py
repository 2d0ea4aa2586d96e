"""Token counting and the budget every system is cut to."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from branchbench.context import Turn, fit, rank_by_question
from branchbench.tokens import count_tokens


def test_one_token_per_chinese_character() -> None:
    assert count_tokens("我下个月搬去杭州") == 8


def test_latin_words_count_about_four_characters_per_token() -> None:
    assert count_tokens("Hangzhou") == 2
    assert count_tokens("a b c") == 3


def test_mixed_text_adds_up() -> None:
    assert count_tokens("预算4500元") == count_tokens("预算") + count_tokens("4500") + 1


texts = st.text(alphabet=st.sampled_from("杭州成都 abcXYZ12，。\n"), max_size=40)


@given(
    memory=st.lists(texts, max_size=8),
    turns=st.lists(texts, max_size=12),
    budget=st.integers(min_value=0, max_value=120),
    language=st.sampled_from(["zh", "en"]),
)
def test_rendered_context_never_exceeds_the_budget(
    memory: list[str], turns: list[str], budget: int, language: str
) -> None:
    transcript = [Turn(f"e{i}", "user" if i % 2 else "assistant", t) for i, t in enumerate(turns)]
    ctx = fit(memory, transcript, budget, language)
    assert ctx.tokens() <= budget


def test_fit_keeps_the_most_recent_turns() -> None:
    turns = [Turn(f"e{i}", "user", "一二三四五") for i in range(10)]
    per_turn = count_tokens("用户: 一二三四五")
    headings = count_tokens("记忆： 对话：")
    ctx = fit([], turns, headings + 4 * per_turn, "zh")
    assert [t.event_id for t in ctx.transcript] == ["e6", "e7", "e8", "e9"]
    assert len(fit([], turns, headings + 4 * per_turn - 1, "zh").transcript) == 3


def test_ranking_puts_the_memory_sharing_words_with_the_question_first() -> None:
    lines = ["养了一只猫", "房租预算每月4500", "下个月搬去杭州"]
    assert rank_by_question(lines, "我的房租预算是多少？")[0] == "房租预算每月4500"
