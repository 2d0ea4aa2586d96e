"""Whose words: the user's own statements rank above the assistant's restatements of them
(docs/retrieval.md "Whose words").

A memory of a chat is about its user, and the assistant's replies restate what the user
said: "Great to hear that you and Alexis agreed on $500 for groceries" repeats the question's
every word at length, so BM25 and a cosine rank the reply above the user's own statement, and
newest first then lifts the reply (it is later on the path) above the user's later update
too. branchmem knows who said what (each event's role) and which events a record cites, so
two steps apply, model-free:

1. **The assistant's words count for less.** A record every source of which is an event of
   role ``assistant`` (a reply, or a digest of replies only) scores ``ASSISTANT_SHARE`` of
   its score, after path neighbours and before newest first (``weighed``). A record citing
   at least one other event, or another record, or nothing, keeps its score.
2. **A restatement does not take the user's place.** Newest first moves a later hit into a
   slot only when its voice is at least the slot's hit's (``newest.newest_first``'s
   ``voices``): the assistant's later reply never takes the place of the user's statement,
   while the user's later update still takes the place of either.

Failure cases: a fact only the assistant stated (its recommendation, a figure it computed)
ranks at half its relevance, behind weaker user turns; a corpus whose turns all carry one
role (LoCoMo's, where both speakers are ``user``) is ranked as without the rule.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Final

from .neighbours import Scored

ASSISTANT_SHARE: Final = 0.5  # of its score a record citing only assistant messages keeps (tuned)
ASSISTANT_ROLES: Final = frozenset({"assistant"})
FULL: Final = 1.0


def voice(roles: Collection[str] | None) -> float:
    """The share of its score a record keeps, given the roles of its sources (None: it
    cites something that is not an event)."""
    if roles and all(role in ASSISTANT_ROLES for role in roles):
        return ASSISTANT_SHARE
    return FULL


def weighed(
    found: Sequence[Scored],
    voices_of: Callable[[Sequence[str]], Mapping[str, float]],
    want: int,
    *,
    beyond: float | None = None,
) -> list[Scored] | None:
    """The first ``want`` of ``found`` (best first) once every score is weighed by its
    voice, best first (ties keep ``found``'s order), or None when ``found`` cannot decide
    them.

    ``voices_of`` gives the voices of some ids (asked for a prefix of ``found`` only, one
    call per doubling of it); ``beyond``: the best score a candidate that is not in
    ``found`` may have (None: ``found`` is every candidate). A weighed score never exceeds
    the score it weighs, so once the ``want``-th weighed score of a prefix is above every
    score after it, the rest cannot reach the first ``want``; at an equal score the one in
    the prefix stays first (ties keep ``found``'s order, and a candidate not in ``found``
    ranks after every one that is).
    """
    if want <= 0:
        return []
    voices: dict[str, float] = {}
    size = 2 * want
    while True:
        prefix = found[:size]
        voices.update(
            voices_of([record_id for record_id, _, _ in prefix if record_id not in voices])
        )
        order = sorted(
            (
                (score * voices.get(record_id, FULL), number, record_id, why, score)
                for number, (record_id, score, why) in enumerate(prefix)
            ),
            key=lambda item: (-item[0], item[1]),
        )
        rest = [found[size][1]] if size < len(found) else []
        if beyond is not None:
            rest.append(beyond)
        if len(order) < want and not rest:
            return [_scored(item) for item in order]
        if len(order) >= want and (not rest or order[want - 1][0] >= max(rest)):
            return [_scored(item) for item in order[:want]]
        if size >= len(found):
            return None
        size *= 2


def _scored(item: tuple[float, int, str, str, float]) -> Scored:
    weighed_score, _, record_id, why, score = item
    if weighed_score != score:
        why = f"{why}; the assistant's words (x{weighed_score / score:g})" if score else why
    return record_id, weighed_score, why
