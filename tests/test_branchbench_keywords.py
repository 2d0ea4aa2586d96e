"""Boundary-aware keyword matching, table-driven, through the scorer in both directions.

A false leak: a correct answer scored as leaking because a forbidden keyword matched
inside another word. A false correct: a wrong answer scored as correct because the
answer keyword matched inside another word or number.
"""

from __future__ import annotations

from typing import Any

import pytest

from branchbench.keywords import contains, figure, normalize, risk
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
    # separators, units, magnitudes, script: the plain form is the same figure or word
    ("Rent is $4,500.00 a month", "4500", True, {}, {}),
    ("Rent is 4 500 a month", "4500", True, {}, {}),
    ("Salary 25 k", "25000", True, {}, {}),
    ("预算1.2w", "12000", True, {}, {}),
    ("预算1.2萬", "1.2万", True, {}, {}),
    ("我們搬去臺灣", "台湾", True, {}, {}),
    ("我们搬去台湾", "臺灣", True, {}, {}),
    ("對蝦過敏", "虾", True, {}, {"虾": ["虾饺"]}),
    # ...and a different figure is not it
    ("Rent is $4,500.50 a month", "4500", False, {}, {}),
    ("Rent is 45 000 a month", "4500", False, {}, {}),
    ("We have 2 kids", "2000", False, {}, {}),
    ("預算1.2萬", "1200", False, {}, {}),
    ("推薦這家的蝦餃", "虾", False, {}, {"虾": ["虾饺"]}),
    ("Release 1.0.3 is out", "1.3", False, {}, {}),
]

# A bare number is not the second of a timestamp nor the number in an id: a memory system
# rendering "2026-01-01 00:00:12" or "m12" next to a correct memory did not leak "12".
# (text, bare number, matches?); every time, date and id row matched before.
MACHINE_TEXT: list[tuple[str, str, bool]] = [
    ("- 2026-01-01 00:00:12 budget is 4000", "12", False),
    ("updated 00:00:12", "12", False),
    ("stored at 2026-01-01T00:00:12Z", "12", False),
    ("meet at 12:30", "12", False),
    ("meet at 12:30", "30", False),
    ("dated 2026-01-12", "12", False),
    ("dated 2026-01-12", "2026", False),
    ("due 01/12/2026", "12", False),
    ("see m12", "12", False),
    ("event e12-3 says so", "12", False),
    ("event e12-3 says so", "3", False),
    ("msg_12 stored", "12", False),
    ("msg-12 stored", "12", False),
    ("record a1b2", "2", False),
    ("v4.5 released", "4.5", False),
    # prose figures match as before
    ("Budget: $12", "12", True),
    ("12 apples", "12", True),
    ("买了12。", "12", True),
    ("（12）", "12", True),
    ("预算：12", "12", True),
    ("It costs US$12", "12", True),
    ("It costs RMB12", "12", True),
    ("a 12kg bag", "12", True),
    ("12-15 people", "12", True),
    ("12-15 people", "15", True),
    ("a 12-hour shift", "12", True),
    ("十二个人", "12", True),
    ("4.5 stars", "4.5", True),
    ("May 12, 2026", "12", True),
    ("1月12日", "12", True),
    ("12,000 yuan", "12", False),
    ("12,000 yuan", "12000", True),
    # a keyword that is not a bare number keeps the old rule
    ("meet at 12:30", "12:30", True),
    ("dated 2026-01-12", "2026-01-12", True),
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
    ("$4,500.00", "4500", True, {}, {}),
    ("4 500 yuan", "4500", True, {}, {}),
    ("25 k", "25000", True, {}, {}),
    ("1.2w", "12000", True, {}, {}),
    ("1.2万", "1.2w", True, {}, {}),
    ("住在臺北", "台北", True, {}, {}),
    ("$4,500.50", "4500", False, {}, {}),
    ("25 k", "2500", False, {}, {}),
    ("1.2w", "1200", False, {}, {}),
    ("4 5000", "45000", False, {}, {}),
    ("住在臺南", "台北", False, {}, {}),
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


@pytest.mark.parametrize(("text", "keyword", "matches"), MACHINE_TEXT)
def test_bare_numbers_do_not_match_inside_times_dates_or_ids(
    text: str, keyword: str, matches: bool
) -> None:
    assert contains(text, keyword) is matches
    leak = _row("leak", text, ["unrelated-answer"], [keyword])
    assert answer_rates([leak])["leak_rate"] == (1.0 if matches else 0.0)
    retain = _row("retain", text, [keyword], [])
    assert answer_rates([retain])["correct_rate"] == (1.0 if matches else 0.0)


def test_an_alias_that_is_a_bare_number_follows_the_same_rule() -> None:
    aliases = {"twelve": ["12"]}
    assert not contains("saved 00:00:12", "twelve", aliases)
    assert contains("twelve apples", "twelve", aliases)
    assert contains("12 apples", "twelve", aliases)


def test_figure_and_risk_name_bare_numbers() -> None:
    assert figure("$4,500") == "4500" and figure("4.50") == "4.5" and figure("12") == "12"
    assert figure("12 apples") is None and figure("12:30") is None
    assert "hour" in (risk("12") or "") and "hour" in (risk("4.5") or "")
    assert "hour" not in (risk("4500") or "x") and risk("4500")
    assert risk("12 apples") is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [("四千五", "4500"), ("一万二", "12000"), ("三百五", "350"), ("一百零五", "105"),
     ("二十", "20"), ("十五", "15"), ("二零二四年", "2024年"), ("4.5k", "4500"),
     ("1万2000", "12000"), ("2万5", "25000"), ("3千", "3000"), ("5kg", "5kg"),
     ("Ｃｈｅｎｇ du", "cheng du"), ("成 都", "成都"), ("$4,500.00", "4500"),
     ("4 500", "4500"), ("4\u00a0500", "4500"), ("25 k", "25000"), ("1.2万", "12000"),
     ("1.2w", "12000"), ("1.2萬", "12000"), ("3亿", "300000000"), ("4.50", "4.5"),
     ("1.0.3", "1.0.3"), ("2 kids", "2 kids"), ("100 km", "100 km"), ("臺灣", "台湾"),
     ("¥4500元", "4500元"), ("US$12", "us 12"), ("HK$ 12", "hk 12")],
)  # fmt: skip
def test_numerals_and_multipliers_are_written_as_digits(text: str, expected: str) -> None:
    assert normalize(text) == expected
