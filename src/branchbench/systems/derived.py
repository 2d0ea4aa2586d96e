"""Derived-memory baselines: a rolling summary, extract-then-retrieve, and labels.

None of them keeps provenance; each fails in the way its real-world counterpart does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from branchbench.context import Context, fit, rank_by_question
from branchbench.scenario import Fact, Message
from branchbench.systems.base import Conversation, Setup, fact_line

_EARLIER = {"zh": "（此前提到：{}）", "en": " (earlier: {})"}
_SEP = {"zh": "；", "en": "; "}


class Summary:
    """A summary rewritten on every message: the newest value of each (key, scope),
    with the values it replaced noted the way a summariser keeps them ("earlier: ...").
    """

    def __init__(self, language: str) -> None:
        self.language = language
        self.entries: dict[tuple[str, str | None], list[str]] = {}
        self.fact_entry: dict[str, tuple[str, str | None]] = {}

    def apply(self, facts: Sequence[Fact]) -> None:
        """Fold one message's facts into the summary."""
        for fact in facts:
            if fact.op == "retract":
                for entry in [e for e in self.entries if e[0] == fact.key]:
                    if fact.scope is None or entry[1] == fact.scope:
                        del self.entries[entry]
                continue
            entry = (fact.key, fact.scope)
            values = self.entries.setdefault(entry, [])
            for old in fact.supersedes:
                old_entry = self.fact_entry.get(old)
                if old_entry and old_entry != entry and old_entry in self.entries:
                    moved = self.entries[old_entry]
                    values[:0] = [v for v in moved if v not in values]
                    del self.entries[old_entry]
            if values and values[-1] == fact.value:
                continue
            if fact.value in values:
                values.remove(fact.value)
            values.append(fact.value)
            if fact.id:
                self.fact_entry[fact.id] = entry

    def lines(self) -> list[str]:
        """The summary as memory lines."""
        out = []
        for (_, scope), values in self.entries.items():
            line = fact_line(Fact(key="", value=values[-1], scope=scope))
            if len(values) > 1:
                earlier = _SEP.get(self.language, "; ").join(values[:-1])
                line += _EARLIER.get(self.language, _EARLIER["en"]).format(earlier)
            out.append(line)
        return out

    def copy(self) -> Summary:
        """An independent copy (a rewrite stored as its own record)."""
        twin = Summary(self.language)
        twin.entries = {k: list(v) for k, v in self.entries.items()}
        twin.fact_entry = dict(self.fact_entry)
        return twin


class RollingSummary:
    """A summary without provenance plus the current branch's recent raw turns.

    The raw part is filtered to the branch (that part is easy); the summary was written
    while every branch was current in turn and remembers them all.
    """

    name = "rolling_summary"

    def __init__(self, setup: Setup) -> None:
        self.language = setup.language
        self.conversation = Conversation()
        self.summary = Summary(setup.language)

    def ingest(self, message: Message, facts: Sequence[Fact]) -> None:
        self.conversation.add(message)
        self.summary.apply(facts)

    def context(self, anchor: str, question: str, budget: int) -> Context:
        turns = self.conversation.path_turns(anchor)
        return fit(self.summary.lines(), turns, budget, self.language)

    def close(self) -> None:
        pass


@dataclass
class _Memory:
    fact: Fact
    label: str


class ExtractRetrieve:
    """Mem0-style: facts extracted per message, one memory per key, last write (by
    arrival) wins, a retraction deletes; retrieval ranks memories by the question;
    plus the raw history in arrival order.

    Keys ignore scope, as a similarity-driven UPDATE would: "design reviews: async" is
    overwritten by "incident calls: voice".
    """

    name = "extract_retrieve"

    def __init__(self, setup: Setup) -> None:
        self.language = setup.language
        self.conversation = Conversation()
        self.memories: dict[str, _Memory] = {}
        self.fact_key: dict[str, str] = {}
        self.label = "main"

    def ingest(self, message: Message, facts: Sequence[Fact]) -> None:
        self.conversation.add(message)
        for fact in facts:
            if fact.op == "retract":
                self.memories.pop(fact.key, None)
                continue
            for old in fact.supersedes:
                key = self.fact_key.get(old)
                if key is not None and key != fact.key:
                    self.memories.pop(key, None)
            self.memories[fact.key] = _Memory(fact, self.label)
            if fact.id:
                self.fact_key[fact.id] = fact.key

    def memory_lines(self) -> list[str]:
        """Every memory, in write order."""
        return [fact_line(m.fact) for m in self.memories.values()]

    def context(self, anchor: str, question: str, budget: int) -> Context:
        lines = rank_by_question(self.memory_lines(), question)
        return fit(lines, self.conversation.arrival_turns(), budget, self.language)

    def close(self) -> None:
        pass


class ExtractRetrieveRawFilter(ExtractRetrieve):
    """The same memories, raw messages filtered to the anchor's branch: the patch that
    removes the raw leak but cannot reach what was extracted at add time."""

    name = "extract_retrieve_rawfilter"

    def context(self, anchor: str, question: str, budget: int) -> Context:
        lines = rank_by_question(self.memory_lines(), question)
        return fit(lines, self.conversation.path_turns(anchor), budget, self.language)


class LabelBased(ExtractRetrieve):
    """The common patch: every record carries the branch label that was current when it
    was written; when the conversation moves to another branch the old label is flipped
    inactive (and back on when the user returns). Raw messages are filtered to the branch.

    Branch labels: a message continues its parent's label unless the parent already has
    a child, in which case it opens a new label. Besides the facts (one per key; an
    update rewrites the record under the current label), a summary of the last
    ``SEGMENT`` arrived messages is written as a record every ``SEGMENT`` messages.
    Labels record where the conversation was at write time, not where the content came
    from: the shared prefix carries the old branch's label and vanishes after a fork, and
    a segment summary written just after a fork mixes both branches under the new label.
    """

    name = "label_based"
    SEGMENT = 4

    def __init__(self, setup: Setup) -> None:
        super().__init__(setup)
        self.branch_of: dict[str, str] = {}
        self.has_child: set[str] = set()
        self.inactive: set[str] = set()
        self.segment: list[str] = []
        self.arrivals = 0
        self.summaries: list[tuple[str, str]] = []
        self.label = ""

    def _label_for(self, message: Message) -> str:
        parent = message.parent
        if parent is None or parent not in self.branch_of or parent in self.has_child:
            return f"b{len(set(self.branch_of.values()))}"
        return self.branch_of[parent]

    def ingest(self, message: Message, facts: Sequence[Fact]) -> None:
        if message.id in self.branch_of:
            return
        label = self._label_for(message)
        self.branch_of[message.id] = label
        if message.parent is not None:
            self.has_child.add(message.parent)
        if self.label and label != self.label:
            self.inactive.add(self.label)  # the branch we left is abandoned
        self.inactive.discard(label)
        self.label = label
        super().ingest(message, facts)
        self.segment.extend(fact_line(f) for f in facts if f.op == "assert")
        self.arrivals += 1
        if self.arrivals % self.SEGMENT == 0 and self.segment:
            self.summaries.append((label, _SEP.get(self.language, "; ").join(self.segment)))
            self.segment = []

    def memory_lines(self) -> list[str]:
        summaries = [text for label, text in self.summaries if label not in self.inactive]
        facts = [fact_line(m.fact) for m in self.memories.values() if m.label not in self.inactive]
        return summaries + facts

    def context(self, anchor: str, question: str, budget: int) -> Context:
        lines = rank_by_question(self.memory_lines(), question)
        return fit(lines, self.conversation.path_turns(anchor), budget, self.language)
