"""Keyword matching shared by the validator and the scorer.

Both sides must agree byte for byte, otherwise the validator could pass a probe that the
scorer then reads differently. A bare substring test scores nonsense ("Nice landscapes"
contains "Iceland", "location" contains "cat", "45000" contains "4500", "四千五" does not
contain "4500"), so matching is boundary-aware:

- text and keyword are normalised alike: NFKC (full/half width), traditional Chinese
  characters written in simplified script ("臺灣" is "台湾"), case folding, thousands
  separators (comma or space) dropped, a currency sign before a figure dropped, trailing
  decimal zeros dropped ("$4,500.00" and "4 500" are "4500"), Chinese numerals and the
  multipliers 千/万/亿/k/w written as digits ("四千五", "4.5k", "25 k" and "1.2w" are plain
  figures), whitespace removed except between two Latin words;
- a keyword that starts (ends) with a Latin letter must not be preceded (followed) by
  one: word boundaries, with a plural "s"/"es" allowed after it;
- a keyword that starts (ends) with a digit must not touch another digit;
- a keyword that is a bare number ("12", "4.5", "$12" once normalised) must also not be
  part of a machine-written time or date ("00:00:12", "12:30", "2026-01-12T00:00:12",
  "01/12/2026") nor of an identifier, a token in which a letter or underscore is glued
  to a digit ("m12", "msg_12", "e12-3", "a1b2"): memory systems render timestamps and
  ids next to what they store, and the figure 12 of a probe is not the second of a
  timestamp. Prose figures still match ("$12", "12 apples", "12kg", "12-15 people",
  "12。", "（12）", "US$12", "12,000" is 12000);
- per probe, ``aliases`` name other spellings of a keyword and ``unless`` names longer
  words that contain it without meaning it ("虾饺" is not "虾").
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache

_SPACE = re.compile(r"\s+")
# "4,500", "4，500", "4 500" (NFKC has turned no-break and thin spaces into spaces)
_DIGIT_GROUP = re.compile(r"(?<=\d)[,， ](?=\d{3}(?!\d))")
_CURRENCY = re.compile(r"[$¥￥€£](?=\s?\d)")
# "US$12": the sign parts a word from a figure, so it leaves a space, not an identifier
_CURRENCY_AFTER_WORD = re.compile(r"(?<=[^\W\d_])[$¥￥€£](?=\d)")
# "4500.00" is 4500 and "4.50" is 4.5; a version "1.0.3" is left alone
_DECIMAL = re.compile(r"(?<![\d.])(\d+)\.(\d+)(?!\.?\d)")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]")
_ZH_DIGITS = {
    "零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4,
    "五": 5, "六": 6, "七": 7, "八": 8, "九": 9,
}  # fmt: skip
_ZH_UNITS = {"十": 10, "百": 100, "千": 1000, "万": 10000}
_ZH_NUMBER = re.compile(r"[零〇一二两三四五六七八九十][零〇一二两三四五六七八九十百千万]*")
# "4.5k", "25 k", "1.2万", "1.2w" (chat shorthand for 万), "3千", "2亿", "2万5" (25000),
# "4千5" (4500), "1万2000" (12000); a "k" or "w" that starts a word ("2 kids") is not one
_MULTIPLIED = re.compile(
    r"(?<![\d.])(\d+(?:\.\d+)?)(?:( ?k|w)(?![a-z])|(千|万|亿))(\d{1,4}(?![\d.]))?"
)
_SCALE = {"k": 1000, "千": 1000, "w": 10000, "万": 10000, "亿": 100_000_000}
# a keyword that is a figure and nothing else, once normalised
_BARE = re.compile(r"\d+(?:\.\d+)?")
# machine-written times and dates (normalised text): "00:00:12", "12:30", "2026-01-12",
# "2026/1/12", "01-12-2026"; the "t" of an ISO datetime parts the two
_STAMP = re.compile(
    r"(?<![\d.])(?:\d{1,2}:\d{2}(?::\d{2})?(?:\.\d+)?"
    r"|\d{4}([-/.])\d{1,2}\1\d{1,2}|\d{1,2}([-/.])\d{1,2}\2\d{4})(?!\d)"
)
# in an identifier a letter or underscore is glued to a digit: "m12", "msg_12", "e12-3"
_ID_GLUE = re.compile(r"(?:[^\W\d_]|_)[-_]?\d")
# currency codes glued to a figure are money, not an identifier ("RMB12", "USD12")
_MONEY_CODES = frozenset(
    {
        "usd", "rmb", "cny", "hkd", "twd", "ntd", "eur", "gbp",
        "jpy", "aud", "cad", "sgd", "nzd", "chf", "krw", "inr",
    }
)  # fmt: skip

Aliases = Mapping[str, Sequence[str]]


def _zh_value(run: str) -> int | None:
    """The value of a run of Chinese numerals; None when it is not a number."""
    if all(ch in _ZH_DIGITS for ch in run):
        return int("".join(str(_ZH_DIGITS[ch]) for ch in run)) if len(run) > 1 else None
    total = section = number = 0
    last_unit = 0
    after_unit = False
    for ch in run:
        if ch in _ZH_DIGITS:
            number = _ZH_DIGITS[ch]
            after_unit = False
            if ch in "零〇":
                last_unit = 0
            continue
        unit = _ZH_UNITS[ch]
        if unit == 10000:
            section += number
            total += section * 10000
            section = number = 0
        else:
            section += (number or 1) * unit
            number = 0
        last_unit, after_unit = unit, True
    if number and last_unit and not after_unit:
        number *= last_unit // 10  # "四千五": the trailing digit is the next unit down
    return total + section + number


def _zh_number(match: re.Match[str]) -> str:
    run = match.group(0)
    if len(run) == 1 and run in _ZH_DIGITS:
        return str(_ZH_DIGITS[run])
    value = _zh_value(run)
    return str(value) if value is not None else run


def _multiplied(match: re.Match[str]) -> str:
    base, unit, rest = match.group(1), (match.group(2) or match.group(3)).strip(), match.group(4)
    scale = _SCALE[unit]
    value = float(base) * scale
    if rest:
        # "2万5" is 25000, "1万2000" is 12000
        value += int(rest) * (scale // 10 if len(rest) == 1 else 1)
    return str(round(value)) if abs(value - round(value)) < 1e-6 else match.group(0)


def _decimal(match: re.Match[str]) -> str:
    whole, fraction = match.group(1), match.group(2).rstrip("0")
    return f"{whole}.{fraction}" if fraction else whole


@lru_cache(maxsize=1)
def _simplified() -> dict[int, str]:
    """Traditional to simplified, one character for one (OpenCC's TSCharacters table).

    Character by character, not phrase by phrase, so that converting a keyword alone and
    converting it inside a longer text agree: matching needs conversion to commute with
    taking a substring.
    """
    from opencc_purepy.dictionary_lib import DictionaryMaxlength

    table, _ = DictionaryMaxlength.get_provider().ts_characters
    return {ord(k): v for k, v in table.items() if len(k) == 1 and k != v}


def simplified(text: str) -> str:
    """The text with traditional Chinese characters written in simplified script."""
    return text.translate(_simplified()) if _CJK.search(text) else text


def _is_latin(ch: str) -> bool:
    return ch.isalpha() and not _CJK.match(ch)


def _is_wordish(ch: str) -> bool:
    return _is_latin(ch) or ch.isdigit()


def _collapse_space(text: str) -> str:
    def keep(match: re.Match[str]) -> str:
        start, end = match.start(), match.end()
        before = text[start - 1] if start else ""
        after = text[end] if end < len(text) else ""
        return " " if before and after and _is_wordish(before) and _is_wordish(after) else ""

    return _SPACE.sub(keep, text)


@lru_cache(maxsize=65536)
def normalize(text: str) -> str:
    """Fold width, script, case, separators, numerals and whitespace (see module doc)."""
    folded = simplified(unicodedata.normalize("NFKC", text)).casefold()
    folded = _CURRENCY_AFTER_WORD.sub(" ", folded)
    folded = _CURRENCY.sub("", folded)
    folded = _DIGIT_GROUP.sub("", folded)
    folded = _DECIMAL.sub(_decimal, folded)
    folded = _ZH_NUMBER.sub(_zh_number, folded)
    folded = _collapse_space(folded.strip())
    return _MULTIPLIED.sub(_multiplied, folded)


def _left_ok(text: str, i: int, first: str) -> bool:
    if i == 0:
        return True
    before = text[i - 1]
    if first.isdigit():
        return not before.isdigit() and not (before == "." and i > 1 and text[i - 2].isdigit())
    if _is_latin(first):
        return not _is_latin(before)
    return True


def _right_ok(text: str, j: int, last: str) -> bool:
    if j >= len(text):
        return True
    after = text[j]
    if last.isdigit():
        return not after.isdigit() and not (
            after == "." and j + 1 < len(text) and text[j + 1].isdigit()
        )
    if _is_latin(last):
        for suffix in ("", "s", "es"):  # plurals: "cats" names the cat
            k = j + len(suffix)
            if text.startswith(suffix, j) and (k >= len(text) or not _is_latin(text[k])):
                return True
        return False
    return True


def _spans(text: str, needle: str) -> Iterable[tuple[int, int]]:
    start = text.find(needle)
    while start >= 0:
        yield start, start + len(needle)
        start = text.find(needle, start + 1)


def figure(keyword: str) -> str | None:
    """The keyword as a bare number once normalised ("$4,500" is "4500"), else None."""
    word = normalize(keyword)
    return word if _BARE.fullmatch(word) else None


@lru_cache(maxsize=4096)
def _stamps(text: str) -> tuple[tuple[int, int], ...]:
    return tuple(m.span() for m in _STAMP.finditer(text))


def _id_char(ch: str) -> bool:
    return _is_wordish(ch) or ch in "_-"


def _in_identifier(text: str, i: int, j: int) -> bool:
    """Whether text[i:j] (a figure) is part of an id-like token (see module doc)."""
    start, end = i, j
    while start and _id_char(text[start - 1]):
        start -= 1
    while end < len(text) and _id_char(text[end]):
        end += 1
    if text[start:i] in _MONEY_CODES:
        start = i
    return _ID_GLUE.search(text, start, end) is not None


def _in_machine_text(text: str, i: int, j: int) -> bool:
    """A figure inside a timestamp, date or id is not the figure a probe names."""
    if any(a <= i and j <= b for a, b in _stamps(text)):
        return True
    return _in_identifier(text, i, j)


@lru_cache(maxsize=65536)
def _matches(text: str, needle: str, unless: tuple[str, ...]) -> bool:
    masks = [span for u in unless if u for span in _spans(text, u)]
    bare = _BARE.fullmatch(needle) is not None
    for i, j in _spans(text, needle):
        if not (_left_ok(text, i, needle[0]) and _right_ok(text, j, needle[-1])):
            continue
        if any(a <= i and j <= b for a, b in masks):
            continue
        if bare and _in_machine_text(text, i, j):
            continue
        return True
    return False


def contains(
    text: str, keyword: str, aliases: Aliases | None = None, unless: Aliases | None = None
) -> bool:
    """True when the keyword, or one of its aliases, occurs in the text at word and
    digit boundaries, and not only inside one of its ``unless`` words."""
    haystack = normalize(text)
    masks = tuple(normalize(u) for u in (unless or {}).get(keyword, ()))
    for spelling in (keyword, *(aliases or {}).get(keyword, ())):
        needle = normalize(spelling)
        if needle and _matches(haystack, needle, masks):
            return True
    return False


def found(
    text: str,
    keywords: Iterable[str],
    aliases: Aliases | None = None,
    unless: Aliases | None = None,
) -> list[str]:
    """The keywords that occur in text, in the order given."""
    return [k for k in keywords if contains(text, k, aliases, unless)]


def risk(keyword: str) -> str | None:
    """Why a keyword is likely to match where it should not (None when it is safe)."""
    word = normalize(keyword)
    if len(word) == 1 and _CJK.match(word):
        return "a single CJK character also matches inside longer words"
    if word.isascii() and word.isalpha() and len(word) <= 4:
        return "a Latin word of 4 letters or fewer is easy to hit by accident"
    if _BARE.fullmatch(word):
        why = "a bare number without a unit matches any figure that happens to equal it"
        if len(word.replace(".", "")) <= 2:
            # hours, minutes, days and message numbers: prose about times and ids
            why += "; one or two digits also name an hour, a day or a message number"
        return why
    return None
