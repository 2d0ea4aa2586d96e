"""The ranking of one view's records for a query, every step in order (docs/retrieval.md):
BM25 over the candidates (a kept view's term index ranks only a cut of them), supersession
lending its rank (``newest.lend``), a blend with cosine similarity when the engine fuses one
in, path neighbours, whose words, newest first.

The steps are composed here, in one place, from what the engine hands down once: the
candidates' texts or their term index, the records' places on the anchor's path (read by
the engine as it decided the view), and the engine's own reads as functions (the vectors'
blend, who said each record's sources). So the path's order goes down to the rules that use
it and nothing of it comes back up.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from .embedding import Blend
from .lexical import LexicalHit, Ranking, ranking
from .neighbours import Scored, beside, with_neighbours
from .newest import WINDOW, lend, newest_first
from .terms import TermIndex
from .voice import weighed

# each candidate's place on the anchor's path (None: none there) and the candidates at each
# place (``neighbours.by_place``): what path neighbours and newest first order by
Places = tuple[Mapping[str, int | None], Mapping[int, Sequence[str]]]
NOWHERE: Final[Places] = ({}, {})  # no anchor, or a detached one

# how the lexical hits become the fused ones (``embedding.Blend`` over the engine's vectors,
# read from the top); None: no embedder, the lexical hits are the ranking
Fuse = Callable[[Sequence[LexicalHit]], Blend]
# each asked record's voice (``voice.voice`` of who said its sources)
VoicesOf = Callable[[Sequence[str]], Mapping[str, float]]


@dataclass(frozen=True, slots=True)
class Candidates:
    """What the engine read of one view's candidates for a ranking.

    ``documents``: their texts (read when there is no ``index``);
    ``voices_of``: who said each one's sources; ``index``: their term index, which ranks
    the first ``reach`` × ``max(k, WINDOW)`` hits (plus one per lender) and more only when
    the voices need them; ``lent``: superseded record -> (its text, its visible
    superseder), scored with the candidates' statistics, each lending its rank; ``fuse``:
    the blend with the embedder's cosines (every candidate scored, read from the top as
    far as the index would be)."""

    documents: Mapping[str, str]
    voices_of: VoicesOf
    index: TermIndex | None = None
    lent: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    fuse: Fuse | None = None
    reach: int = 1


def rank(query: str, k: int, places: Places, candidates: Candidates) -> list[Scored]:
    """(record id, score, why) of the ``k`` best ``candidates`` for ``query``; ``places``:
    where each candidate stands on the anchor's path."""
    documents, voices_of, index = candidates.documents, candidates.voices_of, candidates.index
    fuse, lending = candidates.fuse, candidates.lent
    superseder = {old: new for old, (_, new) in lending.items()}
    also = {old: text for old, (text, _) in lending.items()}
    want = max(k, WINDOW)
    # only the best the answer can reach: lending merges at most one hit per superseded
    # record, newest first reorders the first WINDOW, and path neighbours re-score only the
    # neighbours of the first LENDERS <= WINDOW hits; the voices may lower some of those,
    # and then more are ranked (``voice.weighed``). A blend scores every candidate at once
    # and is read from the top in the same way.
    top = None if index is None and fuse is None else candidates.reach * want + len(lending)
    blend = None
    while True:
        if blend is None:  # the lexical ranking (the blend's: all of it), lent
            cut = None if fuse is not None else top
            lexical, beyond = _lexical(query, documents, index, places, also, superseder, cut)
            hits, matched = lend(lexical.hits, lexical.matched, superseder)
            blend = None if fuse is None else fuse(hits)
        if blend is None:
            found = [(h.doc_id, h.score, h.why) for h in hits]
        else:
            found, beyond = _blended(blend, top, places)
        heard = weighed(with_neighbours(found, *places), voices_of, want, beyond=beyond)
        if heard is not None:
            break
        assert top is not None  # a ranking of every candidate decides
        size = len(blend) if blend is not None else len(index or ())
        top = None if 2 * top >= size else 2 * top
    voices = voices_of([doc_id for doc_id, _, _ in heard[:WINDOW]])
    depth = {doc_id: places[0].get(doc_id) for doc_id, _, _ in heard[:WINDOW]}
    order = newest_first(
        [doc_id for doc_id, _, _ in heard], depth, matched, lexical.weights, voices=voices
    )
    by_id = {doc_id: (doc_id, score, why) for doc_id, score, why in heard}
    out: list[Scored] = []
    for placed in order[:k]:
        doc_id, score, why = by_id[placed.record_id]
        if placed.displaced:
            why += f"; newest first: in the place of {placed.displaced}"
        out.append((doc_id, score, why))
    return out


def _blended(blend: Blend, top: int | None, places: Places) -> tuple[list[Scored], float | None]:
    """The blend's first ``top`` (all: None) with the candidates the first ones lend to
    beyond them, each in its place, and the best score a candidate left out may have."""
    fused, beyond = blend.first(top)
    if beyond is not None and places[1]:  # a neighbour further down needs its own score too
        fused = blend.among(fused, beside([(h.doc_id, h.score, h.why) for h in fused], *places))
    return [(h.doc_id, h.score, h.why) for h in fused], beyond


def _lexical(
    query: str,
    documents: Mapping[str, str],
    index: TermIndex | None,
    places: Places,
    also: Mapping[str, str],
    superseder: Mapping[str, str],
    top: int | None,
) -> tuple[Ranking, float | None]:
    """The lexical ranking (the first ``top`` of the index's, or all, with the hits of the
    neighbours the first ones lend to) and the best score a candidate left out may have
    (None: none is left out)."""
    if index is None:
        return ranking(query, documents, also), None
    lexical = index.ranking(query, also, top=top, matched_for=set(superseder.values()))
    if top is None:
        return lexical, None
    if places[1]:  # a neighbour further down needs its own score too
        hits, _ = lend(lexical.hits, lexical.matched, superseder)
        scored = beside([(h.doc_id, h.score, h.why) for h in hits], *places)
        if scored.keys() - {h.doc_id for h in hits}:
            lexical = index.with_hits(lexical, query, scored)
    ranked_first = [h.score for h in lexical.hits if h.doc_id not in also][:top]
    return lexical, ranked_first[-1] if len(ranked_first) == top else None
