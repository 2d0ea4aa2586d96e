"""Newest first: the one rule that reorders a ranking by path order (docs/retrieval.md).

A relevance score cannot tell an old value from its update: "the Redis instance uses 150MB"
and, later, "Redis now uses 200MB" share the question's words, and the original often shares
more. branchmem knows which came later on the anchor's path (SPEC §5 picks a key's current
value by that order), and which record supersedes which. Two steps apply both, model-free:

1. **Supersession lends rank** (``lend``, on the lexical ranking, before any fusion). A
   superseded record in the ranking (scored with the candidates' statistics, never
   returned) gives its hit to its visible superseder, unless the superseder already ranks
   higher; the superseder then matches the terms of both in step 2.
2. **Same thing, later first.** Two hits *state the same thing* when the query terms each
   matches overlap: the weight of the terms both match is at least ``SAME_THING`` of the
   lighter hit's and at least ``HEAVIER_SHARE`` of the heavier hit's, a term weighing its idf
   over the candidates. One hit may match a term more ("150 commits merged in my Git
   repository" and, later, "165 commits merged" state the same thing), but not only the
   question's common words ("next month plan" does not state "moving to Chengdu next month").
   The rule walks the first ``window`` slots best first; at each slot whose hit has not been
   placed yet, the best-ranked hit further down the window that is *later on the anchor's
   path* and states the same thing moves into the slot (the hits between move down one) and
   is placed; else the hit there is placed. A hit without a path position (no anchor, a
   record placed in another tree) never moves up and never moves another up (a hit from
   below may pass it). A hit moves only into the place of one whose voice is not stronger
   than its own (``search.voice``: the assistant's reply never takes the user's place).

Slots outside the window keep their hits, so step 2 only permutes the first ``window`` hits:
it never adds a candidate or removes one, and the top k is the first k of one full reordered
ranking whatever k is asked. Arrival order never enters: "later" is the source's place on the
anchor's path, and equal places keep the score order. Its failure cases (docs/retrieval.md):
a later hit that merely shares the question's words with an earlier one also moves up, and an
update phrased with other words than the question is not found.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from typing import Final, NamedTuple

from .lexical import LexicalHit
from .voice import FULL

SAME_THING: Final = 0.9  # share of the lighter hit's matched term weight both match (tuned)
HEAVIER_SHARE: Final = 0.3  # ... and of the heavier hit's (tuned)
WINDOW: Final = 10  # how many of the best hits the rule may reorder


class Placed(NamedTuple):
    """One slot of the reordered ranking: the record there and, when the rule moved it, the
    id of the record that held this slot before (``""`` otherwise)."""

    record_id: str
    displaced: str


def lend(
    hits: Sequence[LexicalHit],
    matched: Mapping[str, Collection[str]],
    superseder: Mapping[str, str],
) -> tuple[list[LexicalHit], dict[str, frozenset[str]]]:
    """Step 1 on a lexical ranking: each superseded record's hit goes to its superseder
    (same score, ``why`` naming the superseded record), unless the superseder already holds
    a better slot; the superseder matches the terms of both. Returns the hits and each
    returned id's matched terms."""
    if not superseder:  # nothing to lend: the hits as they are
        return list(hits), {hit.doc_id: frozenset(matched.get(hit.doc_id, ())) for hit in hits}
    lent: list[LexicalHit] = []
    terms: dict[str, set[str]] = {}
    for hit in hits:
        record_id = superseder.get(hit.doc_id, hit.doc_id)
        if record_id not in terms:
            why = hit.why
            if record_id != hit.doc_id:
                why = f"for {hit.doc_id} (superseded): {why}"
            lent.append(LexicalHit(record_id, hit.score, why))
            terms[record_id] = set(matched.get(record_id, ()))
        terms[record_id].update(matched.get(hit.doc_id, ()))
    return lent, {record_id: frozenset(found) for record_id, found in terms.items()}


def same_thing(a: Collection[str], b: Collection[str], weights: Mapping[str, float]) -> bool:
    """Whether two hits matching the query terms ``a`` and ``b`` state the same thing: what
    both match weighs ``SAME_THING`` of the lighter side and ``HEAVIER_SHARE`` of the
    heavier; never when either side weighs nothing."""
    one = math.fsum(weights.get(term, 0.0) for term in sorted(a))
    other = math.fsum(weights.get(term, 0.0) for term in sorted(b))
    if min(one, other) <= 0.0:
        return False
    both = math.fsum(weights.get(term, 0.0) for term in sorted(set(a) & set(b)))
    return both >= SAME_THING * min(one, other) and both >= HEAVIER_SHARE * max(one, other)


def newest_first(
    ranking: Sequence[str],
    depth: Mapping[str, int | None],
    terms: Mapping[str, Collection[str]],
    weights: Mapping[str, float],
    *,
    window: int = WINDOW,
    voices: Mapping[str, float] | None = None,
) -> list[Placed]:
    """Step 2: ``ranking`` (ids, best first) reordered, same thing later first, touching
    only its first ``window`` hits.

    ``depth``: the place on the anchor's path (its source frontier's depth there) of each id
    in the window, None when it has none; ``terms``: the query terms each id matches;
    ``weights``: each term's weight (idf over the candidates); ``voices``: each id's voice
    (``voice.voice``; an id not in it, or no mapping, has the full voice).
    """
    voice = voices or {}
    head = list(ranking[: max(0, window)])
    displaced = dict.fromkeys(head, "")
    placed: set[str] = set()
    for slot in range(len(head)):
        here = head[slot]
        if here in placed:
            continue
        at = depth.get(here)
        later = None
        if at is not None:
            matched = terms.get(here, ())
            later = next(
                (
                    below
                    for below in head[slot + 1 :]
                    if below not in placed
                    and _later(depth.get(below), at)
                    and voice.get(below, FULL) >= voice.get(here, FULL)
                    and same_thing(matched, terms.get(below, ()), weights)
                ),
                None,
            )
        if later is None:
            placed.add(here)
            continue
        head.remove(later)
        head.insert(slot, later)
        displaced[later] = here
        placed.add(later)
    return [Placed(record_id, displaced[record_id]) for record_id in head] + [
        Placed(record_id, "") for record_id in ranking[len(head) :]
    ]


def _later(place: int | None, than: int) -> bool:
    return place is not None and place > than
