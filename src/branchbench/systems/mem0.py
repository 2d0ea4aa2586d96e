"""Real Mem0 as branchbench systems (optional: needs the ``mem0ai`` package).

Every message goes through Mem0's own ``add`` pipeline in arrival order, abandoned
branches included. Mem0's LLM is the scripted one from ``branchmem.integrations.mem0.offline``
answering from the facts the run's extractor derived (oracle or LLM), so Mem0 stores the
same lines every other system derives (``fact_line(fact)``) and the comparison measures
memory management, not extraction. With an endpoint and the option ``mem0_llm=endpoint``
(or ``BRANCHMEM_MEM0_LLM=endpoint``), the endpoint's model drives Mem0 itself and the facts
are ignored. Retrieval is Mem0's ``search`` with the probe's question.

- ``mem0``: Mem0's memories plus the raw history in arrival order;
- ``mem0_rawfilter``: the same memories, raw messages filtered to the anchor's branch;
- ``mem0_branchmem``: Mem0 wrapped by ``BranchMem0`` (memories visible at the anchor)
  plus the anchor's branch.
"""

from __future__ import annotations

import contextlib
import inspect
import os
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from branchbench.context import Context, fit
from branchbench.pipeline import Integration, fact_line
from branchbench.scenario import Fact, Message
from branchbench.systems.base import Conversation, Setup
from branchmem import Memory
from branchmem.integrations.mem0 import BranchMem0
from branchmem.integrations.mem0.offline import (
    AnnotatedFact,
    offline_memory,
    openai_compatible_llm,
)

USER = "branchbench"
# Mem0 2.x's default top_k; scenarios derive fewer facts, so every memory is ranked and
# the token budget, not the retrieval cut, decides what reaches the context.
TOP_K = 20
_MEM0_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "tool": "assistant"}


def annotated(fact: Fact) -> AnnotatedFact:
    """The memory text Mem0 stores for a fact: the line every system derives. A retraction
    is phrased so that Mem0 1.x's resolver DELETEs the key's memory."""
    if fact.op == "retract":
        target = f"[{fact.scope}] {fact.key}" if fact.scope else fact.key
        return AnnotatedFact(fact.key, f"(retracted) {target}", fact.scope, "retract")
    return AnnotatedFact(fact.key, fact_line(fact), fact.scope, "assert")


CLOCK_START = datetime(2026, 1, 1, tzinfo=UTC)


@contextlib.contextmanager
def fixed_clock(ticks: list[int]) -> Iterator[None]:
    """Mem0 stamps memories with the wall clock; under this, each stamp is one second
    after the previous one from ``CLOCK_START``, so two runs give byte-identical
    contexts while the order of writes stays readable."""
    import mem0.memory.main as mem0_main  # type: ignore[import-untyped, import-not-found, unused-ignore]

    class Clock(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> Clock:
            ticks[0] += 1
            moment = CLOCK_START + timedelta(seconds=ticks[0])
            stamp = moment if tz is None else moment.astimezone(tz)
            return cls.fromtimestamp(stamp.timestamp(), stamp.tzinfo)

    real = mem0_main.datetime
    mem0_main.datetime = Clock
    try:
        yield
    finally:
        mem0_main.datetime = real


def mem0_line(item: dict[str, Any]) -> str:
    """A memory as a real prompt shows it: the text with Mem0's ``created_at`` and
    ``updated_at``, which let a reader order two values Mem0 kept side by side."""
    stamps = [
        f"{label} {item[field]}"
        for field, label in (("created_at", "created"), ("updated_at", "updated"))
        if item.get(field)
    ]
    text = str(item["memory"])
    return f"{text} ({', '.join(stamps)})" if stamps else text


class _Mem0Base:
    """Shared ingest: one Mem0 ``add`` per message, with the facts the run's pipeline
    derived (Mem0's own update step then resolves them against the memories it holds,
    whatever branch they came from)."""

    name = "mem0"
    integration = Integration("message", "every memory Mem0 holds (Mem0 search)")

    def __init__(self, setup: Setup) -> None:
        self.language = setup.language
        self.conversation = Conversation()
        llm = None
        wanted = setup.options.get("mem0_llm") or os.environ.get("BRANCHMEM_MEM0_LLM")
        if wanted == "endpoint" and setup.endpoint and setup.model:
            llm = openai_compatible_llm(setup.endpoint, setup.model)
        self.top_k = int(setup.options.get("mem0_top_k", TOP_K))
        self.memory: Any = offline_memory(llm=llm)  # in memory: one per scenario
        self.scripted = llm is None
        self.ticks = [0]

    def _message(self, message: Message, facts: Sequence[Fact]) -> list[dict[str, str]]:
        if self.scripted:
            self.memory.llm.annotate(message.content, [annotated(f) for f in facts])
        return [{"role": _MEM0_ROLES.get(message.role, "user"), "content": message.content}]

    def ingest(self, message: Message, facts: Sequence[Fact]) -> None:
        self.conversation.add(message)
        with fixed_clock(self.ticks):
            self.memory.add(self._message(message, facts), user_id=USER)

    def _search(self, question: str, k: int) -> list[dict[str, Any]]:
        """Mem0's search for the question, best first (threshold 0: rank, do not cut)."""
        if "top_k" in inspect.signature(self.memory.search).parameters:
            found = self.memory.search(question, top_k=k, filters={"user_id": USER}, threshold=0.0)
        else:
            found = self.memory.search(question, user_id=USER, limit=k)
        return list(found["results"])

    def memory_lines(self, question: str) -> list[str]:
        return [mem0_line(m) for m in self._search(question, self.top_k)]

    def close(self) -> None:
        close = getattr(self.memory, "close", None)
        if callable(close):
            close()


class Mem0(_Mem0Base):
    """Plain Mem0: its memories plus the whole raw history in arrival order."""

    name = "mem0"

    def context(self, anchor: str, question: str, budget: int) -> Context:
        turns = self.conversation.arrival_turns()
        return fit(self.memory_lines(question), turns, budget, self.language)


class Mem0RawFilter(_Mem0Base):
    """Plain Mem0's memories, raw messages filtered to the anchor's branch: the raw leak
    is gone, what Mem0 extracted on other branches is not."""

    name = "mem0_rawfilter"

    def context(self, anchor: str, question: str, budget: int) -> Context:
        turns = self.conversation.path_turns(anchor)
        return fit(self.memory_lines(question), turns, budget, self.language)


class Mem0Branchmem(_Mem0Base):
    """Mem0 wrapped by ``BranchMem0``: memories visible at the anchor (strict mode) plus
    the anchor's branch."""

    name = "mem0_branchmem"
    integration = Integration("transitive", "memories visible at the anchor (BranchMem0 search)")

    def __init__(self, setup: Setup) -> None:
        super().__init__(setup)
        self.store = Memory(mode="strict")
        self.wrapped = BranchMem0(self.memory, store=self.store)
        self.cited: dict[str, tuple[str, ...]] = {}  # a memory the pipeline wrote -> events

    def _events(self, message: Message, facts: Sequence[Fact]) -> list[str]:
        """The events the call derives from: every message the pipeline read, and the
        events behind every memory it was shown (what that memory's own call cited).
        BranchMem0 cites events only."""
        events: dict[str, None] = {}
        for source in (s for f in facts for s in f.sources):
            if source in self.conversation.messages:
                events[source] = None
            else:
                events.update(dict.fromkeys(self.cited.get(source, ())))
        events.pop(message.id, None)
        found = [*events, message.id]  # the deepest last: the write's anchor
        self.cited.update((f.id, tuple(found)) for f in facts if f.id)
        return found

    def ingest(self, message: Message, facts: Sequence[Fact]) -> None:
        self.conversation.add(message)
        self.store.add_event(message.id, message.parent, role=message.role, content=message.content)
        # Mem0 cannot tell "forget this everywhere" from a change of mind on one branch;
        # the extracted facts can, and every system receives them.
        forget = any(f.op == "retract" and f.retract_scope == "tree" for f in facts)
        events = self._events(message, facts)
        if not set(events) <= {m.id for m in self.conversation.path(message.id)}:
            # the step read another branch (an arrival window): BranchMem0 cannot place a
            # write that derives from two branches and refuses it, so nothing is written
            # (branchmem's own store keeps such a record, visible nowhere)
            return
        with fixed_clock(self.ticks):
            self.wrapped.at(message.id, events).add(
                self._message(message, facts),
                user_id=USER,
                delete_scope="tree" if forget else "branch",
            )

    def _found(self, at: str, question: str, k: int) -> list[dict[str, Any]]:
        found = self.wrapped.search(question, anchor=at, user_id=USER, limit=k, threshold=0.0)
        return list(found["results"])

    def context(self, anchor: str, question: str, budget: int) -> Context:
        lines = [mem0_line(m) for m in self._found(anchor, question, self.top_k)]
        return fit(lines, self.conversation.path_turns(anchor), budget, self.language)


SYSTEMS = {
    "mem0": Mem0,
    "mem0_rawfilter": Mem0RawFilter,
    "mem0_branchmem": Mem0Branchmem,
}
