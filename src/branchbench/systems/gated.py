"""branchmem as a system: current-branch raw plus the records visible at the anchor.

Every extracted fact becomes a record whose sources are the message it came from;
retractions and explicit supersedes go through the engine too. Visibility, supersession
and retraction are the engine's decisions (strict mode), not this adapter's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from branchbench.context import Context, Turn, fit, rank_by_question
from branchbench.scenario import Fact, Message
from branchbench.systems.base import Setup, fact_line


def open_memory(setup: Setup) -> Any:
    """A strict Memory on a scratch SQLite file when the store supports it."""
    from branchmem import Memory

    if hasattr(Memory, "open"):
        return Memory.open(setup.workdir / "branchmem.sqlite", mode="strict")
    return Memory(mode="strict")


class Branchmem:
    """Provenance-gated memory: a record shows only where all its sources are on the
    anchor's root path."""

    name = "branchmem"

    def __init__(self, setup: Setup) -> None:
        self.language = setup.language
        self.memory = open_memory(setup)

    def ingest(self, message: Message, facts: Sequence[Fact]) -> None:
        self.memory.add_event(
            message.id, message.parent, role=message.role, content=message.content
        )
        for i, fact in enumerate(facts):
            record_id = fact.id or f"{message.id}#{i}"
            if fact.op == "retract":
                self.memory.retract(
                    record_id,
                    sources=[message.id],
                    key=fact.key,
                    key_scope=fact.scope,
                    scope=fact.retract_scope,
                    reason=message.content,
                )
                continue
            self.memory.add_record(
                record_id,
                sources=[message.id],
                content=fact.value,
                kind="fact",
                key=fact.key,
                scope=fact.scope,
            )
            for old in fact.supersedes:
                self.memory.supersede(record_id, old)

    def context(self, anchor: str, question: str, budget: int) -> Context:
        records = [r for r in self.memory.visible(anchor) if r.kind != "retraction"]
        lines = [fact_line(Fact(key=r.key or "", value=r.content, scope=r.scope)) for r in records]
        turns = [
            Turn(event_id=e.id, role=e.role, content=e.content) for e in self.memory.path(anchor)
        ]
        return fit(rank_by_question(lines, question), turns, budget, self.language)

    def close(self) -> None:
        close = getattr(self.memory, "close", None)
        if callable(close):
            close()
