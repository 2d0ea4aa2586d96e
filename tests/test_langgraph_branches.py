"""LangGraph time travel against the stock store and BranchStore, on real savers.

Every scenario runs twice on the same saver kind: once with LangGraph's ``InMemoryStore``
(which returns memory written on a branch the thread left) and once with ``BranchStore``.
Nodes are plain Python; a scripted extractor stands in for the LLM, so a replayed node can
answer differently, as a sampled model does.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import pytest

pytest.importorskip("langgraph")

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from branchmem import Memory
from branchmem.integrations.langgraph import BranchCheckpointer, BranchStore

MEMORIES = ("user", "memories")
SaverFactory = Callable[[], BaseCheckpointSaver[Any]]


class Turn(TypedDict, total=False):
    said: str
    recalled: list[str]


class ScriptedExtractor:
    """Returns its replies in order, one per node run: a replay gets the next reply."""

    def __init__(self, replies: list[str]) -> None:
        self.replies = list(replies)

    def __call__(self) -> str:
        if not self.replies:
            raise AssertionError("the scenario ran the extractor more often than scripted")
        return self.replies.pop(0)


def remember_with(extract: ScriptedExtractor) -> Callable[..., Turn]:
    """The node that turns a reply into a memory: a fact, ``forget <fact>``, or nothing."""

    def remember(state: Turn, *, store: BaseStore) -> Turn:
        reply = extract()
        if reply.startswith("forget "):
            store.delete(MEMORIES, reply.removeprefix("forget "))
        elif reply:
            store.put(MEMORIES, reply, {"text": reply})
        return {}

    return remember


def recall(state: Turn, *, store: BaseStore) -> Turn:
    return {"recalled": sorted(item.value["text"] for item in store.search(MEMORIES))}


def build_graph(
    store: BaseStore,
    checkpointer: BaseCheckpointSaver[Any],
    extract: ScriptedExtractor,
    *,
    remember_in_subgraph: bool = False,
) -> CompiledStateGraph[Any, Any, Any, Any]:
    builder = StateGraph(Turn)
    if remember_in_subgraph:
        inner = StateGraph(Turn)
        inner.add_node("extract", remember_with(extract))
        inner.add_edge(START, "extract")
        inner.add_edge("extract", END)
        builder.add_node("remember", inner.compile())
    else:
        builder.add_node("remember", remember_with(extract))
    builder.add_node("recall", recall)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "recall")
    builder.add_edge("recall", END)
    return builder.compile(checkpointer=checkpointer, store=store)


@dataclass
class Harness:
    """One graph, its store and a fresh thread."""

    graph: CompiledStateGraph[Any, Any, Any, Any]
    store: BaseStore
    thread: RunnableConfig

    def turn(self, said: str, config: RunnableConfig | None = None) -> list[str]:
        return list(self.graph.invoke({"said": said}, config or self.thread)["recalled"])

    def resume(self, config: RunnableConfig) -> list[str]:
        return list(self.graph.invoke(None, config)["recalled"])

    def checkpoint_before(self, node: str, turn_index: int = 0) -> RunnableConfig:
        """The checkpoint whose next step runs ``node``, in the given turn of the main run."""
        history = list(self.graph.get_state_history(self.thread))[::-1]
        before = [s.config for s in history if s.next == (node,)]
        return before[turn_index]

    def head(self) -> RunnableConfig:
        return self.graph.get_state(self.thread).config


def harnesses(
    make_saver: SaverFactory,
    memory: Memory,
    replies: list[str],
    *,
    remember_in_subgraph: bool = False,
) -> tuple[Harness, Harness]:
    """The stock store and BranchStore, each with its own saver, thread and replies."""
    stock_store = InMemoryStore()
    stock = build_graph(
        stock_store,
        make_saver(),
        ScriptedExtractor(replies),
        remember_in_subgraph=remember_in_subgraph,
    )
    branch_store = BranchStore(memory)
    branch = build_graph(
        branch_store,
        BranchCheckpointer(make_saver(), memory),
        ScriptedExtractor(replies),
        remember_in_subgraph=remember_in_subgraph,
    )
    return Harness(stock, stock_store, new_thread()), Harness(branch, branch_store, new_thread())


def new_thread() -> RunnableConfig:
    """A thread id of its own: the PostgreSQL saver shares one database across tests."""
    return {"configurable": {"thread_id": f"t-{uuid.uuid4().hex}"}}


@pytest.fixture
def lg_pg_dsn(request: pytest.FixtureRequest) -> str:
    """The project's ``pg_dsn`` fixture if conftest has one, else BRANCHMEM_TEST_PG_DSN."""
    try:
        return str(request.getfixturevalue("pg_dsn"))
    except pytest.FixtureLookupError:
        dsn = os.environ.get("BRANCHMEM_TEST_PG_DSN")
        if not dsn:
            pytest.skip("no PostgreSQL: set BRANCHMEM_TEST_PG_DSN")
        return dsn


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def make_saver(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SaverFactory]:
    closers: list[Callable[[], None]] = []

    def sqlite_saver() -> BaseCheckpointSaver[Any]:
        from langgraph.checkpoint.sqlite import SqliteSaver

        # LangGraph saves checkpoints from worker threads.
        conn = sqlite3.connect(tmp_path / f"{uuid.uuid4().hex}.db", check_same_thread=False)
        closers.append(conn.close)
        return SqliteSaver(conn)

    def postgres_saver() -> BaseCheckpointSaver[Any]:
        pytest.importorskip("langgraph.checkpoint.postgres")
        from langgraph.checkpoint.postgres import PostgresSaver
        from psycopg import Connection
        from psycopg.rows import dict_row

        conn = Connection.connect(
            request.getfixturevalue("lg_pg_dsn"),
            autocommit=True,
            prepare_threshold=0,
            row_factory=dict_row,
        )
        closers.append(conn.close)
        saver = PostgresSaver(conn)
        saver.setup()
        return saver

    factories: dict[str, SaverFactory] = {
        "memory": InMemorySaver,
        "sqlite": sqlite_saver,
        "postgres": postgres_saver,
    }
    if request.param == "postgres":
        request.getfixturevalue("lg_pg_dsn")  # skip before building anything
    yield factories[request.param]
    for close in closers:
        close()


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    # SQLite-backed when the build has it: LangGraph calls in from worker threads.
    opener = getattr(Memory, "open", None)
    mem = opener(str(tmp_path / "mem.db")) if opener is not None else Memory()
    yield mem
    mem.close()


def test_fork_with_new_input_leaves_the_old_branch_memory_behind(
    make_saver: SaverFactory, memory: Memory
) -> None:
    results = []
    for harness in harnesses(make_saver, memory, ["likes cats", "likes dogs"]):
        harness.turn("I have a cat")
        results.append(harness.turn("I have a dog", harness.checkpoint_before("remember")))
    stock, branch = results
    assert stock == ["likes cats", "likes dogs"]
    assert branch == ["likes dogs"]


def test_replay_does_not_keep_the_memory_of_the_replayed_step(
    make_saver: SaverFactory, memory: Memory
) -> None:
    # The replay trap: the rerun node starts from the same input checkpoint X as the
    # first run. Memory tied to X would stay visible on the replayed branch.
    results = []
    for harness in harnesses(make_saver, memory, ["likes cats", "likes dogs"]):
        harness.turn("tell me about pets")
        results.append(harness.resume(harness.checkpoint_before("remember")))
    stock, branch = results
    assert stock == ["likes cats", "likes dogs"]
    assert branch == ["likes dogs"]


def test_update_state_on_an_old_checkpoint_starts_a_clean_branch(
    make_saver: SaverFactory, memory: Memory
) -> None:
    results = []
    for harness in harnesses(make_saver, memory, ["likes cats", "likes dogs"]):
        harness.turn("I have a cat")
        updated = harness.graph.update_state(
            harness.checkpoint_before("remember"), {"said": "I have a dog"}
        )
        results.append(harness.resume(updated))
    stock, branch = results
    assert stock == ["likes cats", "likes dogs"]
    assert branch == ["likes dogs"]


def test_copy_of_a_checkpoint_before_the_write_does_not_see_it(
    make_saver: SaverFactory, memory: Memory
) -> None:
    results = []
    for harness in harnesses(make_saver, memory, ["likes cats", "likes dogs"]):
        harness.turn("tell me about pets")
        copy = harness.graph.update_state(
            harness.checkpoint_before("remember"), None, as_node="__copy__"
        )
        results.append(harness.resume(copy))
    stock, branch = results
    assert stock == ["likes cats", "likes dogs"]
    assert branch == ["likes dogs"]


def test_copy_of_a_checkpoint_after_the_write_keeps_it(
    make_saver: SaverFactory, memory: Memory
) -> None:
    # The copy holds the state the write produced, so it sits where the original sits.
    for harness in harnesses(make_saver, memory, ["likes cats"]):
        harness.turn("I have a cat")
        copy = harness.graph.update_state(
            harness.checkpoint_before("recall"), None, as_node="__copy__"
        )
        assert harness.resume(copy) == ["likes cats"]


def test_invoking_from_the_old_head_switches_back(make_saver: SaverFactory, memory: Memory) -> None:
    results = []
    for harness in harnesses(make_saver, memory, ["likes cats", "likes dogs", "likes fish"]):
        harness.turn("I have a cat")
        old_head = harness.head()
        harness.turn("I have a dog", harness.checkpoint_before("remember"))
        results.append(harness.turn("and a fish", old_head))
    stock, branch = results
    assert stock == ["likes cats", "likes dogs", "likes fish"]
    assert branch == ["likes cats", "likes fish"]


def test_subgraph_writes_belong_to_the_parent_step(
    make_saver: SaverFactory, memory: Memory
) -> None:
    results = []
    for harness in harnesses(
        make_saver, memory, ["likes cats", "likes dogs"], remember_in_subgraph=True
    ):
        harness.turn("tell me about pets")
        results.append(harness.resume(harness.checkpoint_before("remember")))
    stock, branch = results
    assert stock == ["likes cats", "likes dogs"]
    assert branch == ["likes dogs"]


def test_delete_on_one_branch_keeps_the_memory_on_the_other(
    make_saver: SaverFactory, memory: Memory
) -> None:
    results = []
    for harness in harnesses(make_saver, memory, ["likes cats", "forget likes cats", "likes tea"]):
        harness.turn("I have a cat")
        before_forget = harness.head()
        assert harness.turn("forget my cat") == []
        results.append(harness.turn("I drink tea", before_forget))
    stock, branch = results
    assert stock == ["likes tea"]  # the stock delete reaches every branch
    assert branch == ["likes cats", "likes tea"]


def test_other_threads_see_memory_from_the_thread_head_only(
    make_saver: SaverFactory, memory: Memory
) -> None:
    results = []
    for harness in harnesses(make_saver, memory, ["likes cats", "likes dogs", ""]):
        harness.turn("tell me about pets")
        harness.resume(harness.checkpoint_before("remember"))
        results.append(harness.turn("what do I like?", new_thread()))
    stock, branch = results
    assert stock == ["likes cats", "likes dogs"]
    assert branch == ["likes dogs"]


def test_explicit_anchor_reads_each_branch_outside_a_run(
    make_saver: SaverFactory, memory: Memory
) -> None:
    _, harness = harnesses(make_saver, memory, ["likes cats", "likes dogs"])
    harness.turn("tell me about pets")
    cats_head = harness.head()
    harness.resume(harness.checkpoint_before("remember"))
    store = harness.store
    assert isinstance(store, BranchStore)

    def texts(view: BranchStore) -> list[str]:
        return sorted(item.value["text"] for item in view.search(MEMORIES))

    assert texts(store.at(cats_head)) == ["likes cats"]
    assert texts(store.at(harness.head())) == ["likes dogs"]
    assert texts(store.at(harness.thread)) == ["likes dogs"]  # no checkpoint id: the head


@pytest.mark.parametrize("saver_kind", ["memory", "sqlite"])
def test_async_run_follows_the_replayed_branch(
    saver_kind: str, memory: Memory, tmp_path: Path
) -> None:
    async def scenario(saver: BaseCheckpointSaver[Any]) -> list[str]:
        extract = ScriptedExtractor(["likes cats", "likes dogs"])
        graph = build_graph(BranchStore(memory), BranchCheckpointer(saver, memory), extract)
        thread = new_thread()
        await graph.ainvoke({"said": "tell me about pets"}, thread)
        history = [s async for s in graph.aget_state_history(thread)]
        before = [s.config for s in history if s.next == ("remember",)][-1]
        return list((await graph.ainvoke(None, before))["recalled"])

    async def with_saver() -> list[str]:
        if saver_kind == "memory":
            return await scenario(InMemorySaver())
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "async.db")) as saver:
            return await scenario(saver)

    assert asyncio.run(with_saver()) == ["likes dogs"]
