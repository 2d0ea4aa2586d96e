"""A search with an embedder reads the blend from the top (``embedding.Blend.first``) and
ranks further only when path neighbours or the voices need it: on conversations long enough
that the cut matters, it returns what the reference ranking of every candidate returns, on
every backend the reference suite runs, and ``Blend.first`` is a prefix of the full order."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from branchmem import Memory
from branchmem.search import embedding
from branchmem.search.embedding import Blend, FusedHit, HashingEmbedder, blend_rank
from branchmem.search.lexical import LexicalHit
from branchmem.search.lexical import rank as lexical_rank
from branchmem.search.neighbours import by_place
from branchmem.search.ranking import Candidates, rank
from branchmem.search.voice import ASSISTANT_SHARE, FULL
from search_reference import FILTERS, SearchScenario, random_query, random_text

DIMENSIONS = 16


def long_history(rng: random.Random, turns: int) -> list[tuple[str, dict[str, object]]]:
    """A chat of ``turns`` alternating turns, now and then forked a few turns back, with a
    record on most turns (some under a key, so some supersede): long enough that the first
    ``max(k, 10)`` of the blend are far fewer than its candidates."""
    ops: list[tuple[str, dict[str, object]]] = []
    for index in range(turns):
        back = 1 if rng.random() < 0.95 else rng.choice((2, 3))
        parent = f"e{max(0, index - back)}" if index else None
        role = "assistant" if index % 2 else "user"
        ops.append(("event", {"id": f"e{index}", "parent": parent, "content": f"e{index}",
                              "role": role}))  # fmt: skip
        if rng.random() < 0.8:
            sources = [f"e{index}"] + (
                [f"e{rng.randrange(index)}"] if index and rng.random() < 0.2 else []
            )
            key = None if rng.random() < 0.9 else rng.choice(("city", "food"))
            ops.append(("record", {"id": f"r{index}", "sources": sources, "key": key,
                                   "scope": None}))  # fmt: skip
    return ops


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("store", ["memory", "sqlite"])
def test_a_long_chat_searched_with_an_embedder_matches_the_reference(
    seed: int, store: str, tmp_path: Path
) -> None:
    rng = random.Random(seed)
    embedder = HashingEmbedder(DIMENSIONS)
    make: Callable[[], Memory] = (
        (lambda: Memory(embedder=embedder))
        if store == "memory"
        else (lambda: Memory.open(tmp_path / "m.db", embedder=embedder))
    )
    mem = make()
    try:
        scenario = SearchScenario(mem, rng, embedder)
        for op in long_history(rng, rng.randint(150, 220)):
            scenario.apply(op)
        events = sorted(scenario.oracle.events, key=lambda e: int(e[1:]))
        compared = 0
        for anchor in rng.sample(events[len(events) // 2 :], 8):  # deep: many candidates
            filters = rng.choice([{}, {}, {}, *FILTERS])  # mostly every record a candidate
            for _ in range(4):  # the later ones read the kept view
                compared += scenario.check_one_search(anchor, "strict", False, filters)
        assert compared == 32
    finally:
        mem.close()


def test_the_first_n_of_a_blend_are_the_full_order_cut(with_numpy: bool) -> None:
    rng = random.Random(3)
    embedder = HashingEmbedder(DIMENSIONS)
    documents = {f"d{i:03}": random_text(rng) for i in range(150)}
    documents.update({f"same{i}": "tea tea" for i in range(5)})  # ties, broken by id
    vectors = dict(zip(documents, embedder.embed(list(documents.values())), strict=True))
    del vectors["d000"]  # a candidate without a vector ranks after every one with
    for _ in range(20):
        query = random_query(rng)
        query_vector = embedder.embed([query])[0]
        lexical = lexical_rank(query, documents, len(documents))
        full = blend_rank(query, documents, query_vector, vectors, len(documents), weight=0.5)
        blend = Blend(documents, query_vector, vectors, lexical, 0.5)
        assert blend.first(None) == (full, None)
        for n in (1, 7, 10, 40, len(documents) - 1):
            first, beyond = blend.first(n)
            assert first == full[:n] and beyond == full[n - 1].score
        picked = [full[i].doc_id for i in (120, 60, 3)]
        assert blend.among(full[:10], picked) == [*full[:10], full[60], full[120]]


class WholeBlend(Blend):
    """The blend ranked whole every time: what reading it from the top must give."""

    def first(self, n: int | None) -> tuple[list[FusedHit], float | None]:
        return super().first(None)


@pytest.mark.parametrize("seed", range(40))
def test_ranking_from_the_top_of_a_blend_is_the_whole_ranking_cut(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ranking.rank`` reading a blend from the top (and further when the voices of the
    first ones lower them, or a neighbour stands further down) gives what it gives with the
    whole blend: random chats where most records are the assistant's (every fourth without
    numpy)."""
    if seed % 4 == 3:
        monkeypatch.setattr(embedding, "_NUMPY", [None])
    rng = random.Random(seed)
    embedder = HashingEmbedder(DIMENSIONS)
    size = rng.randint(30, 160)
    documents = {f"d{i:03}": random_text(rng) or "tea" for i in range(size)}
    vectors = dict(zip(documents, embedder.embed(list(documents.values())), strict=True))
    place = {d: (None if rng.random() < 0.1 else i) for i, d in enumerate(documents)}
    assistant = {d for d in documents if rng.random() < 0.7}

    def voices_of(ids: Sequence[str]) -> dict[str, float]:
        return {d: ASSISTANT_SHARE if d in assistant else FULL for d in ids}

    for _ in range(10):
        query = random_query(rng)
        query_vector = embedder.embed([query])[0]
        k, reach = rng.choice((1, 3, 10, 25)), rng.choice((1, 3))
        ranked = []
        for blend in (Blend, WholeBlend):

            def fuse(hits: Sequence[LexicalHit], b: type[Blend] = blend) -> Blend:
                return b(documents, query_vector, vectors, hits, 0.5)  # noqa: B023 (used here)

            candidates = Candidates(documents, voices_of, fuse=fuse, reach=reach)
            ranked.append(rank(query, k, (place, by_place(place)), candidates))
        assert ranked[0] == ranked[1], (seed, query, k)
