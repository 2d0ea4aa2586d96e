"""LangGraph's long-term memory store as a branchbench system (optional: needs the
``langgraph`` package).

As LangGraph's docs deploy it: the thread's own messages come from the checkpointer, which
forks with the conversation (a fork from a checkpoint is the anchor's path); long-term
memories go to a store under the user's namespace, ``(user_id, "memories")``, one item per
topic (``put`` overwrites it, a retraction ``delete``s it), and a context is the store's
``search(namespace, query=question)`` over an embedding index. The store knows nothing of
branches: a memory written on any branch is a memory of the user. The embedding is
branchmem's deterministic ``HashingEmbedder`` (no network), the same for every run.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib.metadata import version
from typing import Any

from branchbench.context import Context, fit
from branchbench.pipeline import Integration, fact_line
from branchbench.scenario import Fact, Message
from branchbench.systems.base import Conversation, Setup
from branchmem.search.embedding import HashingEmbedder

USER = "branchbench"
NAMESPACE = (USER, "memories")
TOP_K = 20  # as many as the Mem0 rows rank: the token budget decides what fits
DIMENSIONS = 256


class LangGraphStore:
    """LangGraph ``InMemoryStore`` with a semantic index, namespaced by user, searched by
    the question; the transcript is the thread's, which follows the fork."""

    name = "langgraph_store"
    integration = Integration(
        "message", f"every memory in the user's namespace (langgraph {version('langgraph')})"
    )

    def __init__(self, setup: Setup) -> None:
        from langgraph.store.memory import InMemoryStore

        self.language = setup.language
        self.conversation = Conversation()
        embedder = HashingEmbedder(DIMENSIONS)
        self.store: Any = InMemoryStore(
            index={"embed": embedder.embed, "dims": DIMENSIONS, "fields": ["text"]}
        )

    def ingest(self, message: Message, facts: Sequence[Fact]) -> None:
        self.conversation.add(message)
        for fact in facts:
            key = f"{fact.key}@{fact.scope}" if fact.scope else fact.key
            if fact.op == "retract":
                for item in self.store.search(NAMESPACE, limit=1000):
                    if item.key == key or (
                        fact.scope is None and item.key.startswith(fact.key + "@")
                    ):
                        self.store.delete(NAMESPACE, item.key)
                continue
            self.store.put(NAMESPACE, key, {"text": fact_line(fact), "kind": fact.kind})

    def context(self, anchor: str, question: str, budget: int) -> Context:
        found = self.store.search(NAMESPACE, query=question, limit=TOP_K)
        lines = [str(item.value["text"]) for item in found]
        return fit(lines, self.conversation.path_turns(anchor), budget, self.language)

    def close(self) -> None:
        pass


SYSTEMS = {"langgraph_store": LangGraphStore}
