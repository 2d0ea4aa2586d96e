"""How a search orders the items it may return: BM25 over the values' text, or the
similarity of their embedded fields when the store has an index."""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from langchain_core.embeddings import Embeddings
from langgraph.store.base import IndexConfig, ensure_embeddings, get_text_at_path, tokenize_path

from ...errors import InvalidInput
from ...search.lexical import CorpusStats, bm25, corpus_stats, normalize, query_terms, rank
from .items import Found

QUERY_MEMO: Final = 256  # ranked answers kept per candidate set (distinct queries)


class Candidates:
    """What a search ranks at one anchor under one namespace prefix and filter, for one
    stamp of the cache: the live items in LangGraph's order (newest first), and, built on
    the first query, the lexical statistics BM25 needs, so a query costs its terms rather
    than re-reading and re-normalising every value. Ranked answers are memoised per query.
    Valid until the earliest expiry among the items (``horizon``) or a TTL assignment that
    may expire or revive one (``refreshes``)."""

    __slots__ = ("by_query", "found", "horizon", "postings", "refreshes", "stats", "texts")

    def __init__(self, found: list[Found], horizon: float, refreshes: int) -> None:
        self.found = found
        self.horizon = horizon
        self.refreshes = refreshes
        self.texts: list[str] | None = None  # normalised values
        self.stats: CorpusStats | None = None
        self.postings: dict[str, dict[int, int]] = {}  # term -> {candidate: tf}
        self.by_query: dict[str, list[tuple[float | None, Found]]] = {}

    def by_words(self, query: str) -> list[tuple[float | None, Found]]:
        """``ranked_by_words(query, self.found)``, bit for bit, from the cached statistics."""
        ranked = self.by_query.get(query)
        if ranked is None:
            ranked = self._rank(query)
            if len(self.by_query) >= QUERY_MEMO:
                self.by_query.clear()
            self.by_query[query] = ranked
        return ranked

    def _rank(self, query: str) -> list[tuple[float | None, Found]]:
        terms = query_terms(query)
        if not terms:
            return [(None, f) for f in self.found]
        texts, stats = self.texts, self.stats
        if texts is None or stats is None:
            texts = self.texts = [normalize(f.text) for f in self.found]
            stats = self.stats = corpus_stats(texts)
        frequencies: dict[int, dict[str, int]] = {}
        document_frequencies: dict[str, int] = {}
        for term in terms:
            postings = self.postings.get(term)
            if postings is None:
                postings = {}
                for i, text in enumerate(texts):
                    count = text.count(term)
                    if count:
                        postings[i] = count
                self.postings[term] = postings
            document_frequencies[term] = len(postings)
            for i, count in postings.items():
                frequencies.setdefault(i, {})[term] = count
        hits = sorted(
            (
                (-bm25(found, len(texts[i]), document_frequencies, stats), str(i), i)
                for i, found in frequencies.items()
            )
        )
        ranked: list[tuple[float | None, Found]] = [(-neg, self.found[i]) for neg, _, i in hits]
        ranked.extend((None, f) for i, f in enumerate(self.found) if i not in frequencies)
        return ranked


class VectorIndex:
    """LangGraph's ``IndexConfig`` made usable: the embedder and the tokenized fields.

    Vectors are kept per (record id, revision): a revision's text never changes, so a
    vector computed once holds on every branch that sees that revision. They live in this
    process; a store reopened on a durable Memory embeds again on first search.
    """

    def __init__(self, config: IndexConfig) -> None:
        if "dims" not in config or "embed" not in config:
            raise InvalidInput("index config needs 'dims' and 'embed'")
        self.config = config
        self.dims = int(config["dims"])
        self.embeddings: Embeddings = ensure_embeddings(config["embed"])
        # SqliteStore's index config names them ``text_fields``
        options: Mapping[str, Any] = config
        fields: list[str] = options.get("fields") or options.get("text_fields") or ["$"]
        self.fields = [_path(p) for p in fields]
        distance = str(options.get("distance_type", "cosine"))
        if distance not in _SIMILARITY:
            raise InvalidInput(
                f"index distance_type {distance!r}: expected one of {sorted(_SIMILARITY)}"
            )
        self.similarity = _SIMILARITY[distance]
        self.vectors: dict[tuple[str, int], list[list[float]]] = {}
        self.lock = threading.Lock()

    def texts(self, value: Mapping[str, Any], index: object) -> list[str]:
        if index is False:
            return []
        paths = self.fields if index is None else [_path(p) for p in index]  # type: ignore[attr-defined]
        texts: list[str] = []
        for _, tokens in paths:
            texts.extend(get_text_at_path(value, tokens))
        return texts

    def vectors_of(self, found: Sequence[Found]) -> dict[tuple[str, int], list[list[float]]]:
        """Vectors of every found item, embedding (in one call) those not seen before."""
        with self.lock:
            missing = [f for f in found if (f.record_id, f.revision) not in self.vectors]
        batch = [(f, self.texts(f.item.value, f.index)) for f in missing]
        flat = [text for _, texts in batch for text in texts]
        embedded = self.embeddings.embed_documents(flat) if flat else []
        cursor = 0
        with self.lock:
            for found_item, texts in batch:
                vectors = [list(v) for v in embedded[cursor : cursor + len(texts)]]
                cursor += len(texts)
                self.vectors[(found_item.record_id, found_item.revision)] = vectors
            return {
                (f.record_id, f.revision): self.vectors[(f.record_id, f.revision)] for f in found
            }

    def rank(self, query: str, found: list[Found]) -> list[tuple[float | None, Found]]:
        """The query's similarity (``distance_type``: cosine, -l2 distance or inner product,
        as PostgresStore scores them) to each item's field vectors, the best field counting
        (LangGraph's max pooling); items with nothing embedded follow, unscored."""
        query_vector = self.embeddings.embed_query(query)
        vectors = self.vectors_of(found)
        scored: list[tuple[float, Found]] = []
        unscored: list[tuple[float | None, Found]] = []
        for f in found:
            own = vectors[(f.record_id, f.revision)]
            if own:
                scored.append((max(self.similarity(query_vector, v) for v in own), f))
            else:
                unscored.append((None, f))
        scored.sort(key=lambda pair: pair[0], reverse=True)
        return [*scored, *unscored]


def _path(path: str) -> tuple[str, str | list[str]]:
    """A field path as ``get_text_at_path`` takes it ("$" is the whole value)."""
    return path, path if path == "$" else tokenize_path(path)


def ranked_by_words(query: str, found: list[Found]) -> list[tuple[float | None, Found]]:
    """BM25 (branchmem's lexical ranking) over the candidates' values; the candidates that
    share no word with the query follow, unscored, so no item is dropped by a query."""
    documents = {str(i): f.text for i, f in enumerate(found)}
    hits = rank(query, documents, max(1, len(documents)))
    matched = {hit.doc_id for hit in hits}
    ranked: list[tuple[float | None, Found]] = [(hit.score, found[int(hit.doc_id)]) for hit in hits]
    ranked.extend((None, f) for i, f in enumerate(found) if str(i) not in matched)
    return ranked


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


def _inner_product(a: Sequence[float], b: Sequence[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=False))


def _negative_l2(a: Sequence[float], b: Sequence[float]) -> float:
    """Minus the Euclidean distance: higher is closer, as PostgresStore's l2 score."""
    return -math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b, strict=False)))


_SIMILARITY: Final[dict[str, Callable[[Sequence[float], Sequence[float]], float]]] = {
    "cosine": _cosine,
    "l2": _negative_l2,
    "inner_product": _inner_product,
}
