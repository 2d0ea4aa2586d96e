"""The one interface every memory system implements.

Protocol (for anyone adding a system, e.g. an adapter around a real memory library):

1. The runner builds a fresh system per scenario with ``factory(setup)``; ``setup``
   carries the scenario language, a private scratch directory and the optional model
   endpoint.
2. It calls ``ingest(message, facts)`` for **every** message of the scenario in arrival
   order, abandoned branches included, exactly as a chat app would have delivered them.
   ``facts`` is what the run's pipeline derived for that message (``branchbench.pipeline``:
   what it read is the run's read policy, the same for every system): every fact carries
   an ``id``, its ``kind`` (fact, summary, profile) and its ``sources`` (the message and
   memory ids the pipeline attributes it to; empty means the message alone). The system
   declares only what the sources are (``integration``, an ``Integration``: the message
   alone, or everything the step read) and its gate. A system that extracts on its own
   may ignore the facts, but should say so in its docstring.
3. At a probe it calls ``context(anchor, question, budget)`` and gets a ``Context``: the
   memory lines (derived content: facts, summaries) and the transcript turns (raw
   messages) the system would put in front of the model, within ``budget`` tokens as
   counted by ``branchbench.tokens.count_tokens`` (use ``branchbench.context.fit``).
   ``anchor`` is the message id where the conversation is now; probes may be asked
   before the last message has arrived, so ``context`` must only use what was ingested.
4. ``close()`` releases files and connections; it is always called.

A system must not read the scenario file, the probe's keywords or the anchor path from
anywhere but what it was given: the benchmark measures what it would do in production.
Register a system by name in ``branchbench.systems`` (an optional module exposes
``SYSTEMS: dict[str, SystemFactory]``).

Helpers: ``Conversation`` keeps raw arrivals and walks an anchor's path,
``branchbench.pipeline.fact_line`` renders a fact for the memory section,
``branchbench.context.rank_by_question`` is the shared retrieval order and
``branchbench.context.fit`` applies the budget.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from branchbench.context import Context, Turn
from branchbench.pipeline import Integration, fact_line
from branchbench.scenario import Fact, Message


@dataclass(frozen=True)
class Setup:
    """What a system may know before the first message arrives (``options``: free
    adapter settings, e.g. a vector store path)."""

    language: str
    workdir: Path
    endpoint: str | None = None
    model: str | None = None
    options: dict[str, str] = field(default_factory=dict)


class System(Protocol):
    """A memory system under test (see the module docstring for the protocol)."""

    name: str
    integration: Integration

    def ingest(self, message: Message, facts: Sequence[Fact]) -> None:
        """Take one message, in arrival order, with what its pipeline derived."""

    def context(self, anchor: str, question: str, budget: int) -> Context:
        """The memory lines and transcript for a probe at ``anchor`` within ``budget``."""

    def close(self) -> None:
        """Release resources."""


SystemFactory = Callable[[Setup], System]


class Conversation:
    """Raw messages as they arrived, with parent links for the path to an anchor."""

    def __init__(self) -> None:
        self.messages: dict[str, Message] = {}
        self.order: list[str] = []

    def add(self, message: Message) -> None:
        """Record an arrival (a re-delivered id keeps its first arrival)."""
        if message.id not in self.messages:
            self.messages[message.id] = message
            self.order.append(message.id)

    def path(self, anchor: str) -> list[Message]:
        """Root..anchor over what has arrived; an unknown anchor gives an empty path."""
        out: list[Message] = []
        node: str | None = anchor
        while node is not None and node in self.messages:
            out.append(self.messages[node])
            node = self.messages[node].parent
            if len(out) > len(self.messages):  # a cycle cannot arrive, but never loop
                break
        return out[::-1]

    def arrival_turns(self) -> list[Turn]:
        """Every message in arrival order, abandoned branches included."""
        return [_turn(self.messages[i]) for i in self.order]

    def path_turns(self, anchor: str) -> list[Turn]:
        """The messages on the anchor's root path."""
        return [_turn(m) for m in self.path(anchor)]


__all__ = ["Conversation", "Setup", "System", "SystemFactory", "fact_line"]


def _turn(message: Message) -> Turn:
    return Turn(event_id=message.id, role=message.role, content=message.content)
