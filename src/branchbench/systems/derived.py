"""Derived-memory baselines: a rolling summary, extract-then-retrieve, and labels.

None of them keeps provenance; each fails in the way its real-world counterpart does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from branchbench.context import Context, fit, rank_by_question
from branchbench.pipeline import Integration, fact_line, fold_current
from branchbench.scenario import Fact, Message
from branchbench.systems.base import Conversation, Setup

# What the baselines decide: their output cites the message being ingested, and they show
# every memory they hold (a label system: those its labels let through).
UNGATED = Integration("message", "every memory held (no gate)")

_EARLIER = {"zh": "（此前提到：{}）", "en": " (earlier: {})"}
_SEP = {"zh": "；", "en": "; "}


class Summary:
    """A summary rewritten on every message: the newest value of each (key, scope),
    optionally with the values it replaced noted the way some summarisers keep them
    ("earlier: ...").
    """

    def __init__(self, language: str, notes: bool = False) -> None:
        self.language = language
        self.notes = notes
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
            if fact.id:
                self.fact_entry[fact.id] = entry
            if values and values[-1] == fact.value:
                continue
            if fact.value in values:
                values.remove(fact.value)
            values.append(fact.value)

    def current(self) -> list[str]:
        """The newest value of each entry: what the summary asserts as current."""
        return [
            fact_line(Fact(key="", value=values[-1], scope=scope))
            for (_, scope), values in self.entries.items()
        ]

    def lines(self) -> list[str]:
        """The summary as memory lines (with the notes of earlier values if kept)."""
        out = []
        for line, values in zip(self.current(), self.entries.values(), strict=True):
            if self.notes and len(values) > 1:
                earlier = _SEP.get(self.language, "; ").join(values[:-1])
                line += _EARLIER.get(self.language, _EARLIER["en"]).format(earlier)
            out.append(line)
        return out


class RollingSummary:
    """A summary without provenance plus the current branch's recent raw turns.

    The raw part is filtered to the branch (that part is easy); the summary holds the
    newest value of each topic by arrival, so whichever branch arrived last wins it.
    """

    name = "rolling_summary"
    NOTES = False
    integration = UNGATED

    def __init__(self, setup: Setup) -> None:
        self.language = setup.language
        self.conversation = Conversation()
        self.summary = Summary(setup.language, notes=self.NOTES)

    def ingest(self, message: Message, facts: Sequence[Fact]) -> None:
        self.conversation.add(message)
        self.summary.apply(facts)

    def context(self, anchor: str, question: str, budget: int) -> Context:
        turns = self.conversation.path_turns(anchor)
        ctx = fit(self.summary.lines(), turns, budget, self.language)
        # the notes report history: only the newest values are asserted as current
        current = self.summary.current()[: len(ctx.memory)]
        return replace(ctx, asserted=tuple(current))

    def close(self) -> None:
        pass


class RollingSummaryNotes(RollingSummary):
    """The same summary keeping every replaced value as an "(earlier: ...)" note.

    The notes carry every value any branch ever stated, so this variant leaks by design;
    it is reported beside the plain summary so that the design choice is visible. The
    notes are history, not assertions: they do not count as stale.
    """

    name = "rolling_summary_notes"
    NOTES = True


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
    integration = UNGATED

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


class BranchLabels:
    """Branch labels as a chat app assigns them: a message continues its parent's label
    unless the parent already has a child, in which case it opens a new label that
    remembers where it forked (the parent's label and position)."""

    def __init__(self) -> None:
        self.label_of: dict[str, str] = {}
        self.position: dict[str, int] = {}
        self.fork: dict[str, tuple[str, int] | None] = {}
        self.has_child: set[str] = set()

    def assign(self, message: Message) -> str:
        """The label of a new message (a re-delivered one keeps its first)."""
        if message.id in self.label_of:
            return self.label_of[message.id]
        parent = message.parent
        if parent is None or parent not in self.label_of or parent in self.has_child:
            label = f"b{len(self.fork) + 1}"
            known = parent is not None and parent in self.label_of
            self.fork[label] = (
                (self.label_of[parent], self.position[parent])
                if parent is not None and known
                else None
            )
            position = 0
        else:
            label = self.label_of[parent]
            position = self.position[parent] + 1
        self.label_of[message.id] = label
        self.position[message.id] = position
        if parent is not None:
            self.has_child.add(parent)
        return label

    def lineage(self, anchor: str) -> dict[str, int]:
        """Each label on the anchor's lineage with the last position that lies on the
        anchor's path (its own position, then each fork point up)."""
        out: dict[str, int] = {}
        if anchor not in self.label_of:
            return out
        step: tuple[str, int] | None = (self.label_of[anchor], self.position[anchor])
        while step is not None and step[0] not in out:
            out[step[0]] = step[1]
            step = self.fork[step[0]]
        return out


class LabelBased(ExtractRetrieve):
    """The common patch: every record carries the branch label that was current when it
    was written, and a context shows only the records labelled with the anchor's branch;
    raw messages are filtered to the branch.

    Facts are one per key; an update rewrites the record under the label current at
    write time. Labels record where the conversation was at write time, not where the
    content came from: the shared prefix carries the first branch's label and vanishes
    after a fork, and a key rewritten on a sibling moves to the sibling's label.
    """

    name = "label_based"
    integration = Integration("message", "memories labelled with the anchor's branch")

    def __init__(self, setup: Setup) -> None:
        super().__init__(setup)
        self.labels = BranchLabels()

    def ingest(self, message: Message, facts: Sequence[Fact]) -> None:
        self.label = self.labels.assign(message)
        super().ingest(message, facts)

    def _labelled(self, at: str) -> list[_Memory]:
        active = self.labels.label_of.get(at)
        return [m for m in self.memories.values() if m.label == active]

    def context(self, anchor: str, question: str, budget: int) -> Context:
        lines = rank_by_question([fact_line(m.fact) for m in self._labelled(anchor)], question)
        return fit(lines, self.conversation.path_turns(anchor), budget, self.language)


@dataclass
class _Written:
    fact: Fact
    label: str
    position: int


class LabelLineage:
    """The strongest label design: a memory carries the label *and position* where it
    was written, and an anchor sees the labels of its whole lineage up to each fork
    point (a branch table, as git keeps one). That is exactly "the message being
    processed when the memory was written lies on the anchor's path".

    Per key the newest visible write wins; a visible retraction hides the key's earlier
    writes (a tree-scope one hides them everywhere); an explicit supersede hides its
    target. What it cannot know is what the content was derived from: a window of
    arrivals, a memory shown from another branch, a fact a summary restated. Where the
    pipeline reads only the branch (the ``path`` read policy), it decides as provenance
    does, except that nothing goes stale: a profile or summary built from a value
    replaced later still shows.
    """

    name = "label_lineage"
    integration = Integration("message", "memories written on the anchor's lineage (labels)")

    def __init__(self, setup: Setup) -> None:
        self.language = setup.language
        self.conversation = Conversation()
        self.labels = BranchLabels()
        self.log: list[_Written] = []

    def ingest(self, message: Message, facts: Sequence[Fact]) -> None:
        self.conversation.add(message)
        label = self.labels.assign(message)
        position = self.labels.position[message.id]
        self.log.extend(_Written(f, label, position) for f in facts)

    def _current(self, at: str) -> list[Fact]:
        lineage = self.labels.lineage(at)
        return fold_current((lineage.get(w.label, -1) >= w.position, w.fact) for w in self.log)

    def context(self, anchor: str, question: str, budget: int) -> Context:
        lines = rank_by_question([fact_line(f) for f in self._current(anchor)], question)
        return fit(lines, self.conversation.path_turns(anchor), budget, self.language)

    def close(self) -> None:
        pass
