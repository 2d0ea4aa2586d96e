"""Token counting for context budgets, with a default that needs no tokenizer download.

A budget given in tokens is only fair across languages when one Chinese character is not
counted as a quarter of a token: a four-characters-per-token rule would let a Chinese context
run about four times over the budget an English one gets. The default counter therefore counts
every CJK character (ideograph, kana, hangul, CJK punctuation, full-width form) as one token
and every other run of non-space characters as one token per started four characters. This is
the rule branchbench has always cut contexts with (``branchbench.tokens.count_tokens``); the two
agree on every text, so the benchmark can switch to this module without changing a figure.

Any object with ``count(text) -> int`` is a ``TokenCounter``; plug a real tokenizer with e.g.::

    class TiktokenCounter:
        def __init__(self) -> None:
            self.encoding = tiktoken.get_encoding("cl100k_base")

        def count(self, text: str) -> int:
            return len(self.encoding.encode(text))

A counter must count ``""`` as 0 and should not count a prefix of a text as more than the
text (``truncate`` searches prefixes).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from functools import lru_cache
from typing import Final, Protocol, runtime_checkable

from ..errors import InvalidInput

# The CJK blocks, as one regex character class: CJK radicals and punctuation, kana, bopomofo,
# hangul compatibility jamo, enclosed CJK, extension A, unified ideographs, hangul syllables,
# compatibility ideographs, vertical forms, half- and full-width forms.
CJK_RANGES: Final = (
    "\u2e80-\u2fff\u3000-\u303f\u3040-\u30ff\u3100-\u31ff\u3200-\u4dbf"
    "\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef"
)
_CJK_CHAR: Final = re.compile(f"[{CJK_RANGES}]")
_WORD: Final = re.compile(f"[^\\s{CJK_RANGES}]+")
CHARS_PER_TOKEN: Final = 4


@runtime_checkable
class TokenCounter(Protocol):
    """Anything that says how many tokens a text costs."""

    def count(self, text: str) -> int: ...


@lru_cache(maxsize=65536)
def count_tokens(text: str) -> int:
    """One token per CJK character plus one per started four characters of every other word.

    Words are maximal runs of characters that are neither whitespace nor CJK, so the count is
    additive over whitespace: ``count_tokens(a + " " + b) == count_tokens(a) + count_tokens(b)``.
    """
    if text.isascii():  # no CJK: the words are what str.split finds (same whitespace as \s)
        tokens = 0
        for word in text.split():
            tokens += (len(word) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN
        return tokens
    words = sum(math.ceil(len(word) / CHARS_PER_TOKEN) for word in _WORD.findall(text))
    return len(_CJK_CHAR.findall(text)) + words


# the same count without the cache, for text counted once (an event's count kept at write)
count_tokens_uncached: Final[Callable[[str], int]] = count_tokens.__wrapped__


class CjkAwareCounter:
    """The default ``TokenCounter``: ``count_tokens`` as an object (no download, no state)."""

    # count(a + whitespace + b) == count(a) + count(b): a context's pieces priced one by one
    # add up to the count of the text they render to, so it need not be counted again
    additive = True

    # count(text): the cached function itself, not a method calling it (a context prices
    # hundreds of lines)
    count = staticmethod(count_tokens)


DEFAULT_COUNTER: Final[TokenCounter] = CjkAwareCounter()


def check_budget(budget: object) -> int:
    """A budget is a non-negative int of tokens; anything else is an ``InvalidInput``."""
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
        raise InvalidInput(f"budget must be a non-negative number of tokens, got {budget!r}")
    return budget


def truncate(
    text: str,
    budget: int,
    counter: TokenCounter = DEFAULT_COUNTER,
    *,
    ellipsis: str = "…",
) -> str:
    """The longest prefix of ``text`` that, with ``ellipsis`` appended when cut, fits ``budget``.

    ``text`` is returned unchanged when it fits; ``""`` when not one character of it does. The
    result always fits: only measured candidates are returned, whatever the counter (a binary
    search over prefix lengths, exact for counters that never count a prefix above its text).
    """
    check_budget(budget)
    if counter.count(text) <= budget:
        return text
    low, high = 0, len(text)  # invariant: the prefix of length `low` (+ ellipsis) fits
    if counter.count(ellipsis) > budget:
        return ""
    while low < high:
        middle = (low + high + 1) // 2
        if counter.count(text[:middle] + ellipsis) <= budget:
            low = middle
        else:
            high = middle - 1
    return text[:low] + ellipsis if low else ""
