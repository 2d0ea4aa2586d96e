"""BranchStore/BranchCheckpointer against LangGraph's contracts: async nodes, values,
query search with an index, TTL, capabilities (the upstream suites: tests/peer)."""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import UTC, datetime
from typing import Any, TypedDict

import pytest

pytest.importorskip("langgraph")

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from branchmem import InvalidInput, Memory
from branchmem.integrations.langgraph import BranchCheckpointer, BranchStore

FACTS = ("user", "facts")


class Turn(TypedDict, total=False):
    said: str
    error: str


def words(texts: list[str]) -> list[list[float]]:
    """A tiny deterministic embedder: one axis per known word."""
    vocabulary = ["cat", "dog", "fish", "bird"]
    return [[float(w in text.split()) for w in vocabulary] for text in texts]


def new_thread() -> RunnableConfig:
    return {"configurable": {"thread_id": f"t-{uuid.uuid4().hex}"}}


def two_branches(memory: Memory, **options: Any) -> tuple[BranchStore, BranchStore]:
    """Views at two sibling checkpoints of one thread (written outside a run)."""

    def noop(state: Turn) -> Turn:
        return {}

    builder = StateGraph(Turn)
    builder.add_node("noop", noop)
    builder.add_edge(START, "noop")
    builder.add_edge("noop", END)
    graph = builder.compile(checkpointer=BranchCheckpointer(InMemorySaver(), memory))
    thread = new_thread()
    graph.invoke({"said": "a"}, thread)
    first = graph.get_state(thread).config
    root = list(graph.get_state_history(thread))[-1].config
    second = graph.update_state(root, {"said": "b"})
    store = BranchStore(memory, **options)
    return store.at(first), store.at(second)


# -- async (item 2) -------------------------------------------------------------------
async def sync_call_in_async_node(state: Turn, *, store: BaseStore) -> Turn:
    try:
        store.get(FACTS, "x")
    except asyncio.InvalidStateError as exc:
        return {"error": type(exc).__name__}
    return {"error": "none"}


async def async_calls_in_async_node(state: Turn, *, store: BaseStore) -> Turn:
    await store.aput(FACTS, state["said"], {"text": state["said"]})
    found = await store.asearch(FACTS)
    return {"error": ",".join(sorted(i.key for i in found))}


def one_node_graph(node: Any, memory: Memory, saver: BaseCheckpointSaver[Any]) -> Any:
    builder = StateGraph(Turn)
    builder.add_node("node", node)
    builder.add_edge(START, "node")
    builder.add_edge("node", END)
    return builder.compile(
        checkpointer=BranchCheckpointer(saver, memory), store=BranchStore(memory)
    )


@pytest.mark.asyncio
async def test_a_sync_call_from_an_async_node_fails_at_once() -> None:
    memory = Memory()
    graph = one_node_graph(sync_call_in_async_node, memory, InMemorySaver())
    started = time.monotonic()
    out = await graph.ainvoke({"said": "x"}, new_thread())
    assert out["error"] == "InvalidStateError"
    assert time.monotonic() - started < BranchStore(memory).wait_timeout


@pytest.mark.asyncio
async def test_async_calls_from_an_async_node_work() -> None:
    memory = Memory()
    graph = one_node_graph(async_calls_in_async_node, memory, InMemorySaver())
    out = await graph.ainvoke({"said": "cats"}, new_thread(), durability="sync")
    assert out["error"] == "cats"


@pytest.mark.asyncio
async def test_outside_a_run_sync_calls_work_on_the_loop_as_in_memory_store() -> None:
    cats, _ = two_branches(Memory())
    cats.put(FACTS, "k", {"v": 1})
    assert cats.get(FACTS, "k") is not None
    assert (await cats.aget(FACTS, "k")) is not None


# -- values (item 4) ------------------------------------------------------------------
@pytest.mark.parametrize("value", ["text", 3, ["a"]])
def test_a_value_that_is_not_a_dict_is_refused_like_in_memory_store(value: Any) -> None:
    cats, _ = two_branches(Memory())
    with pytest.raises((ValueError, TypeError)):
        InMemoryStore().put(FACTS, "k", value)
    with pytest.raises(InvalidInput, match=r"'k'.*value must be a dict"):
        cats.put(FACTS, "k", value)
    assert cats.search(FACTS) == []


def test_datetime_and_uuid_values_are_stored_as_sqlite_store_does() -> None:
    cats, _ = two_branches(Memory())
    when = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    ident = uuid.UUID(int=7)
    cats.put(FACTS, "k", {"when": when, "id": ident})
    item = cats.get(FACTS, "k")
    assert item is not None
    assert item.value == {"when": when.isoformat(), "id": str(ident)}


def test_an_unserializable_value_is_refused_naming_the_key() -> None:
    cats, _ = two_branches(Memory())
    with pytest.raises(InvalidInput, match="'k'"):
        cats.put(FACTS, "k", {"x": object()})


# -- search (item 5) ------------------------------------------------------------------
def test_query_search_ranks_by_the_index_and_stays_on_its_branch() -> None:
    index: Any = {"dims": 4, "embed": words, "fields": ["text"]}
    cats, dogs = two_branches(Memory(), index=index)
    cats.put(FACTS, "a", {"text": "cat fish"})
    cats.put(FACTS, "b", {"text": "dog"})
    dogs.put(FACTS, "c", {"text": "cat"})
    found = cats.search(FACTS, query="cat")
    assert [i.key for i in found] == ["a", "b"]
    assert found[0].score is not None and found[0].score > (found[1].score or 0.0)
    assert [i.key for i in dogs.search(FACTS, query="cat")] == ["c"]


def test_put_index_false_leaves_an_item_unscored() -> None:
    index: Any = {"dims": 4, "embed": words, "fields": ["text"]}
    cats, _ = two_branches(Memory(), index=index)
    cats.put(FACTS, "a", {"text": "cat"}, index=False)
    cats.put(FACTS, "b", {"text": "dog"})
    found = cats.search(FACTS, query="cat")
    assert [(i.key, i.score is None) for i in found] == [("b", False), ("a", True)]


def test_query_without_an_index_ranks_by_words_and_drops_nothing() -> None:
    cats, _ = two_branches(Memory())
    cats.put(FACTS, "a", {"text": "the cat sat"})
    cats.put(FACTS, "b", {"text": "a dog ran"})
    found = cats.search(FACTS, query="dog")
    assert [i.key for i in found] == ["b", "a"]
    assert found[0].score is not None and found[1].score is None


def test_dotted_filters_reach_nested_values() -> None:
    cats, _ = two_branches(Memory())
    cats.put(FACTS, "a", {"meta": {"lang": "en", "n": 3}})
    cats.put(FACTS, "b", {"meta": {"lang": "fr", "n": 5}})
    assert [i.key for i in cats.search(FACTS, filter={"meta.lang": "fr"})] == ["b"]
    assert [i.key for i in cats.search(FACTS, filter={"meta.n": {"$lt": 4}})] == ["a"]


def test_an_expired_item_is_not_returned() -> None:
    cats, _ = two_branches(Memory(), ttl={"default_ttl": 1e-6})
    cats.put(FACTS, "gone", {"v": 1})
    cats.put(FACTS, "kept", {"v": 2}, ttl=60)
    time.sleep(0.01)
    assert cats.get(FACTS, "gone") is None
    assert [i.key for i in cats.search(FACTS)] == ["kept"]


# -- checkpointer (item 3) ------------------------------------------------------------
class BareSaver(InMemorySaver):
    """A saver without the optional capabilities (BaseCheckpointSaver's defaults)."""

    delete_for_runs = BaseCheckpointSaver.delete_for_runs
    adelete_for_runs = BaseCheckpointSaver.adelete_for_runs
    copy_thread = BaseCheckpointSaver.copy_thread
    acopy_thread = BaseCheckpointSaver.acopy_thread
    prune = BaseCheckpointSaver.prune
    aprune = BaseCheckpointSaver.aprune


def test_the_wrapper_advertises_only_what_the_saver_has() -> None:
    names = ("copy_thread", "acopy_thread", "prune", "aprune", "adelete_for_runs")
    for saver in (BareSaver(), InMemorySaver()):
        wrapped = BranchCheckpointer(saver, Memory())
        assert isinstance(wrapped, BranchCheckpointer)
        for name in names:
            lacking = getattr(type(saver), name) is getattr(BaseCheckpointSaver, name)
            default = getattr(type(wrapped), name) is getattr(BaseCheckpointSaver, name)
            assert default == lacking, (type(saver).__name__, name)
    bare = BranchCheckpointer(BareSaver(), Memory())
    with pytest.raises(NotImplementedError):
        bare.copy_thread("a", "b")


def test_the_wrapper_is_a_context_manager_over_the_saver() -> None:
    memory = Memory()
    with BranchCheckpointer(InMemorySaver(), memory) as checkpointer:
        assert isinstance(checkpointer, BranchCheckpointer)
