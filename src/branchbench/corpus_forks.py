"""A corpus scenario: one real conversation, forked at several of its annotated facts.

The kept path is an excerpt of the conversation: every chosen annotated turn with the
``before`` turns that lead to it and the ``after`` turns that answer it, in the
conversation's order (gaps between excerpts). At each annotated turn the conversation
forks: besides the kept branch (the real turn and its reply) 1-3 sibling branches repeat
the turn and its reply with the annotated value replaced by another value of the same
kind found elsewhere in the same conversation (else in the same corpus), never one that
occurs on the kept path or in the question. Each fork's siblings arrive in an order
drawn per fork from a seeded generator: before the kept turn (``abandoned_first``),
right after it (``interleaved``) or after the anchor (``abandoned_last``).

Each fork's probes carry the fork's id (the scorer resamples forks, not scenarios) and
its arrival order.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from branchbench.corpora import CorpusTurn
from branchbench.corpus_values import Value, sentence, substitute
from branchbench.keywords import contains
from branchbench.scenario import Fact, Message, Probe, Scenario
from branchbench.validate import validate_scenario

ORDERS = ("abandoned_first", "interleaved", "abandoned_last")
SIBLING_SUFFIXES = "xyz"  # ids of a fork's sibling copies: "D4:7x", "D4:7y", "D4:7z"
MAX_SIBLINGS = 3  # per fork, besides the kept branch: 2-4 branches in all
OPERATION = "multi_fork"


@dataclass(frozen=True)
class AnnotatedFact:
    """A value the corpus annotates in one turn, with the question that asks for it.

    ``at`` indexes the conversation's turns; ``source`` says which annotation it is
    ("qa 12", "knowledge_update 1"); ``original`` (BEAM updates) is the earlier turn and
    value the fact replaces, kept on the path for a stale probe; ``asked`` is False
    when ``question`` is a fill-in-the-blank made from the turn because the corpus asks
    no question whose answer is this value."""

    at: int
    value: Value
    question: str
    source: str
    asked: bool = True
    original: tuple[int, Value] | None = None


@dataclass(frozen=True)
class Candidate:
    """A value that may stand on a sibling branch, and where the corpus says it."""

    value: Value
    where: str  # "conversation 43, turn D5:3"
    conversation: str


@dataclass(frozen=True)
class Conversation:
    """One conversation of a corpus, read for forking."""

    id: str
    turns: tuple[CorpusTurn, ...]
    facts: tuple[AnnotatedFact, ...]
    shown: Callable[[CorpusTurn, str], str]  # a turn's text (keeping the value's sentence)
    role: Callable[[CorpusTurn], str]
    pool: tuple[Candidate, ...]  # every value of a known kind said in the conversation


@dataclass(frozen=True)
class Layout:
    """How much of the conversation a scenario shows around each annotated turn."""

    before: int  # turns leading to an annotated turn
    after: int  # turns after it (its reply), copied onto each sibling branch


@dataclass
class Drawn:
    """What the generator drew for one fork, kept for the split's statistics."""

    fact: AnnotatedFact
    fork: str  # the kept annotated turn's id
    order: str
    siblings: list[Candidate] = field(default_factory=list)


def _fork_rng(seed: str, conversation: str, fact: AnnotatedFact) -> random.Random:
    # one generator per fork, so dropping another fork changes nothing drawn here
    return random.Random(f"{seed}-{conversation}-{fact.source}")


def excerpt(conv: Conversation, facts: Sequence[AnnotatedFact], layout: Layout) -> list[int]:
    """Indices of the kept path's turns, in the conversation's order."""
    kept: set[int] = set()
    for f in facts:
        kept.update(
            range(max(0, f.at - layout.before), min(len(conv.turns), f.at + layout.after + 1))
        )
        if f.original is not None:
            kept.update(i for i in (f.original[0], f.original[0] + 1) if i < f.at)
    return sorted(kept)


def _draw_siblings(
    fact: AnnotatedFact,
    rng: random.Random,
    conv: Conversation,
    corpus_pool: Mapping[str, Sequence[Candidate]],
    path_text: str,
    drawn_before: Sequence[str] = (),
) -> list[Candidate]:
    """1-3 sibling values: same kind, this conversation's first, never on the kept path,
    in the question, one inside another, or drawn by an earlier fork of the scenario (so a
    fork leaks only through its own siblings, and its arrival order says when they came)."""
    wanted = rng.randint(1, MAX_SIBLINGS)
    own = [c for c in conv.pool if c.value.kind == fact.value.kind]
    other = [c for c in corpus_pool.get(fact.value.kind, ()) if c.conversation != conv.id]
    rng.shuffle(own)
    rng.shuffle(other)
    chosen: list[Candidate] = []
    taken = [fact.value.text, *drawn_before]
    for c in own + other:
        if len(chosen) == wanted:
            break
        text = c.value.text
        if any(contains(t, text) or contains(text, t) for t in taken):
            continue
        if contains(path_text, text) or contains(fact.question, text):
            continue
        chosen.append(c)
        taken.append(text)
    return chosen


def _with_fact(m: Message, key: str, value: str) -> Message:
    return Message(m.id, m.parent, m.role, m.content, (*m.facts, Fact(key=key, value=value)))


def _kept_path(
    conv: Conversation, facts: Sequence[AnnotatedFact], indices: list[int]
) -> list[Message]:
    keeps: dict[int, str] = {f.at: f.value.text for f in facts}
    for f in facts:
        if f.original is not None:
            keeps[f.original[0]] = f.original[1].text
    kept: list[Message] = []
    parent: str | None = None
    for i in indices:
        turn = conv.turns[i]
        kept.append(Message(turn.id, parent, conv.role(turn), conv.shown(turn, keeps.get(i, ""))))
        parent = turn.id
    return kept


def draw(
    conv: Conversation,
    facts: Sequence[AnnotatedFact],
    corpus_pool: Mapping[str, Sequence[Candidate]],
    layout: Layout,
    seed: str,
) -> list[Drawn]:
    """Each fork's arrival order and sibling values (a fork without one has none)."""
    indices = excerpt(conv, facts, layout)
    path_text = "\n".join(m.content for m in _kept_path(conv, facts, indices))
    out = []
    drawn_before: list[str] = []
    for f in sorted(facts, key=lambda x: x.at):
        rng = _fork_rng(seed, conv.id, f)
        order = rng.choice(ORDERS)
        siblings = _draw_siblings(f, rng, conv, corpus_pool, path_text, drawn_before)
        drawn_before.extend(c.value.text for c in siblings)
        out.append(Drawn(f, conv.turns[f.at].id, order, siblings))
    return out


def _probes(f: AnnotatedFact, d: Drawn, fact_key: str, conv: Conversation) -> list[Probe]:
    where = ", ".join(f"{c.value.text!r} ({c.where})" for c in d.siblings)
    out = [
        Probe(
            id=f"{fact_key}-leak",
            type="leak",
            question=f.question,
            answer=(f.value.text,),
            forbidden=tuple(c.value.text for c in d.siblings),
            notes=f"{f.source}, said in {d.fork}; sibling values: {where}",
            fork=d.fork,
            arrival=d.order,
        ),
        Probe(
            id=f"{fact_key}-retain",
            type="retain",
            question=f.question,
            answer=(f.value.text,),
            notes=f"{f.source}: the corpus's answer, said in {d.fork} on the kept path",
            fork=d.fork,
            arrival=d.order,
        ),
    ]
    if f.original is not None:
        out.append(
            Probe(
                id=f"{fact_key}-stale",
                type="stale",
                question=f.question,
                answer=(f.value.text,),
                forbidden=(f.original[1].text,),
                notes=f"{f.source}: stated in {conv.turns[f.original[0]].id}, updated in {d.fork}",
                fork=d.fork,
                arrival=d.order,
            )
        )
    return out


def build(
    conv: Conversation,
    drawn: Sequence[Drawn],
    *,
    key: str,
    split: str,
    title: str,
    layout: Layout,
) -> Scenario:
    """The scenario forked at every drawn fork (each with at least one sibling value)."""
    facts = [d.fact for d in drawn]
    indices = excerpt(conv, facts, layout)
    kept = _kept_path(conv, facts, indices)
    position = {conv.turns[i].id: n for n, i in enumerate(indices)}
    branches: dict[str, list[Message]] = {}
    probes: list[Probe] = []
    for n, d in enumerate(drawn, start=1):
        f, fact_key = d.fact, f"fact-{n}"
        at = position[d.fork]
        kept[at] = _with_fact(kept[at], fact_key, sentence(kept[at].content, f.value.text))
        if f.original is not None:
            o = position[conv.turns[f.original[0]].id]
            kept[o] = _with_fact(kept[o], fact_key, sentence(kept[o].content, f.original[1].text))
        # the annotated turn and the turns right after it in the conversation (its reply)
        copies = [kept[at]]
        for k in range(1, layout.after + 1):
            if at + k < len(kept) and indices[at + k] == indices[at] + k:
                copies.append(kept[at + k])
            else:
                break
        flat: list[Message] = []
        for suffix, c in zip(SIBLING_SUFFIXES, d.siblings, strict=False):
            up = kept[at].parent
            for j, m in enumerate(copies):
                text = substitute(m.content, f.value.text, c.value.text)
                copy = Message(m.id + suffix, up, m.role, text)
                if j == 0:
                    copy = _with_fact(copy, fact_key, sentence(text, c.value.text))
                flat.append(copy)
                up = copy.id
        branches[d.fork] = flat
        probes += _probes(f, d, fact_key, conv)

    order_of = {d.fork: d.order for d in drawn}
    messages: list[Message] = []
    last: list[Message] = []
    for m in kept:
        flat = branches.get(m.id, [])
        if order_of.get(m.id) == "abandoned_first":
            messages += [*flat, m]
        elif order_of.get(m.id) == "interleaved":
            messages += [m, *flat]
        else:
            messages.append(m)
            last += flat
    return Scenario(
        id=key,
        language="en",
        operation=OPERATION,
        split=split,
        title=title,
        messages=(*messages, *last),
        anchor=kept[-1].id,
        probes=tuple(probes),
    )


_FAULTED = re.compile(r"\bfact-(\d+)-")


def build_valid(
    conv: Conversation,
    facts: Sequence[AnnotatedFact],
    corpus_pool: Mapping[str, Sequence[Candidate]],
    *,
    key: str,
    split: str,
    title: str,
    layout: Layout,
    seed: str,
    minimum: int,
) -> tuple[Scenario, list[Drawn]] | None:
    """The scenario forked at ``facts``, dropping every fork without a sibling value or
    faulted by the validator until it passes; None when fewer than ``minimum`` remain
    (or a fault names no fork)."""
    remaining = sorted(facts, key=lambda x: x.at)
    while len(remaining) >= minimum:
        if excerpt(conv, remaining, layout)[0] in {f.at for f in remaining}:
            remaining = remaining[1:]  # a fork needs a parent: not the excerpt's first turn
            continue
        drawn = draw(conv, remaining, corpus_pool, layout, seed)
        if any(not d.siblings for d in drawn):
            remaining = [d.fact for d in drawn if d.siblings]
            continue
        scenario = build(conv, drawn, key=key, split=split, title=title, layout=layout)
        problems = validate_scenario(scenario)
        if not problems:
            return scenario, drawn
        faulted = {int(n) for p in problems for n in _FAULTED.findall(p.message)}
        if not faulted:
            return None
        remaining = [d.fact for n, d in enumerate(drawn, start=1) if n not in faulted]
    return None
