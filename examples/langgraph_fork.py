"""Time travel in LangGraph with branch-blind and branch-aware long-term memory.

A node extracts a fact from the turn and stores it; the next node recalls every stored
fact. The user then replays the extraction from the checkpoint before it (a scripted
"LLM" answers differently the second time, as a sampled model does). LangGraph's stock
``InMemoryStore`` still returns the fact from the abandoned run; ``BranchStore`` does not.

Run: ``python examples/langgraph_fork.py`` (needs ``pip install branchmem[langgraph]``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from branchmem import Memory
from branchmem.integrations.langgraph import BranchCheckpointer, BranchStore

FACTS = ("user-1", "facts")


class Turn(TypedDict, total=False):
    said: str
    recalled: list[str]


def run(store: BaseStore, checkpointer: BaseCheckpointSaver[Any]) -> tuple[list[str], list[str]]:
    """Recalled facts after the first run and after replaying the extraction."""
    replies: Iterator[str] = iter(["likes cats", "likes dogs"])

    def extract(state: Turn, *, store: BaseStore) -> Turn:
        fact = next(replies)  # stands in for an LLM call
        store.put(FACTS, fact, {"text": fact})
        return {}

    def recall(state: Turn, *, store: BaseStore) -> Turn:
        return {"recalled": sorted(item.value["text"] for item in store.search(FACTS))}

    builder = StateGraph(Turn)
    builder.add_node("extract", extract)
    builder.add_node("recall", recall)
    builder.add_edge(START, "extract")
    builder.add_edge("extract", "recall")
    builder.add_edge("recall", END)
    graph = builder.compile(checkpointer=checkpointer, store=store)

    thread: RunnableConfig = {"configurable": {"thread_id": "demo"}}
    first = graph.invoke({"said": "tell me about my pets"}, thread)["recalled"]
    before_extract = next(s for s in graph.get_state_history(thread) if s.next == ("extract",))
    replayed = graph.invoke(None, before_extract.config)["recalled"]
    return first, replayed


def main() -> None:
    first, replayed = run(InMemoryStore(), InMemorySaver())
    print(f"stock InMemoryStore: first run {first}, after replay {replayed}")

    memory = Memory()
    first, replayed = run(BranchStore(memory), BranchCheckpointer(InMemorySaver(), memory))
    print(f"branchmem BranchStore: first run {first}, after replay {replayed}")


if __name__ == "__main__":
    main()
