"""branchmem as a system: current-branch raw plus the records visible at the anchor.

Every derived memory becomes a record whose sources are what its pipeline attributes it
to: the messages it read and the records it was shown (a summary or profile cites the
records it restates, so their own sources count through them). Retractions and explicit
supersedes go through the engine too. Visibility, supersession, retraction and staleness
are the engine's decisions (strict mode), not this adapter's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from branchbench.context import Context, Turn, fit, rank_by_question
from branchbench.pipeline import Integration, fact_line
from branchbench.scenario import Fact, Message
from branchbench.systems.base import Setup


def open_memory(setup: Setup) -> Any:
    """A strict Memory on a scratch SQLite file when the store supports it."""
    from branchmem import Memory

    if hasattr(Memory, "open"):
        return Memory.open(setup.workdir / "branchmem.sqlite", mode="strict")
    return Memory(mode="strict")


class Branchmem:
    """Provenance-gated memory: a record shows only where all its sources are on the
    anchor's root path. Each record cites everything its pipeline step read."""

    name = "branchmem"
    integration = Integration("transitive", "records visible at the anchor (provenance gate)")

    def __init__(self, setup: Setup) -> None:
        self.language = setup.language
        self.memory = open_memory(setup)
        self.written: dict[str, tuple[str, ...]] = {}  # record -> the messages it cites

    def _sources(self, message: Message, fact: Fact) -> list[str]:
        """What the record cites. A fact or summary cites the messages behind everything
        its step read (a memory it was shown counts through its own sources): citing a
        memory itself would make a restatement the dependent of what it replaces, stale
        the moment it supersedes it. A profile is derived from derived memories and
        cites the facts as records, so it goes stale when one of them is replaced."""
        given = fact.sources or (message.id,)
        if fact.kind == "profile":
            return list(dict.fromkeys(given))
        cited: dict[str, None] = {}
        pending = list(reversed(given))
        while pending:
            source = pending.pop()
            if source in self.written:
                pending.extend(reversed(self.written[source]))
            else:
                cited[source] = None
        return list(cited)

    def ingest(self, message: Message, facts: Sequence[Fact]) -> None:
        self.memory.add_event(
            message.id, message.parent, role=message.role, content=message.content
        )
        for i, fact in enumerate(facts):
            record_id = fact.id or f"{message.id}#{i}"
            sources = self._sources(message, fact)
            if fact.op == "retract":
                self.memory.retract(
                    record_id,
                    sources=sources,
                    key=fact.key,
                    key_scope=fact.scope,
                    scope=fact.retract_scope,
                    reason=message.content,
                )
                continue
            if fact.kind != "profile":
                self.written[record_id] = tuple(sources)
            self.memory.add_record(
                record_id,
                sources=sources,
                content=fact.value,
                kind=fact.kind,
                key=fact.key,
                scope=fact.scope,
            )
            for old in fact.supersedes:
                self.memory.supersede(record_id, old)

    def _lines(self, at: str) -> list[str]:
        return [
            fact_line(Fact(key=r.key or "", value=r.content, scope=r.scope))
            for r in self.memory.visible(at)
            if r.kind != "retraction"
        ]

    def context(self, anchor: str, question: str, budget: int) -> Context:
        lines = self._lines(anchor)
        turns = [
            Turn(event_id=e.id, role=e.role, content=e.content) for e in self.memory.path(anchor)
        ]
        return fit(rank_by_question(lines, question), turns, budget, self.language)

    def close(self) -> None:
        close = getattr(self.memory, "close", None)
        if callable(close):
            close()


class BranchmemUnattributed(Branchmem):
    """The same store behind a careless integration: what the pipeline writes is filed
    under the message being ingested alone. The gate can only judge the sources it is
    given, so whatever the step carried over from a sibling passes it."""

    name = "branchmem_unattributed"
    integration = Integration("message", "records visible at the anchor (provenance gate)")
