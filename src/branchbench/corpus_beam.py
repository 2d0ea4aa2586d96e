"""BEAM chats (100K and 500K) read for forking: annotated facts are the values BEAM's
questions name in their source turns (``knowledge_update``: the updated value, with the
original one kept for a stale probe; ``information_extraction``, ``temporal_reasoning``,
``multi_session_reasoning`` and a ``contradiction_resolution``'s first statement: a
value the rubric names); sibling values are the dates, times and numbers said in the
chats, of the same unit."""

from __future__ import annotations

from collections.abc import Sequence

from branchbench.corpora import BeamChat, CorpusTurn
from branchbench.corpus_forks import AnnotatedFact, Candidate, Conversation
from branchbench.corpus_values import Value, cloze, cut, occurs, typed_values

TURN_CHARS = 400  # BEAM's assistant turns run to thousands of characters of code


def rubric_value(rubric: Sequence[str], answer: str, text: str) -> Value | None:
    """The first date, time or number the rubric ("should state: X") or the answer names
    that occurs verbatim in ``text`` (with or without its unit word)."""
    stated = [r.split("should state:", 1)[1].strip() for r in rubric if "should state:" in r]
    for source in [*stated, answer]:
        for v in typed_values(source):
            for form in dict.fromkeys((v.text, v.text.rsplit(" ", 1)[0])):
                if occurs(text, form):
                    found = typed_values(form)
                    if found and found[0].text == form:
                        return found[0]
    return None


def original_value(value: Value, original: str, updated: str) -> Value | None:
    """The one value in the original turn of the same kind that the update turn does not
    repeat (None when there is none or more than one)."""
    found = {
        v
        for v in typed_values(original)
        if v.kind == value.kind and v.text != value.text and not occurs(updated, v.text)
    }
    return found.pop() if len(found) == 1 else None


def shown(turn: CorpusTurn, keep: str = "") -> str:
    """A turn cut to ``TURN_CHARS`` at a word boundary, never before the end of the
    sentence holding ``keep``."""
    return cut(turn.text, TURN_CHARS, keep)


def conversation(chat: BeamChat, corpus: str) -> Conversation:
    """The chat's annotated facts and its pool of values; ``corpus`` names its folder."""
    name = f"{corpus}-{chat.id}"
    index = {t.id: i for i, t in enumerate(chat.turns)}
    facts: list[AnnotatedFact] = []
    for n, u in enumerate(chat.updates):
        for turn_id in u.updated_ids:
            at = index.get(turn_id)
            value = (
                rubric_value(u.rubric, u.answer, chat.turns[at].text) if at is not None else None
            )
            if at is None or value is None:
                continue
            original = None
            if len(u.original_ids) == 1 and index.get(u.original_ids[0], at) < at:
                o = index[u.original_ids[0]]
                old = original_value(value, chat.turns[o].text, chat.turns[at].text)
                original = (o, old) if old is not None else None
            facts.append(
                AnnotatedFact(at, value, u.question, f"knowledge_update {n}", True, original)
            )
            break
    for n, item in enumerate(chat.sourced):
        for turn_id in item.source_ids:
            at = index.get(turn_id)
            text = chat.turns[at].text if at is not None else ""
            value = rubric_value(item.rubric, item.answer, text) if at is not None else None
            if at is None or value is None:
                continue
            asked = item.ability == "information_extraction"
            question = (
                item.question if asked else cloze(shown(chat.turns[at], value.text), value.text)
            )
            facts.append(AnnotatedFact(at, value, question, f"{item.ability} {n}", asked))
            break
    for n, c in enumerate(chat.contradictions):
        for turn_id in c.first_ids:
            at = index.get(turn_id)
            if at is None:
                continue
            values = typed_values(chat.turns[at].text)
            seconds = [typed_values(chat.turns[index[s]].text) for s in c.second_ids if s in index]
            other = {v.kind for vs in seconds for v in vs}
            value = next((v for v in values if v.kind in other), None)
            if value is not None:
                question = cloze(shown(chat.turns[at], value.text), value.text)
                facts.append(
                    AnnotatedFact(at, value, question, f"contradiction_resolution {n}", False)
                )
                break
    pool = [
        Candidate(v, f"{corpus} chat {chat.id}, turn {t.id}", name)
        for t in chat.turns
        for v in typed_values(t.text)
    ]
    return Conversation(
        id=name,
        turns=chat.turns,
        facts=tuple(facts),
        shown=shown,
        role=lambda t: t.speaker,
        pool=tuple(pool),
    )
