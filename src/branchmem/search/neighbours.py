"""Path neighbours: a record next to a relevant one on the anchor's path gains rank
(docs/retrieval.md "Path neighbours").

In a conversation the answer often sits beside the words of the question, not in them:
"Where did you go last summer?" matches the question turn; "Lisbon, with my sister" is the
next turn and shares none of its terms. branchmem knows where every record's sources stand
on the anchor's path (the order SPEC §5 picks a key's current value by), so one rule,
model-free, adds to each candidate ``NEIGHBOUR_SHARE`` of the best score among the first
``LENDERS`` hits that stand 1 to ``REACH`` steps away from it on that path. Records at the
same place (facts taken from one message) do not lend to each other: one matching fact of a
message says nothing about its other facts, while the turn before or after it is often the
question or the answer it belongs to. A candidate that matched nothing can
enter the ranking this way, just behind the hits it stands beside.

Only candidates of the view take part (a record off the path has no place and is never one),
so a record on another branch still changes no score and no rank. A candidate without a
place (no anchor, a detached anchor, a record placed in another tree) neither gains nor
lends. Its failure cases (docs/retrieval.md): a turn beside a relevant one is not always
relevant (a long chat's small talk moves up behind a hit), and a fact derived from several
messages stands where its deepest source stands, so it lends only to that message's
neighbours.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

NEIGHBOUR_SHARE: Final = 0.3  # of the best neighbour's score a candidate gains (tuned)
REACH: Final = 1  # how many path steps away a neighbour may stand (tuned)
LENDERS: Final = 10  # only the best hits lend: half of a weak score lifts nothing to the top

Scored = tuple[str, float, str]  # record id, score, why


def by_place(place: Mapping[str, int | None]) -> dict[int, list[str]]:
    """The candidates at each path place, ids sorted (what ``with_neighbours`` looks up)."""
    found: dict[int, list[str]] = {}
    for record_id, at in place.items():
        if at is not None:
            found.setdefault(at, []).append(record_id)
    for ids in found.values():
        ids.sort()
    return found


def lenders_of(hits: Sequence[Scored], lenders: int = LENDERS) -> list[tuple[float, str]]:
    """The hits that lend, as (score, id), best first: the first ``lenders`` hits with a
    positive score (ties: the smaller id first)."""
    found = [(score, record_id) for record_id, score, _ in hits[:lenders] if score > 0]
    return sorted(found, key=lambda item: (-item[0], item[1]))


def beside(
    hits: Sequence[Scored],
    place: Mapping[str, int | None],
    places: Mapping[int, Sequence[str]],
    *,
    reach: int = REACH,
    lenders: int = LENDERS,
) -> dict[str, tuple[float, str]]:
    """Each candidate that gains -> (the score it gains a share of, the lender's id)."""
    support: dict[str, tuple[float, str]] = {}
    for score, record_id in lenders_of(hits, lenders):  # best first: the first to reach wins
        at = place.get(record_id)
        if at is None:
            continue
        for step in (*range(at - reach, at), *range(at + 1, at + reach + 1)):
            for other in places.get(step, ()):
                if other not in support:
                    support[other] = (score, record_id)
    return support


def with_neighbours(
    hits: Sequence[Scored],
    place: Mapping[str, int | None],
    places: Mapping[int, Sequence[str]],
    *,
    share: float = NEIGHBOUR_SHARE,
    reach: int = REACH,
    lenders: int = LENDERS,
) -> list[Scored]:
    """``hits`` (best first, scores ≥ 0) re-scored: each candidate 1 to ``reach`` path
    steps from one of the first ``lenders`` hits with a positive score gains ``share`` of
    the best such hit's score (the smaller id on a tie). Candidates that gain enter the
    ranking; the order is the new score descending, then the old order (a candidate that was
    not a hit after every hit), then id. ``place``: each candidate's path place (None:
    none); ``places``: ``by_place(place)``.
    """
    if share <= 0 or not places:
        return list(hits)
    support = beside(hits, place, places, reach=reach, lenders=lenders)
    if not support:
        return list(hits)
    rank = {record_id: number for number, (record_id, _, _) in enumerate(hits)}
    rescored: list[tuple[float, int, str, str]] = []
    for record_id, score, why in hits:
        gain = support.get(record_id)
        if gain is not None:
            score, why = score + share * gain[0], _why(why, gain, share)
        rescored.append((score, rank[record_id], record_id, why))
    for record_id in sorted(support.keys() - rank.keys()):
        gain = support[record_id]
        rescored.append((share * gain[0], len(hits), record_id, _why("", gain, share)))
    rescored.sort(key=lambda item: (-item[0], item[1], item[2]))
    return [(record_id, score, why) for score, _, record_id, why in rescored]


def _why(why: str, gain: tuple[float, str], share: float) -> str:
    near = f"beside {gain[1]} on the path (+{share * gain[0]:.3f})"
    return f"{why}; {near}" if why else near
