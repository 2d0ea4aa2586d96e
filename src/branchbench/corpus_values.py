"""Values found in corpus text: their kind, where they occur, how they are swapped.

The corpus splits fork a real turn at an annotated value (a corpus question's gold
answer, BEAM's updated value) and give the sibling branches other values *of the same
kind*, each found elsewhere in the corpus. "Kind" is what lets one value stand in for
another in a sentence: a dollar amount for a dollar amount, "3 years" for "10 years", a
date written the same way, a place for a place, one book's title for another's (LoCoMo:
answers to questions asking the same thing, "What book ...", "Which hobby ...").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip
_MONTH = "|".join(MONTHS)
_NUMBER = r"\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?"
DATE = re.compile(
    rf"\b(?:{_MONTH}) \d{{1,2}}(?:, \d{{4}})?\b|\b\d{{1,2}} (?:{_MONTH})(?: \d{{4}})?\b"
)
TIME = re.compile(r"\b\d{1,2}(?::\d{2})? ?[AP]M\b")
AMOUNT = re.compile(rf"(?<![\w.,$])\$?(?:\d+-\d+|{_NUMBER})(?:%|ms\b|k\b)?(?: [a-z]+)?")
PROPER = re.compile(r"[A-Z][\w'-]*(?: [A-Z][\w'-]*)*")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


@dataclass(frozen=True)
class Value:
    """A value found in a turn: its text as written and its kind (``number:<unit>``,
    ``date:<shape>``, ``time``, ``place``, ``person``, ``what:<noun>`` ...)."""

    text: str
    kind: str


def _boundary(value: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w$]){re.escape(value)}(?![\w%])")


def occurs(text: str, value: str) -> bool:
    """The value occurs in the text as written (not inside a longer word or number)."""
    return _boundary(value).search(text) is not None


def substitute(text: str, value: str, replacement: str) -> str:
    """Every occurrence of the value replaced (same boundaries as ``occurs``)."""
    return _boundary(value).sub(lambda _: replacement, text)


def number_unit(text: str) -> str:
    """A number's affixes and unit word with the figure as ``#`` ("$#", "# years", "#%"),
    so values of one quantity share it."""
    return re.sub(rf"\d+-\d+|{_NUMBER}", "#", text)


def date_shape(text: str) -> str:
    """A date with its day, year and month masked ("# M, #"): dates written alike."""
    masked = re.sub(r"\d+", "#", text)
    return re.sub(_MONTH, "M", masked)


def typed_values(text: str) -> list[Value]:
    """Every date, time and number (with a following word as its unit) in the text, in
    order; a bare number needs three digits (a "2" is too common to be a value)."""
    out: list[tuple[int, Value]] = []
    taken: list[tuple[int, int]] = []
    for kind, pattern in (("date", DATE), ("time", TIME), ("number", AMOUNT)):
        for m in pattern.finditer(text):
            if any(a < m.end() and m.start() < b for a, b in taken):
                continue
            taken.append((m.start(), m.end()))
            found = m.group(0)
            if kind == "number" and re.match(r"\$|[\d,.-]+(?:%|ms\b|k\b)", found):
                found = found.split(" ", 1)[0]  # "$65", "78%": the affix is the unit
            value = typed(found)
            if value is not None:
                out.append((m.start(), value))
    return [v for _, v in sorted(out, key=lambda x: x[0])]


def typed(text: str) -> Value | None:
    """``text`` as a date, time or number value when it is one whole (None otherwise;
    a bare figure of one or two digits is not a value)."""
    if DATE.fullmatch(text):
        return Value(text, f"date:{date_shape(text)}")
    if TIME.fullmatch(text):
        return Value(text, "time")
    if AMOUNT.fullmatch(text):
        if re.fullmatch(r"\d{1,2}(?:\.\d+)?", text):
            return None
        return Value(text, f"number:{number_unit(text)}")
    return None


def sentence(text: str, value: str) -> str:
    """The sentence of ``text`` holding ``value`` (the fact an extractor would keep)."""
    for part in _SENTENCE_END.split(text):
        if occurs(part, value):
            return part.strip()
    return text.strip()


def cut(text: str, limit: int, keep: str = "") -> str:
    """At most ``limit`` characters at a word boundary, but never before the end of the
    sentence holding ``keep``."""
    if keep:
        held = sentence(text, keep)
        end = text.find(held)
        if end >= 0:
            limit = max(limit, end + len(held))
    if len(text) <= limit:
        return text
    head = text[:limit]
    return (head.rsplit(" ", 1)[0] if " " in head else head).rstrip() + " …"


def cloze(text: str, value: str) -> str:
    """A question asking for ``value`` back from the sentence that states it, the value
    blanked out: for a fact the corpus annotates but asks no question about."""
    held = substitute(sentence(text, value), value, "___")
    if len(held) > 240:
        at = held.find("___")
        start = max(0, at - 120)
        held = ("… " if start else "") + held[start : start + 240].strip() + " …"
    return f'Fill in the blank from our conversation: "{held}"'
