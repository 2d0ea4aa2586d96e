"""branchmem as a system: current-branch raw plus the records visible at the anchor.

Every derived memory becomes a record whose sources are what its pipeline attributes it
to: the messages it read and the records it was shown (a summary or profile cites the
fact records it restates, so their own sources count through them). Retractions and explicit
supersedes go through the engine too. Visibility, supersession, retraction and staleness
are the engine's decisions (strict mode), not this adapter's.

``repair(anchor)`` is branchmem's repair mechanism as an application would use it: the
engine lists what is stale at the anchor (``Memory.repair``) and a deriver rebuilds each
summary or profile from the current fact records it is shown, one per (key, scope) it
restated (dropping one that was retracted); the result is a new revision of the stale
record citing those records. The benchmark runs it only when a run asks for repair.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
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


_SEP = {"zh": "；", "en": "; "}


@dataclass
class RepairWork:
    """What one repair pass did: the records rebuilt, the fact records the deriver read,
    and each rebuilt text with the facts it restates (for the scorer)."""

    rebuilt: int = 0
    read: int = 0
    texts: list[tuple[str, tuple[Fact, ...]]] = field(default_factory=list)


class Branchmem:
    """Provenance-gated memory: a record shows only where all its sources are on the
    anchor's root path. Each record cites everything its pipeline step read."""

    name = "branchmem"
    integration = Integration("transitive", "records visible at the anchor (provenance gate)")

    def __init__(self, setup: Setup) -> None:
        self.language = setup.language
        self.memory = open_memory(setup)
        self.written: dict[str, tuple[str, ...]] = {}  # record -> the messages it cites
        self.kinds: dict[str, str] = {}  # record -> its kind

    def _sources(self, message: Message, fact: Fact) -> list[str]:
        """What the record cites. A fact or summary cites the messages behind everything
        its step read (a memory it was shown counts through its own sources): citing a
        memory itself would make a restatement the dependent of what it replaces, stale
        the moment it supersedes it. A summary or profile cites the fact records it
        restates as records, so it goes stale when one of them is replaced (a previous
        summary it was shown still counts through its sources: it replaces that one)."""
        given = fact.sources or (message.id,)
        digest = fact.kind in ("summary", "profile")
        cited: dict[str, None] = {}
        pending = list(reversed(given))
        while pending:
            source = pending.pop()
            if digest and self.kinds.get(source) == "fact":
                cited[source] = None
            elif source in self.written:
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
            self.kinds[record_id] = fact.kind
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

    def repair(self, anchor: str) -> RepairWork:
        """Rebuild every summary and profile stale at ``anchor`` (``Memory.repair``)."""
        work = RepairWork()

        def rebuild(stale: Any, view: Any) -> tuple[str, list[str]] | None:
            if stale.kind not in ("summary", "profile"):
                return None  # a fact is replaced by its correction, not rebuilt
            current = {(r.key, r.scope): r for r in view.records if r.kind == "fact"}
            parts: list[Any] = []
            for source in stale.sources or ():
                if self.kinds.get(source) != "fact":
                    continue
                cited = self.memory.get_record(source)
                found = current.get((cited.key, cited.scope))
                if found is not None and all(p.id != found.id for p in parts):
                    parts.append(found)
            work.read += len(parts)
            if not parts:
                return None
            facts = tuple(Fact(key=r.key or "", value=r.content, scope=r.scope) for r in parts)
            text = _SEP.get(self.language, "; ").join(fact_line(f) for f in facts)
            work.rebuilt += 1
            work.texts.append((text, facts))
            return text, [r.id for r in parts]

        self.memory.repair(rebuild, anchor=anchor)
        return work

    def holds(self, record_id: str | None) -> bool:
        """Whether the store keeps ``record_id`` (its gate may still hide it)."""
        try:
            self.memory.get_record(record_id or "")
        except Exception:  # the store's not-found error
            return False
        return True

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
