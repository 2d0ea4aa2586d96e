"""Lexical matching and BM25 ranking for Chinese and English: the reference every backend mirrors.

Matching is substring matching on a normalised copy of the text, the behaviour of SQLite FTS5's
trigram tokenizer (``hangzhou`` is found in ``moving to Hangzhou``; 杭州 in 搬去杭州), with one
rule added for CJK, where a question has no spaces and most words are two characters long:

1. ``normalize``: NFKC (full-width letters and digits become ASCII, half-width kana full-width)
   then ``str.casefold``. Backends store ``normalize(content)`` and search that column; they
   never fold case or width themselves, so Python decides every folding question once.
2. ``query_terms``: the normalised query is cut into runs of word characters (``\\w``), and
   each run into CJK segments (ideographs, kana, hangul) and other segments.
   - another segment (Latin, digits, ...) of at least ``MIN_WORD`` (3) characters is one term;
     shorter ones (``a``, ``to``, ``is``, ``42``) are dropped: they match nearly everything,
     and no trigram index can look them up;
   - an English stop word (``STOP_WORDS``: "the", "have", "what", ...) is dropped too, unless
     the query has nothing else: a long reply that says "the" 23 times otherwise outranks
     the short turn that states the fact;
   - a word keeps its stem (``stem``): a common suffix is cut while ``MIN_STEM`` (4)
     characters remain, so the stem, matched as a substring, finds the word's other forms
     (``groceries`` and ``grocery`` both become ``grocer``; ``attended`` finds ``attending``);
   - a CJK segment of one or two characters is one term (杭州, 猫);
   - a longer CJK segment contributes its overlapping bigrams (我要搬去杭州 -> 我要, 要搬, 搬去,
     去杭, 杭州), so a question finds a fact that shares a word with it.
   Terms are deduplicated, first occurrence first.
3. A term *matches* a document when it is a substring of the normalised document.
4. Ranking is BM25 (k1 = 1.2, b = 0.75, idf = ln(1 + (N - df + 0.5) / (df + 0.5))) with
   statistics over the *candidate set* (for ``Memory.search``: the records visible at the
   anchor after the kind/key/scope filters), never over the whole store, so a record on
   another branch cannot change a score. tf is ``str.count`` (non-overlapping occurrences),
   document length is ``len(normalize(text))`` in characters. Documents that match no term
   are not results. Ties are broken by document id, ascending.

docs/retrieval.md states what a SQL backend must do to return the same results.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Final, NamedTuple

from ..errors import InvalidInput

MIN_WORD: Final = 3  # shortest non-CJK term: the trigram length
MIN_STEM: Final = 4  # shortest stem a suffix is cut to (a shorter one matches inside too much)
# cut longest first, once; "ss" keeps its s (class, business)
SUFFIXES: Final = ("ies", "ing", "ed", "es", "s", "ly", "y", "e")
# English function words: they match nearly every turn and say nothing of its topic
STOP_WORDS: Final = frozenset(
    """about above after again against all also and any are because been before being below
    between both but can cannot could did does doing down during each ever few for from further
    had has have having her here hers herself him himself his how into its itself just let more
    most myself nor not off once only other ought our ours ourselves out over own same she
    should some such than that the their theirs them themselves then there these they this
    those through too under until very was were what when where which while who whom why will
    with would you your yours yourself yourselves""".split()  # noqa: SIM905
)
K1: Final = 1.2
B: Final = 0.75

# CJK letters (not CJK punctuation, which ``\w`` does not match anyway): kana, bopomofo,
# hangul jamo and syllables, ideographs of the BMP and of the supplementary planes.
CJK_LETTERS: Final = (
    "\u1100-\u11ff\u3040-\u30ff\u3100-\u312f\u3130-\u318f\u31a0-\u31bf\u31f0-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7af\ud7b0-\ud7ff\uf900-\ufaff"
    "\U00020000-\U0003134f"
)
_WORD_RUN: Final = re.compile(r"\w+")
_SEGMENT: Final = re.compile(f"([{CJK_LETTERS}]+)|([^{CJK_LETTERS}]+)")
_CJK_RUN: Final = re.compile(f"[{CJK_LETTERS}]+")


class LexicalHit(NamedTuple):
    """One ranked document: its id, BM25 score (> 0) and the matched terms with their tf."""

    doc_id: str
    score: float
    why: str


@dataclass(frozen=True, slots=True)
class CorpusStats:
    """The two candidate-set aggregates BM25 needs besides per-term document frequency."""

    documents: int
    average_length: float


@lru_cache(maxsize=65536)
def normalize(text: str) -> str:
    """NFKC, then case folding: the text a backend stores and searches."""
    return unicodedata.normalize("NFKC", text).casefold()


def segments(text: str) -> Iterator[tuple[str, bool]]:
    """The normalised text's word-character runs, cut into CJK and other segments:
    ``(segment, is_cjk)`` in text order."""
    return normalized_segments(normalize(text))


def normalized_segments(normalized_text: str) -> Iterator[tuple[str, bool]]:
    """``segments`` of a text already normalised (not normalised again)."""
    for run in _WORD_RUN.findall(normalized_text):
        for cjk, other in _SEGMENT.findall(run):
            yield (cjk, True) if cjk else (other, False)


def is_cjk(term: str) -> bool:
    """Whether a term is made of CJK letters (else of other word characters)."""
    return _CJK_RUN.fullmatch(term) is not None


def stem(word: str) -> str:
    """``word`` without its first suffix of ``SUFFIXES`` that leaves ``MIN_STEM`` characters
    (a normalised non-CJK segment); unchanged when none does."""
    for suffix in SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= MIN_STEM:
            return word if suffix == "s" and word.endswith("ss") else word[: -len(suffix)]
    return word


@lru_cache(maxsize=4096)
def query_terms(query: str) -> tuple[str, ...]:
    """The terms of a query (rule 2 of the module docstring), deduplicated, in query order."""
    terms: dict[str, None] = {}
    stop: dict[str, None] = {}
    for segment, is_cjk in segments(query):
        if not is_cjk:
            if len(segment) < MIN_WORD:
                continue
            if segment in STOP_WORDS:
                stop.setdefault(segment)
            else:
                terms.setdefault(stem(segment))
        elif len(segment) <= 2:
            terms.setdefault(segment)
        else:
            for start in range(len(segment) - 1):
                terms.setdefault(segment[start : start + 2])
    return tuple(terms or stop)


def index_grams(text: str) -> frozenset[str]:
    """Every CJK unigram and bigram of a text, for a backend's gram table.

    A CJK term of one or two characters (the only CJK terms ``query_terms`` makes) is a
    substring of ``normalize(text)`` exactly when it is in this set, because its characters
    are CJK letters and so lie in one CJK run. A backend can index these rows (one per gram)
    instead of scanning with ``instr``; trigram indexes cannot look up two characters.
    """
    grams: set[str] = set()
    for run in _CJK_RUN.findall(normalize(text)):
        grams.update(run)
        grams.update(run[i : i + 2] for i in range(len(run) - 1))
    return frozenset(grams)


def term_frequencies(terms: Iterable[str], normalized_text: str) -> dict[str, int]:
    """Non-overlapping occurrence count of each term that occurs (``str.count``)."""
    found: dict[str, int] = {}
    for term in terms:
        count = normalized_text.count(term)
        if count:
            found[term] = count
    return found


def corpus_stats(normalized_texts: Iterable[str]) -> CorpusStats:
    """Number of candidates and their mean normalised length (0.0 for none)."""
    documents = 0
    total = 0
    for text in normalized_texts:
        documents += 1
        total += len(text)
    return CorpusStats(documents, total / documents if documents else 0.0)


def idf(document_frequency: int, stats: CorpusStats) -> float:
    """BM25's idf, never negative (the Lucene form)."""
    n = stats.documents
    return math.log(1.0 + (n - document_frequency + 0.5) / (document_frequency + 0.5))


def bm25(
    frequencies: Mapping[str, int],
    length: int,
    document_frequencies: Mapping[str, int],
    stats: CorpusStats,
) -> float:
    """The BM25 score of one document; terms are summed in sorted order, so a backend that
    calls this with the same integers gets the same float, bit for bit."""
    norm = 1.0 - B + B * (length / stats.average_length if stats.average_length else 0.0)
    score = 0.0
    for term in sorted(frequencies):
        tf = frequencies[term]
        score += idf(document_frequencies[term], stats) * tf * (K1 + 1.0) / (tf + K1 * norm)
    return score


def check_k(k: object) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise InvalidInput(f"k must be a non-negative int, got {k!r}")
    return k


def describe(terms: Iterable[str], frequencies: Mapping[str, int]) -> str:
    """The ``why`` of a hit: matched terms in query order with their counts."""
    return ", ".join(f"{term}×{frequencies[term]}" for term in terms if term in frequencies)


class Ranking(NamedTuple):
    """Every matching document of one query, best first, with what the newest-first rule
    (``newest.newest_first``) needs: the terms each matching document matches and each
    query term's idf over the candidates."""

    hits: list[LexicalHit]
    matched: dict[str, frozenset[str]]
    weights: dict[str, float]


def ranking(
    query: str, documents: Mapping[str, str], also: Mapping[str, str] | None = None
) -> Ranking:
    """The full ranking ``rank`` cuts (same hits, same order). ``also``: more documents
    scored with the statistics of ``documents`` (N, mean length, document frequencies), so
    they can take part in the ranking without moving any candidate's score (a superseded
    record lending its rank, ``newest.newest_first``); ids in both count as ``documents``."""
    terms = query_terms(query)
    if not terms:
        return Ranking([], {}, {})
    normalized = {doc_id: normalize(text) for doc_id, text in documents.items()}
    stats = corpus_stats(normalized.values())
    found = {doc_id: term_frequencies(terms, text) for doc_id, text in normalized.items()}
    document_frequencies = dict.fromkeys(terms, 0)
    for frequencies in found.values():
        for term in frequencies:
            document_frequencies[term] += 1
    extra = {
        doc_id: normalize(text) for doc_id, text in (also or {}).items() if doc_id not in found
    }
    normalized.update(extra)
    found.update((doc_id, term_frequencies(terms, text)) for doc_id, text in extra.items())
    hits = [
        LexicalHit(
            doc_id,
            bm25(frequencies, len(normalized[doc_id]), document_frequencies, stats),
            describe(terms, frequencies),
        )
        for doc_id, frequencies in found.items()
        if frequencies
    ]
    hits.sort(key=lambda hit: (-hit.score, hit.doc_id))
    return Ranking(
        hits,
        {hit.doc_id: frozenset(found[hit.doc_id]) for hit in hits},
        {term: idf(document_frequencies[term], stats) for term in terms},
    )


def rank(query: str, documents: Mapping[str, str], k: int = 10) -> list[LexicalHit]:
    """Brute-force reference ranking: the top ``k`` matching documents, best first.

    ``documents`` maps id to raw text and is the whole candidate set (it fixes N, the mean
    length and the document frequencies). Returns ``min(k, number of matching documents)``
    hits ordered by score descending, then id ascending; the input order never matters.
    """
    check_k(k)
    if not k:
        return []
    return ranking(query, documents).hits[:k]


def matches(query: str, text: str) -> bool:
    """Does any term of ``query`` occur in ``text``?"""
    haystack = normalize(text)
    return any(term in haystack for term in query_terms(query))
