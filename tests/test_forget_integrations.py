"""forget reaches what the integrations keep in branchmem: a LangGraph ``BranchStore``'s items
are records (sourced at checkpoints, their LangGraph namespace in ``meta``), so a subject
named by that namespace, or the thread's conversation, takes them, and the store's cache
(keyed by the Memory's write generation) does not serve them afterwards."""

from __future__ import annotations

import pytest

pytest.importorskip("langgraph")

from langgraph.checkpoint.memory import InMemorySaver

from branchmem import Memory
from branchmem.integrations.langgraph import BranchCheckpointer, BranchStore
from branchmem.integrations.langgraph.mapping import thread_event_id
from test_langgraph_store import build_graph, new_thread


def test_forget_a_subject_takes_the_langgraph_items_of_that_namespace() -> None:
    memory = Memory()
    graph = build_graph(BranchStore(memory), BranchCheckpointer(InMemorySaver(), memory))
    thread = new_thread()
    graph.invoke({"said": "my cat is called Mittens"}, thread)
    assert graph.invoke({"said": "dogs"}, thread)["recalled"] == [
        "dogs", "my cat is called Mittens",
    ]  # fmt: skip
    receipt = memory.forget("subject", "facts")  # FACTS = ("user", "facts")
    assert len(receipt.erased["records"]) == 2 and receipt.check.clean
    assert graph.invoke({"said": "birds"}, thread)["recalled"] == ["birds"]


def test_forget_a_thread_takes_its_checkpoints_and_the_items_put_there() -> None:
    memory = Memory()
    graph = build_graph(BranchStore(memory), BranchCheckpointer(InMemorySaver(), memory))
    thread, other = new_thread(), new_thread()
    graph.invoke({"said": "my cat is called Mittens"}, thread)
    graph.invoke({"said": "tea"}, other)
    receipt = memory.forget("conversation", thread_event_id(thread["configurable"]["thread_id"]))
    assert receipt.erased["events"] and len(receipt.erased["records"]) == 1
    assert graph.invoke({"said": "coffee"}, other)["recalled"] == ["coffee", "tea"]
