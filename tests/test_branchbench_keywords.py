"""Boundary-aware keyword matching, table-driven, through the scorer in both directions.

A false leak: a correct answer scored as leaking because a forbidden keyword matched
inside another word. A false correct: a wrong answer scored as correct because the
answer keyword matched inside another word or number.
"""

from __future__ import annotations

from typing import Any

import pytest

from branchbench.keywords import contains, normalize
from branchbench.score import answer_rates

Aliases = dict[str, list[str]]

# (answer text, forbidden keyword, leaks?, aliases, unless)
FALSE_LEAKS: list[tuple[str, str, bool, Aliases, Aliases]] = [
    ("Nice landscapes all the way down the coast", "Iceland", False, {}, {}),
    ("Your location is saved", "cat", False, {}, {}),
    ("Sixteen people are coming", "six", False, {}, {}),
    ("月薪45000", "4500", False, {}, {}),
    ("推荐这家的虾饺", "虾", False, {}, {"虾": ["虾饺"]}),
    ("Version 4.5 is out", "5", False, {}, {}),
    ("We stay in Iceland", "Iceland", True, {}, {}),
    ("Two cats at home", "cat", True, {}, {}),
    ("月薪4500", "4500", True, {}, {}),
    ("对虾过敏，别点虾饺", "虾", True, {}, {"虾": ["虾饺"]}),
    ("Budget: 4,500 yuan", "4500", True, {}, {}),
]

# (answer text, answer keyword, correct?, aliases, unless)
FALSE_CORRECTS: list[tuple[str, str, bool, Aliases, Aliases]] = [
    ("Sixteen", "six", False, {}, {}),
    ("It is 45000", "4500", False, {}, {}),
    ("Your location", "cat", False, {}, {}),
    ("Nice landscapes", "Iceland", False, {}, {}),
    ("虾饺", "虾", False, {}, {"虾": ["虾饺"]}),
    ("房租四千五", "4500", True, {}, {}),
    ("房租四千五百块", "4500", True, {}, {}),
    ("about 4.5k a month", "4500", True, {}, {}),
    ("预算一万二", "12000", True, {}, {}),
    ("预算1.2万", "12000", True, {}, {}),
    ("NYC in June", "New York", True, {"New York": ["NYC"]}, {}),
    ("Six people", "six", True, {}, {}),
]


def _row(kind: str, text: str, answer: list[str], forbidden: list[str], **extra: Any) -> Any:
    return {"type": kind, "text": text, "answer": answer, "forbidden": forbidden, **extra}


@pytest.mark.parametrize(("text", "keyword", "leaks", "aliases", "unless"), FALSE_LEAKS)
def test_no_false_leak_on_a_correct_answer(
    text: str, keyword: str, leaks: bool, aliases: Aliases, unless: Aliases
) -> None:
    assert contains(text, keyword, aliases, unless) is leaks
    row = _row("leak", text, ["unrelated-answer"], [keyword], aliases=aliases, unless=unless)
    assert answer_rates([row])["leak_rate"] == (1.0 if leaks else 0.0)


@pytest.mark.parametrize(("text", "keyword", "correct", "aliases", "unless"), FALSE_CORRECTS)
def test_no_false_correct_on_a_wrong_answer(
    text: str, keyword: str, correct: bool, aliases: Aliases, unless: Aliases
) -> None:
    assert contains(text, keyword, aliases, unless) is correct
    row = _row("retain", text, [keyword], [], aliases=aliases, unless=unless)
    assert answer_rates([row])["correct_rate"] == (1.0 if correct else 0.0)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("四千五", "4500"), ("一万二", "12000"), ("三百五", "350"), ("一百零五", "105"),
     ("二十", "20"), ("十五", "15"), ("二零二四年", "2024年"), ("4.5k", "4500"),
     ("1万2000", "12000"), ("2万5", "25000"), ("3千", "3000"), ("5kg", "5kg"),
     ("Ｃｈｅｎｇ du", "cheng du"), ("成 都", "成都")],
)  # fmt: skip
def test_numerals_and_multipliers_are_written_as_digits(text: str, expected: str) -> None:
    assert normalize(text) == expected
