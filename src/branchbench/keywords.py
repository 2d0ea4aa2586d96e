"""Keyword normalisation shared by the validator and the scorer.

Both sides must agree byte for byte, otherwise the validator could pass a probe that the
scorer then reads differently (full-width digits, a stray space, "Chengdu" vs "chengdu").
"""

import re
import unicodedata
from collections.abc import Iterable
from functools import lru_cache

_SPACE = re.compile(r"\s+")
_DIGIT_GROUP = re.compile(r"(?<=\d)[,，](?=\d{3})")


@lru_cache(maxsize=65536)
def normalize(text: str) -> str:
    """Fold width (NFKC), case and whitespace; drop thousands separators between digits."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    folded = _DIGIT_GROUP.sub("", folded)
    return _SPACE.sub("", folded)


def contains(text: str, keyword: str) -> bool:
    """True when the normalised keyword occurs in the normalised text."""
    needle = normalize(keyword)
    return bool(needle) and needle in normalize(text)


def found(text: str, keywords: Iterable[str]) -> list[str]:
    """The keywords that occur in text, in the order given."""
    haystack = normalize(text)
    return [k for k in keywords if normalize(k) and normalize(k) in haystack]
