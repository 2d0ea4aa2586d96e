"""Pipelines: what an extractor or summariser reads, and what its output is attributed to.

A real memory pipeline does not read one message alone. An LLM extractor sees a window of
recent messages, Mem0's update step is shown the most similar existing memories, a
rolling summary reads everything since the last summary, and a profile is built from the
facts. Whatever such a step is shown, it tends to restate: that is how an abandoned
branch reaches a memory written on the kept one. The *carrier* here is a deterministic,
model-free stand-in for that step: it restates every fact of every message it is shown
(as the run's extractor derived them) and every memory it is shown, the newer statement
of a topic winning, as a model resolving "Chengdu ... Hangzhou" would.

**The run, not the system, decides what a step reads** (``ReadPolicy``), so every system is
given the same inputs and differs only in what it decides itself (``Integration``): what
its output cites (the message being ingested, or everything the step read) and what it
shows at a probe (its gate). A read policy says where the recent messages come from (the
message's own path, or the last arrivals) and which memories a step is shown: those
written at messages on its path, or every memory written so far whatever its branch (an
ungated store's similarity search). The memories shown are the pipeline's own record of
what it derived, folded per key as a store would (the newest value, a retraction removing
it), never a system's recall, so no system's inputs depend on its gate.

Each mode (``PIPELINES``):

- ``one_message``: the message alone (the extractor of branchbench v1 and v2; no policy);
- ``window``: the message and the ``WINDOW - 1`` before it;
- ``consult``: the message and the ``CONSULT_K`` most similar memories shown;
- ``summary``: the message's facts, and every ``SUMMARY_EVERY`` arrivals a summary of all
  messages since the previous summary together with that summary;
- ``profile``: the message's facts, and every ``PROFILE_EVERY`` arrivals a profile built from
  the facts shown (derived from derived).

The three constants are the defaults of a ``Cadence``; a run may set others (the
``cascade`` split sweeps them). A summary or profile records, for each fact it restates,
the fact memory that stated it (``origins``): with transitive attribution it cites those
memories, so it goes stale when one of them is corrected (SPEC §5), as well as the
messages it read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Final, Literal

from branchbench.context import rank_by_question
from branchbench.scenario import Fact, Message

PIPELINES = ("one_message", "window", "consult", "summary", "profile")
WINDOW = 3  # the message and the two before it
CONSULT_K = 5  # Mem0's update step shows the few most similar memories
SUMMARY_EVERY = 4  # arrivals between two summaries
PROFILE_EVERY = 6  # arrivals between two profiles
RECALL_ALL = 100  # "every memory" for a summariser or profile builder
SUMMARY_KEY = "summary"
PROFILE_KEY = "profile"
_SEP = {"zh": "；", "en": "; "}


@dataclass(frozen=True)
class Cadence:
    """How often the pipeline's periodic steps run: the window a ``window`` step reads, and
    the arrivals between two summaries and two profiles."""

    window: int = WINDOW
    summary_every: int = SUMMARY_EVERY
    profile_every: int = PROFILE_EVERY

    def __post_init__(self) -> None:
        for name in ("window", "summary_every", "profile_every"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")


WindowOrder = Literal["arrival", "path"]
Shown = Literal["path", "ungated"]
Attribution = Literal["message", "transitive"]


@dataclass(frozen=True)
class ReadPolicy:
    """What every system's pipeline step reads in one run: recent messages from ``window``,
    memories written at messages on the path or ``ungated`` (every one)."""

    name: str
    window: WindowOrder
    memories: Shown


READ_POLICIES: Final = {
    "path": ReadPolicy("path", "path", "path"),  # a branch-aware integration
    "arrival": ReadPolicy("arrival", "arrival", "ungated"),  # an arrival-order log
    "ungated": ReadPolicy("ungated", "path", "ungated"),  # the path, and an ungated consult
}
ONE_MESSAGE = "one_message"


def pipeline_label(mode: str, policy: str) -> str:
    """A results row's ``pipeline``: the mode, and the read policy where one applies."""
    return mode if mode == ONE_MESSAGE else f"{mode}@{policy}"


def pipeline_labels(modes: Sequence[str], policies: Sequence[str]) -> list[str]:
    """Every (mode, policy) a run measures, as row labels, in the canonical order."""
    return list(dict.fromkeys(pipeline_label(m, p) for m in modes for p in policies))


def split_label(label: str) -> tuple[str, str | None]:
    """(mode, read policy) of a row's ``pipeline`` label (None: one message, no policy)."""
    mode, _, policy = label.partition("@")
    return mode, policy or None


@dataclass(frozen=True)
class Integration:
    """What a system decides about what its pipeline derived: what each memory cites
    (``attribution``) and what it shows at a probe (``gate``, said in words)."""

    attribution: Attribution
    gate: str


RAW_ONLY = Integration("message", "none")


@dataclass(frozen=True)
class Recalled:
    """A memory a system shows its pipeline: its id and the text it stores."""

    id: str
    text: str


def rank_recalled(items: Sequence[Recalled], query: str, k: int) -> list[Recalled]:
    """The shared similarity order (bigram overlap with the query), cut to ``k``."""
    by_text: dict[str, list[Recalled]] = {}
    for item in items:
        by_text.setdefault(item.text, []).append(item)
    ranked = rank_by_question([i.text for i in items], query)
    out: list[Recalled] = []
    for text in ranked:
        out.append(by_text[text].pop(0))
    return out[:k]


FactsOf = Callable[[Message], tuple[Fact, ...]]
"""The run's extractor on one message (oracle, rules or llm), cached by the runner."""

InputExtractor = Callable[[Sequence[Message], Sequence[str]], tuple[Fact, ...]]
"""A model that reads a whole input (messages and memory texts) itself (``--extractor llm``)."""


def fold_current(writes: Iterable[tuple[bool, Fact]]) -> list[Fact]:
    """What a store shows of ``writes`` (in write order, each with whether the reader
    sees it): per (key, scope) the newest seen write; a seen retraction removes its key (a
    tree-wide one even unseen), an explicit supersede its target."""
    current: dict[tuple[str, str | None], Fact] = {}
    for seen, fact in writes:
        if fact.op == "retract":
            if seen or fact.retract_scope == "tree":
                for entry in [e for e in current if e[0] == fact.key]:
                    if fact.scope is None or entry[1] == fact.scope:
                        del current[entry]
            continue
        if not seen:
            continue
        for entry in [e for e, f in current.items() if f.id in fact.supersedes]:
            del current[entry]
        current.pop(_entry(fact), None)
        current[_entry(fact)] = fact
    return list(current.values())


def fact_line(fact: Fact) -> str:
    """How a derived fact reads in the memory section (scope first when it has one)."""
    return f"[{fact.scope}] {fact.value}" if fact.scope else fact.value


def _entry(fact: Fact) -> tuple[str, str | None]:
    return (fact.key, fact.scope)


def _track(origin: dict[tuple[str, str | None], str], fact: Fact, record: str | None) -> None:
    """Follow ``_merged``: the newest assert of a (key, scope) wins, a retraction drops it."""
    if fact.op == "retract":
        origin.pop(_entry(fact), None)
    elif record is not None and fact.key not in (SUMMARY_KEY, PROFILE_KEY):
        origin[_entry(fact)] = record
    elif fact.key not in (SUMMARY_KEY, PROFILE_KEY):
        origin.pop(_entry(fact), None)


class Pipeline:
    """One system's pipeline over one scenario: ``derive`` is called once per arriving
    message, before the system ingests it, and returns what the system should store."""

    def __init__(
        self,
        mode: str,
        policy: ReadPolicy,
        attribution: Attribution,
        facts_of: FactsOf,
        language: str,
        reads_input: InputExtractor | None = None,
        cadence: Cadence | None = None,
    ) -> None:
        if mode not in PIPELINES:
            raise ValueError(f"unknown pipeline {mode!r}; choose from {', '.join(PIPELINES)}")
        self.mode = mode
        self.policy = policy
        self.attribution = attribution
        self.facts_of = facts_of
        self.language = language
        self.reads_input = reads_input
        self.cadence = cadence or Cadence()
        self.messages: dict[str, Message] = {}
        self.arrivals: list[str] = []
        # what each derived memory restates, by id and by stored text (Mem0 answers text)
        self.components: dict[str, tuple[Fact, ...]] = {}
        self.by_text: dict[str, tuple[Fact, ...]] = {}
        self.kind_by_id: dict[str, str] = {}
        self.kind_of_text: dict[str, str] = {}
        self.order_by_id: dict[str, int] = {}
        self.order_by_text: dict[str, int] = {}
        self.written_at: dict[str, str] = {}  # summary id -> message it was written at
        self.summary_arrival = 0  # arrivals up to the last summary
        self.serial = 0
        self.log: list[tuple[str, Fact]] = []  # (message written at, memory), in write order
        # the fact memory each (message, key, scope) was stored as, and for each summary or
        # profile the fact memory behind each (key, scope) it restates
        self.record_of: dict[tuple[str, str, str | None], str] = {}
        self.origins: dict[str, dict[tuple[str, str | None], str]] = {}

    # ------------------------------------------------------------ inputs

    def _path(self, message_id: str) -> list[str]:
        out: list[str] = []
        node: str | None = message_id
        while node is not None and node in self.messages and len(out) <= len(self.messages):
            out.append(node)
            node = self.messages[node].parent
        return out[::-1]

    def _window(self, message: Message, size: int) -> list[Message]:
        ids = self._path(message.id) if self.policy.window == "path" else self.arrivals
        return [self.messages[i] for i in ids[-size:]]

    def _summary_window(self, message: Message, previous: str | None) -> list[Message]:
        """Everything since the previous summary: by arrival, or on the message's path
        below the message the previous summary was written at."""
        if self.policy.window == "arrival":
            return [self.messages[i] for i in self.arrivals[self.summary_arrival :]]
        path = self._path(message.id)
        start = 0
        point = self.written_at.get(previous) if previous else None
        if point in path:
            start = path.index(point) + 1
        return [self.messages[i] for i in path[start:]]

    def _recall(self, message: Message, query: str, k: int) -> list[Recalled]:
        """The ``k`` memories most similar to ``query`` among those the policy shows, as
        the conversation stood before ``message`` (its own output is not written yet)."""
        if message.parent is None or message.parent not in self.messages:
            return []
        return rank_recalled(self._shown(message.parent), query, k)

    def _shown(self, at: str) -> list[Recalled]:
        """The memories a step at ``at`` is shown: every one written so far (``ungated``)
        or those written at messages on ``at``'s path, one per (key, scope), the newest
        written winning, as a store keeps them: a retraction removes its key (a tree-wide
        one from anywhere), an explicit supersede its target."""
        on_path = set(self._path(at)) if self.policy.memories == "path" else None
        shown = fold_current((on_path is None or at_ in on_path, f) for at_, f in self.log)
        return [Recalled(f.id or f.key, fact_line(f)) for f in shown]

    # ------------------------------------------------------------ the carrier

    def _restated(self, recalled: Sequence[Recalled]) -> list[Fact]:
        out: list[Fact] = []
        for item in recalled:
            parts = self.components.get(item.id) or self.by_text.get(item.text)
            if parts is None:
                continue  # a memory this pipeline did not write (nothing to restate)
            out.extend(p for p in parts if p.op == "assert")
        return out

    def _carry(
        self, message: Message, window: Sequence[Message], recalled: Sequence[Recalled]
    ) -> list[Fact]:
        """Every fact of the input, the newer statement of a topic winning: memories
        first, then the window in its order, the message's own facts last (they keep
        their ids and explicit supersedes; restated ones are new memories)."""
        if self.reads_input is not None:
            texts = [r.text for r in recalled]
            return list(self.reads_input(window, texts))
        merged: dict[tuple[str, str | None], Fact] = {}
        for fact in self._restated(recalled):
            merged[_entry(fact)] = replace(fact, id=None, supersedes=())
        for seen in window:
            if seen.id == message.id:
                continue
            for fact in self.facts_of(seen):
                if fact.op == "assert":
                    merged.pop(_entry(fact), None)
                    merged[_entry(fact)] = replace(fact, id=None, supersedes=())
        own = self.facts_of(message)
        for fact in own:
            merged.pop(_entry(fact), None)
        return [*merged.values(), *own]

    def _merged(self, facts: Sequence[Fact]) -> tuple[Fact, ...]:
        merged: dict[tuple[str, str | None], Fact] = {}
        for fact in facts:
            if fact.op == "retract":
                merged.pop(_entry(fact), None)
            elif fact.key not in (SUMMARY_KEY, PROFILE_KEY):
                merged.pop(_entry(fact), None)
                merged[_entry(fact)] = replace(fact, id=None, supersedes=())
        return tuple(merged.values())

    def _digest(self, key: str, kind: str, parts: tuple[Fact, ...]) -> Fact | None:
        if not parts:
            return None
        text = _SEP.get(self.language, "; ").join(fact_line(p) for p in parts)
        return Fact(key=key, value=text, kind=kind)

    # ------------------------------------------------------------ derive

    def derive(self, message: Message) -> tuple[Fact, ...]:
        """What the system stores for ``message``, ids and attribution assigned."""
        if message.id not in self.messages:
            self.messages[message.id] = message
            self.arrivals.append(message.id)
        own = list(self.facts_of(message))
        seen: list[str] = [message.id]
        extra: list[Fact] = []
        if self.mode == "window":
            window = self._window(message, self.cadence.window)
            own = self._carry(message, window, ())
            seen = [m.id for m in window]
        elif self.mode == "consult":
            recalled = self._recall(message, message.content, CONSULT_K)
            own = self._carry(message, [message], recalled)
            seen = [message.id, *(r.id for r in recalled)]
        out = [self._attributed(message, fact, seen) for fact in own]
        if self.mode in ("summary", "profile"):
            for fact in out:
                if fact.op == "assert" and fact.id:
                    self.record_of[(message.id, *_entry(fact))] = fact.id
        if self.mode == "summary" and len(self.arrivals) % self.cadence.summary_every == 0:
            extra.extend(self._summary(message))
        elif self.mode == "profile" and len(self.arrivals) % self.cadence.profile_every == 0:
            extra.extend(self._profile(message, out))
        out.extend(extra)
        self.log.extend((message.id, fact) for fact in out)
        return tuple(out)

    def _summary(self, message: Message) -> list[Fact]:
        recalled = self._recall(message, SUMMARY_KEY, RECALL_ALL)
        summaries = [r for r in recalled if self._kind(r) == "summary"]
        # the newest summary shown (an ungated store shows the last one written)
        previous = max(summaries, key=lambda r: self._order(r), default=None)
        window = self._summary_window(message, previous.id if previous else None)
        origin: dict[tuple[str, str | None], str] = {}
        if self.reads_input is not None:
            carried = list(self.reads_input(window, [previous.text] if previous else []))
        else:
            carried = self._restated([previous] if previous else [])
            if previous is not None:
                origin.update(self.origins.get(previous.id, {}))
            for seen in window:
                for fact in self.facts_of(seen):
                    carried.append(fact)
                    _track(origin, fact, self.record_of.get((seen.id, *_entry(fact))))
        parts = self._merged(carried)
        digest = self._digest(SUMMARY_KEY, "summary", parts)
        self.summary_arrival = len(self.arrivals)
        if digest is None:
            return []
        kept = {e: origin[e] for e in map(_entry, parts) if e in origin}
        if self.reads_input is not None or len(kept) < len(parts):
            # what it restates cannot be traced to fact memories: cite what it read
            seen_ids = [m.id for m in window] + ([previous.id] if previous else [])
        else:
            # the messages it read and the fact memory behind each fact it restates (not
            # the previous summary: it replaces that one, and would be its dependent)
            seen_ids = [m.id for m in window] + list(kept.values())
        fact = self._attributed(message, digest, seen_ids, suffix="summary")
        self.written_at[fact.id or ""] = message.id
        self.origins[fact.id or ""] = kept
        self._remember(fact, parts)
        return [fact]

    def _profile(self, message: Message, own: Sequence[Fact]) -> list[Fact]:
        recalled = self._recall(message, PROFILE_KEY, RECALL_ALL)
        facts = [r for r in recalled if self._kind(r) == "fact"]
        origin: dict[tuple[str, str | None], str] = {}
        if self.reads_input is not None:
            parts = self._merged(self.reads_input([message], [r.text for r in facts]))
        else:
            for item in facts:
                for part in self.components.get(item.id) or self.by_text.get(item.text, ()):
                    _track(origin, part, item.id)
            for fact in own:
                _track(origin, fact, fact.id)
            parts = self._merged([*self._restated(facts), *own])
        digest = self._digest(PROFILE_KEY, "profile", parts)
        if digest is None:
            return []
        kept = {e: origin[e] for e in map(_entry, parts) if e in origin}
        # the message and the fact memory behind each fact it restates (not one that the
        # message's own fact replaced: the profile would be stale the moment it is written)
        cited = [message.id, *kept.values()] if self.reads_input is None else [
            message.id, *(r.id for r in facts)
        ]  # fmt: skip
        fact = self._attributed(message, digest, cited, "profile")
        self.origins[fact.id or ""] = kept
        self._remember(fact, parts)
        return [fact]

    def _kind(self, item: Recalled) -> str:
        return self.kind_by_id.get(item.id) or self.kind_of_text.get(item.text, "fact")

    def _order(self, item: Recalled) -> int:
        if item.id in self.order_by_id:
            return self.order_by_id[item.id]
        return self.order_by_text.get(item.text, -1)

    def _attributed(
        self, message: Message, fact: Fact, seen: Sequence[str], suffix: str = ""
    ) -> Fact:
        fid = fact.id
        if fid is None:
            self.serial += 1
            fid = f"{message.id}#{suffix or 'f'}{self.serial}"
        sources: tuple[str, ...] = ()
        if self.attribution == "transitive":
            sources = tuple(dict.fromkeys(seen))
        out = replace(fact, id=fid, sources=sources)
        if out.op == "assert" and out.kind == "fact":
            self._remember(out, (out,))
        return out

    def _remember(self, fact: Fact, parts: tuple[Fact, ...]) -> None:
        assert fact.id is not None
        text = fact_line(fact)
        order = len(self.order_by_id)
        self.components[fact.id] = self.by_text[text] = parts
        self.kind_by_id[fact.id] = self.kind_of_text[text] = fact.kind
        self.order_by_id[fact.id] = self.order_by_text[text] = order


def integration_of(system: object) -> Integration:
    """What a system decides about its pipeline's output (raw-history systems keep none)."""
    found = getattr(system, "integration", None)
    return found if isinstance(found, Integration) else RAW_ONLY


def describe(integrations: Mapping[str, Integration]) -> dict[str, dict[str, str]]:
    """Each system's attribution and gate as plain data for ``run.json`` and the report."""
    return {
        name: {"attribution": i.attribution, "gate": i.gate} for name, i in integrations.items()
    }
