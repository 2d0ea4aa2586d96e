"""A term index over one fixed candidate set: ``lexical.ranking`` for many queries, without
reading every candidate's text per query.

``lexical`` matches a term as a substring of the normalised text. A term's characters are word
characters of one class (CJK or not, ``lexical.query_terms``), so each occurrence lies inside
one segment of that class (``lexical.segments``) and the count over the text is the sum of the
counts over its segments. The index therefore keeps, per candidate:

- every non-CJK segment (a "word") with how often it occurs, and a trigram map over the
  distinct words, so a term of three or more characters finds the words containing it;
- every CJK unigram and bigram with its non-overlapping count (``str.count``), the only CJK
  terms a query makes.

Scores are the same floats as ``lexical.bm25`` (same statistics, same operations in the same
order), ties broken by id, so ``TermIndex.ranking`` returns ``lexical.ranking``'s hits
(tests/test_search_terms.py compares them on random texts).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Collection, Mapping
from typing import Final

from .lexical import (
    K1,
    B,
    CorpusStats,
    LexicalHit,
    Ranking,
    bm25,
    describe,
    idf,
    is_cjk,
    normalize,
    normalized_segments,
    query_terms,
    term_frequencies,
)

_GRAM: Final = 3  # the trigram map's gram length: the shortest non-CJK term
_K1_PLUS_1: Final = K1 + 1.0


class _Scored:
    """One query's postings, idfs and scores over the index, its cut top lists, and each
    hit built so far (a search ranks one query more than once: path neighbours, voices)."""

    __slots__ = ("built", "postings", "scores", "terms", "tops", "weights")

    def __init__(
        self,
        terms: tuple[str, ...],
        scored: tuple[dict[str, dict[int, int]], dict[str, float], dict[int, float]],
    ) -> None:
        self.terms = terms
        self.postings, self.weights, self.scores = scored
        self.tops: dict[int, list[tuple[int, float]]] = {}
        self.built: dict[int, tuple[LexicalHit, frozenset[str]]] = {}


class TermIndex:
    """Postings of one candidate set (id -> text), built once and read by many queries."""

    __slots__ = (
        "_bent",
        "_grams",
        "_ids",
        "_last",
        "_lengths",
        "_numbers",
        "_stats",
        "_trigrams",
        "_words",
    )

    def __init__(self, documents: Mapping[str, str]) -> None:
        self._ids: list[str] = []
        self._lengths: list[int] = []
        self._numbers: dict[str, int] = {}
        self._words: dict[str, dict[int, int]] = {}
        self._grams: dict[str, dict[int, int]] = {}
        self._trigrams: dict[str, list[str]] = {}
        self.add(documents)

    def add(self, documents: Mapping[str, str]) -> None:
        """Index more candidates (ids not indexed yet): the statistics then cover them too,
        as if the index had been built over all of them at once (the same floats)."""
        ids, lengths, words, grams = self._ids, self._lengths, self._words, self._grams
        new_words: list[str] = []
        for doc_id, text in documents.items():
            number = len(ids)
            ids.append(doc_id)
            self._numbers[doc_id] = number
            normalized = normalize(text)
            lengths.append(len(normalized))
            for segment, cjk in normalized_segments(normalized):
                if not cjk:
                    postings = words.get(segment)
                    if postings is None:
                        postings = words[segment] = {}
                        new_words.append(segment)
                    postings[number] = postings.get(number, 0) + 1
                    continue
                pairs = (segment[i : i + 2] for i in range(len(segment) - 1))
                for gram in {*segment, *pairs}:
                    postings = grams.setdefault(gram, {})
                    postings[number] = postings.get(number, 0) + segment.count(gram)
        total = sum(lengths)
        # as ``lexical.corpus_stats`` computes them, so every float below is the same
        self._stats = CorpusStats(len(ids), total / len(ids) if ids else 0.0)
        average = self._stats.average_length
        # bm25's length term, as it computes it: K1 times its norm; computed once per
        # distinct length (every candidate's term moves with the mean when one is added)
        term = {n: K1 * (1.0 - B + B * (n / average if average else 0.0)) for n in set(lengths)}
        self._bent = list(map(term.__getitem__, lengths))
        trigrams = self._trigrams
        for word in new_words:
            for gram in {word[i : i + _GRAM] for i in range(len(word) - _GRAM + 1)}:
                trigrams.setdefault(gram, []).append(word)
        # the last query's scores: a search may rank one query twice (path neighbours)
        self._last = _Scored((), ({}, {}, {}))

    @property
    def stats(self) -> CorpusStats:
        return self._stats

    def __len__(self) -> int:
        return len(self._ids)

    def _scored(
        self, terms: tuple[str, ...]
    ) -> tuple[dict[str, dict[int, int]], dict[str, float], dict[int, float]]:
        """Each term's postings and idf, and every matching candidate's BM25 score."""
        postings = {term: self.postings(term) for term in terms}
        weights = {term: idf(len(postings[term]), self._stats) for term in terms}
        bent = self._bent
        first, *others = sorted(terms)  # bm25's order of addition, per document
        weight = weights[first]
        # 0.0 + x is x: the first term's scores need no lookup
        scores = {
            number: weight * tf * _K1_PLUS_1 / (tf + bent[number])
            for number, tf in postings[first].items()
        }
        for term in others:
            weight = weights[term]
            for number, tf in postings[term].items():
                scores[number] = scores.get(number, 0.0) + weight * tf * _K1_PLUS_1 / (
                    tf + bent[number]
                )
        return postings, weights, scores

    def postings(self, term: str) -> dict[int, int]:
        """Candidate number -> occurrences of ``term`` (a query term), for those it occurs in."""
        if is_cjk(term):
            return self._grams.get(term, {}) if len(term) <= 2 else self._scan(term)
        if len(term) < _GRAM:
            return self._scan(term)
        rarest = min(
            (self._trigrams.get(term[i : i + _GRAM], ()) for i in range(len(term) - _GRAM + 1)),
            key=len,
        )
        found: dict[int, int] = {}
        for word in rarest:
            times = word.count(term)
            if times:
                for number, count in self._words[word].items():
                    found[number] = found.get(number, 0) + times * count
        return found

    def _scan(self, term: str) -> dict[int, int]:
        """A term the index has no entry shape for (query_terms makes none): every word."""
        found: dict[int, int] = {}
        for word, postings in self._words.items():
            times = word.count(term)
            if times:
                for number, count in postings.items():
                    found[number] = found.get(number, 0) + times * count
        return found

    def ranking(
        self,
        query: str,
        also: Mapping[str, str] | None = None,
        *,
        top: int | None = None,
        matched_for: Collection[str] = (),
    ) -> Ranking:
        """``lexical.ranking(query, documents, also)`` over the indexed documents. ``top``:
        only the best ``top`` candidates' hits (every hit of ``also`` is kept), as the first
        ``top`` of the full ranking's candidates; ``matched`` then covers those hits and the
        ids in ``matched_for``."""
        terms = query_terms(query)
        if not terms:
            return Ranking([], {}, {})
        stats = self._stats
        if self._last.terms != terms:
            self._last = _Scored(terms, self._scored(terms))
        postings, weights, scores = self._last.postings, self._last.weights, self._last.scores
        frequencies = {term: len(found) for term, found in postings.items()}
        ids = self._ids
        if top is None or top >= len(scores):
            best = sorted(scores.items(), key=lambda item: (-item[1], ids[item[0]]))
        else:
            if top not in self._last.tops:
                # every one of the first ``top`` scores at least the top-th best score
                least = heapq.nlargest(top, scores.values())[-1] if top > 0 else math.inf
                self._last.tops[top] = sorted(
                    ((number, score) for number, score in scores.items() if score >= least),
                    key=lambda item: (-item[1], ids[item[0]]),
                )[:top]
            best = self._last.tops[top]
        numbers = self._numbers
        hits: list[LexicalHit] = []
        matched: dict[str, frozenset[str]] = {}
        for number, _ in best:
            hit, terms_of = self._hit(number)
            hits.append(hit)
            matched[ids[number]] = terms_of
        for doc_id in matched_for:
            number_of = numbers.get(doc_id)
            if number_of is not None and doc_id not in matched:
                found = self._found_in(number_of)
                if found:
                    matched[doc_id] = frozenset(found)
        extra = False
        for doc_id, text in (also or {}).items():
            if doc_id in numbers:  # a candidate counts as one (``lexical.ranking``)
                continue
            normalized = normalize(text)
            found = term_frequencies(terms, normalized)
            if found:
                hits.append(
                    LexicalHit(doc_id, bm25(found, len(normalized), frequencies, stats),
                               describe(terms, found))
                )  # fmt: skip
                matched[doc_id] = frozenset(found)
                extra = True
        if extra:
            hits.sort(key=lambda hit: (-hit.score, hit.doc_id))
        return Ranking(hits, matched, weights)

    def with_hits(self, ranking: Ranking, query: str, doc_ids: Collection[str]) -> Ranking:
        """``ranking`` (this index's for ``query``, cut at some ``top``) with the hits of the
        candidates ``doc_ids`` too, each in its place: what ``ranking(query, top=...)`` would
        give had those candidates been among the first."""
        terms = query_terms(query)
        if not terms:
            return ranking
        if self._last.terms != terms:
            self._last = _Scored(terms, self._scored(terms))
        scores, numbers = self._last.scores, self._numbers
        hits, matched = list(ranking.hits), dict(ranking.matched)
        present = {hit.doc_id for hit in hits}
        for doc_id in doc_ids:
            number = numbers.get(doc_id)
            if number is None or number not in scores or doc_id in present:
                continue
            hit, terms_of = self._hit(number)
            hits.append(hit)
            matched[doc_id] = terms_of
        if len(hits) > len(ranking.hits):
            hits.sort(key=lambda hit: (-hit.score, hit.doc_id))
        return Ranking(hits, matched, ranking.weights)

    def _found_in(self, number: int) -> dict[str, int]:
        """The last query's terms candidate ``number`` matches, with their counts."""
        postings = self._last.postings
        return {
            term: postings[term][number] for term in self._last.terms if number in postings[term]
        }

    def _hit(self, number: int) -> tuple[LexicalHit, frozenset[str]]:
        """Candidate ``number``'s hit for the last query and the terms it matches, built once."""
        built = self._last.built.get(number)
        if built is None:
            found = self._found_in(number)
            hit = LexicalHit(
                self._ids[number], self._last.scores[number], describe(self._last.terms, found)
            )
            built = self._last.built[number] = (hit, frozenset(found))
        return built
