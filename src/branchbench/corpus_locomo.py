"""LoCoMo conversations read for forking: annotated facts are QA items whose gold answer
occurs verbatim in one of their evidence turns; sibling values are other answers to
questions asking the same thing, and dates, times and numbers said in the turns."""

from __future__ import annotations

import re
from collections.abc import Sequence

from branchbench.corpora import CorpusTurn, LocomoConversation
from branchbench.corpus_forks import AnnotatedFact, Candidate, Conversation
from branchbench.corpus_values import Value, occurs, typed, typed_values

CATEGORIES = (1, 2, 4)  # multi-hop, temporal, single-hop; not open-domain nor adversarial
# a question word that asks for no thing: "What did ...", "Which was ..."
_AUX = frozenset(
    {"is", "was", "are", "were", "did", "does", "do", "has", "have", "had", "can", "could"}
    | {"would", "will", "should", "might", "made", "make", "kind", "type", "sort"}
)
_WHAT = re.compile(r"(?:what|which)(?: (?:kind|type|sort|specific type|genre) of)? ([a-z]+)")


def answer_value(question: str, answer: str) -> Value | None:
    """The gold answer as a value of a kind, from its form (a date, a number with its
    unit) or from what the question asks (a place, a person, "what book" ...)."""
    core = re.sub(r"^(?:in|about|around|on|for) ", "", answer.strip()).strip('"')
    if not core or len(core) > 30 or core.lower() in ("yes", "no"):
        return None
    value = typed(core)
    if value is not None:
        return value
    q = question.lower().strip()
    if q.startswith("where") or re.search(r"\bwhich (?:city|country|state)\b", q):
        return Value(core, "place")
    if q.startswith("who"):
        return Value(core, "person")
    if q.startswith(("how many", "how long")):
        return Value(core, " ".join(q.split()[:2]))
    m = _WHAT.match(q)
    if m is not None and m.group(1) not in _AUX:
        return Value(core, f"what:{m.group(1).removesuffix('s')}")
    return None


def shown(turn: CorpusTurn, keep: str = "") -> str:
    """A turn as the scenario shows it: ``Name: text`` and an image turn's caption."""
    photo = f" [shares a photo: {turn.image_caption}]" if turn.image_caption else ""
    return f"{turn.speaker}: {turn.text}{photo}"


def conversation(conv: LocomoConversation) -> Conversation:
    """The conversation's annotated facts and its pool of values."""
    index = {t.id: i for i, t in enumerate(conv.turns)}
    user = conv.speakers[0]
    facts: list[AnnotatedFact] = []
    pool: list[Candidate] = []
    for n, qa in enumerate(conv.qa):
        if not qa.answer or qa.category == 5:
            continue
        value = answer_value(qa.question, qa.answer)
        if value is None:
            continue
        pool.append(Candidate(value, f"conversation {conv.id}, answer to qa {n}", conv.id))
        if qa.category not in CATEGORIES:
            continue
        at = next(
            (index[e] for e in qa.evidence if occurs(conv.turns[index[e]].text, value.text)), None
        )
        if at is not None:
            facts.append(AnnotatedFact(at, value, qa.question, f"qa {n}"))
    for turn in conv.turns:
        for value in typed_values(turn.text):
            pool.append(Candidate(value, f"conversation {conv.id}, turn {turn.id}", conv.id))
    return Conversation(
        id=conv.id,
        turns=conv.turns,
        facts=tuple(facts),
        shown=shown,
        role=lambda t: "user" if t.speaker == user else "assistant",
        pool=tuple(pool),
    )


def conversations(convs: Sequence[LocomoConversation]) -> list[Conversation]:
    return [conversation(c) for c in convs]
