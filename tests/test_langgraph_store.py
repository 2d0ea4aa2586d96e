"""BranchStore and BranchCheckpointer: the checkpoint -> event mapping, anchors, errors."""

from __future__ import annotations

import runpy
import time
import uuid
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypedDict

import pytest

pytest.importorskip("langgraph")

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
)
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.store.base import BaseStore, MatchCondition
from langgraph.store.memory import InMemoryStore
from langgraph.types import Command, interrupt

from branchmem import InvalidInput, Memory, NotFoundError
from branchmem.integrations.langgraph import (
    BranchCheckpointer,
    BranchStore,
    CheckpointNotMirrored,
    MissingAnchor,
    UnsupportedSaver,
)
from branchmem.integrations.langgraph.mapping import (
    checkpoint_event_id,
    step_event_id,
    thread_event_id,
)

FACTS = ("user", "facts")


class Turn(TypedDict, total=False):
    said: str
    recalled: list[str]


def remember(state: Turn, *, store: BaseStore) -> Turn:
    store.put(FACTS, state["said"], {"text": state["said"]})
    return {}


def recall(state: Turn, *, store: BaseStore) -> Turn:
    return {"recalled": sorted(item.key for item in store.search(FACTS))}


def build_graph(
    store: BaseStore, checkpointer: BaseCheckpointSaver[Any]
) -> CompiledStateGraph[Any, Any, Any, Any]:
    builder = StateGraph(Turn)
    builder.add_node("remember", remember)
    builder.add_node("recall", recall)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "recall")
    builder.add_edge("recall", END)
    return builder.compile(checkpointer=checkpointer, store=store)


def new_thread() -> RunnableConfig:
    return {"configurable": {"thread_id": f"t-{uuid.uuid4().hex}"}}


def checkpoint_id(config: RunnableConfig) -> str:
    return str(config["configurable"]["checkpoint_id"])


class SlowSaver(InMemorySaver):
    """Saves each checkpoint late, as a remote database under load does."""

    def __init__(self, delay: float) -> None:
        super().__init__()
        self.delay = delay

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        time.sleep(self.delay)
        return super().put(config, checkpoint, metadata, new_versions)


@pytest.fixture
def memory() -> Memory:
    return Memory()


@pytest.fixture
def graph(memory: Memory) -> CompiledStateGraph[Any, Any, Any, Any]:
    return build_graph(BranchStore(memory), BranchCheckpointer(InMemorySaver(), memory))


def test_a_loop_checkpoint_hangs_below_the_step_event_of_its_input(
    graph: CompiledStateGraph[Any, Any, Any, Any], memory: Memory
) -> None:
    thread = new_thread()
    thread_id = thread["configurable"]["thread_id"]
    graph.invoke({"said": "cats"}, thread)
    history = list(graph.get_state_history(thread))[::-1]
    before_remember = next(s for s in history if s.next == ("remember",))
    after_remember = next(s for s in history if s.next == ("recall",))
    x, c = checkpoint_id(before_remember.config), checkpoint_id(after_remember.config)

    event = memory.get_event(checkpoint_event_id(thread_id, c))
    assert event.parent == step_event_id(thread_id, x)
    assert memory.get_event(step_event_id(thread_id, x)).parent == checkpoint_event_id(thread_id, x)
    assert memory.path(event.id)[0].id == thread_event_id(thread_id)
    (fact,) = memory.visible(event.id)
    assert fact.sources == (step_event_id(thread_id, x),)


def test_update_and_replay_forks_hang_below_the_checkpoint_itself(
    graph: CompiledStateGraph[Any, Any, Any, Any], memory: Memory
) -> None:
    thread = new_thread()
    thread_id = thread["configurable"]["thread_id"]
    graph.invoke({"said": "cats"}, thread)
    before = next(s for s in graph.get_state_history(thread) if s.next == ("remember",))
    updated = graph.update_state(before.config, {"said": "dogs"})
    parent = checkpoint_event_id(thread_id, checkpoint_id(before.config))
    assert memory.get_event(checkpoint_event_id(thread_id, checkpoint_id(updated))).parent == (
        parent
    )
    assert memory.head(thread_event_id(thread_id)) == checkpoint_event_id(
        thread_id, checkpoint_id(updated)
    )


def test_reads_wait_for_the_input_checkpoint_to_be_mirrored(memory: Memory) -> None:
    # With durability="async" LangGraph runs the next step before its input checkpoint is
    # saved; without waiting, the step's path would be incomplete and strict mode empty.
    graph = build_graph(BranchStore(memory), BranchCheckpointer(SlowSaver(0.05), memory))
    assert graph.invoke({"said": "cats"}, new_thread())["recalled"] == ["cats"]


def test_a_checkpoint_never_mirrored_is_a_typed_error(memory: Memory) -> None:
    store = BranchStore(memory, wait_timeout=0.05)
    graph = build_graph(store, BranchCheckpointer(SlowSaver(0.5), memory))
    with pytest.raises(CheckpointNotMirrored, match="was not mirrored"):
        graph.invoke({"said": "cats"}, new_thread())


def test_a_plain_checkpointer_is_refused_inside_a_run(memory: Memory) -> None:
    graph = build_graph(BranchStore(memory), InMemorySaver())
    with pytest.raises(InvalidInput, match="BranchCheckpointer"):
        graph.invoke({"said": "cats"}, new_thread())


def test_a_checkpointer_over_another_memory_is_refused(memory: Memory) -> None:
    graph = build_graph(BranchStore(memory), BranchCheckpointer(InMemorySaver(), Memory()))
    with pytest.raises(InvalidInput, match="same Memory"):
        graph.invoke({"said": "cats"}, new_thread())


def test_durability_exit_is_refused(graph: CompiledStateGraph[Any, Any, Any, Any]) -> None:
    with pytest.raises(InvalidInput, match="durability='exit'"):
        graph.invoke({"said": "cats"}, new_thread(), durability="exit")


def test_latest_only_savers_are_refused(memory: Memory) -> None:
    shallow = pytest.importorskip("langgraph.checkpoint.postgres.shallow")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        saver = shallow.ShallowPostgresSaver(conn=None)
    with pytest.raises(UnsupportedSaver, match="ShallowPostgresSaver keeps only the latest"):
        BranchCheckpointer(saver, memory)


def test_wrapping_twice_is_refused(memory: Memory) -> None:
    with pytest.raises(UnsupportedSaver, match="already wrapped"):
        BranchCheckpointer(BranchCheckpointer(InMemorySaver(), memory), memory)


def test_strict_reads_without_an_anchor_return_nothing(
    graph: CompiledStateGraph[Any, Any, Any, Any], memory: Memory
) -> None:
    graph.invoke({"said": "cats"}, new_thread())
    store = BranchStore(memory)
    assert store.search(FACTS) == []
    assert store.get(FACTS, "cats") is None
    assert store.list_namespaces() == []


def test_strict_writes_without_an_anchor_are_refused(memory: Memory) -> None:
    with pytest.raises(MissingAnchor, match="'cats'"):
        BranchStore(memory).put(FACTS, "cats", {"text": "cats"})


def test_compat_writes_without_an_anchor_are_legacy_and_shown() -> None:
    memory = Memory(mode="compat")
    store = BranchStore(memory)
    store.put(FACTS, "tea", {"text": "tea"})
    compat_graph = build_graph(store, BranchCheckpointer(InMemorySaver(), memory))
    assert compat_graph.invoke({"said": "cats"}, new_thread())["recalled"] == ["cats", "tea"]
    assert memory.report()["store"]["legacy_revisions"] == 1


def test_explicit_anchor_writes_stay_on_their_branch(
    graph: CompiledStateGraph[Any, Any, Any, Any], memory: Memory
) -> None:
    thread = new_thread()
    graph.invoke({"said": "cats"}, thread)
    before = next(s for s in graph.get_state_history(thread) if s.next == ("remember",))
    sibling = graph.update_state(before.config, {"said": "dogs"})
    head_of_cats = next(s for s in graph.get_state_history(thread) if not s.next).config
    store = BranchStore(memory)

    store.at(head_of_cats).put(FACTS, "fish", {"text": "fish", "age": 3})
    assert store.at(head_of_cats).get(FACTS, "fish") is not None
    assert store.at(sibling).get(FACTS, "fish") is None

    store.at(head_of_cats).delete(FACTS, "cats")
    assert [i.key for i in store.at(head_of_cats).search(FACTS)] == ["fish"]
    assert store.at(before.config).get(FACTS, "cats") is None  # written after `before`


def test_search_filters_and_pages_like_the_stock_store(
    graph: CompiledStateGraph[Any, Any, Any, Any], memory: Memory
) -> None:
    thread = new_thread()
    graph.invoke({"said": "cats"}, thread)
    view = BranchStore(memory).at(graph.get_state(thread).config)
    for age, name in enumerate(["ann", "bob", "cid"]):
        view.put(("user", "friends", name[0]), name, {"name": name, "age": age, "tags": ["x"]})

    def names(found: Sequence[Any]) -> list[str]:
        return sorted(item.key for item in found)

    assert names(view.search(("user", "friends"), filter={"age": {"$gte": 1}})) == ["bob", "cid"]
    assert names(view.search(("user",), filter={"name": "ann", "tags": ["x"]})) == ["ann"]
    assert names(view.search(("user", "friends"), filter={"age": {"$ne": 0}})) == ["bob", "cid"]
    assert len(view.search(("user",), limit=2)) == 2
    assert len(view.search(("user",), limit=10, offset=3)) == 1  # cats + three friends
    with pytest.raises(InvalidInput, match=r"\$in"):
        view.search(("user",), filter={"age": {"$in": [1]}})


def test_list_namespaces_matches_and_truncates(
    graph: CompiledStateGraph[Any, Any, Any, Any], memory: Memory
) -> None:
    thread = new_thread()
    graph.invoke({"said": "cats"}, thread)
    view = BranchStore(memory).at(graph.get_state(thread).config)
    view.put(("user", "friends", "a"), "ann", {"name": "ann"})
    view.put(("team", "friends", "b"), "bob", {"name": "bob"})
    assert view.list_namespaces(prefix=("user",)) == [("user", "facts"), ("user", "friends", "a")]
    assert view.list_namespaces(suffix=("b",)) == [("team", "friends", "b")]
    assert view.list_namespaces(max_depth=1) == [("team",), ("user",)]
    prefix = MatchCondition(match_type="prefix", path=("*", "friends"))
    assert view.list_namespaces(prefix=prefix.path) == [
        ("team", "friends", "b"),
        ("user", "friends", "a"),
    ]


def test_updating_an_item_keeps_its_created_at(
    graph: CompiledStateGraph[Any, Any, Any, Any], memory: Memory
) -> None:
    thread = new_thread()
    graph.invoke({"said": "cats"}, thread)
    view = BranchStore(memory).at(graph.get_state(thread).config)
    first = view.get(FACTS, "cats")
    assert first is not None
    view.put(FACTS, "cats", {"text": "cats, two of them"})
    second = view.get(FACTS, "cats")
    assert second is not None
    assert second.value == {"text": "cats, two of them"}
    assert second.created_at == first.created_at
    assert second.updated_at >= first.updated_at


def test_anchor_configs_are_checked(memory: Memory) -> None:
    store = BranchStore(memory)
    with pytest.raises(InvalidInput, match="thread_id"):
        store.at({"configurable": {}})
    thread = new_thread()
    unknown: RunnableConfig = {"configurable": {**thread["configurable"], "checkpoint_id": "nope"}}
    with pytest.raises(NotFoundError, match="'nope'"):
        store.at(unknown).search(FACTS)
    subgraph: RunnableConfig = {
        "configurable": {**thread["configurable"], "checkpoint_ns": "sub:1"}
    }
    with pytest.raises(InvalidInput, match="'sub:1'"):
        store.at(subgraph).search(FACTS)


def test_mirror_thread_adopts_history_saved_before_the_wrapper(memory: Memory) -> None:
    saver = InMemorySaver()
    thread = new_thread()
    thread_id = thread["configurable"]["thread_id"]

    def note(state: Turn) -> Turn:
        return {}

    builder = StateGraph(Turn)
    builder.add_node("note", note)
    builder.add_edge(START, "note")
    builder.add_edge("note", END)
    builder.compile(checkpointer=saver).invoke({"said": "cats"}, thread)

    wrapper = BranchCheckpointer(saver, memory)
    assert wrapper.mirror_thread(thread_id) == 3  # input, before note, after note
    head = checkpoint_id(saver.get_tuple(thread).config)  # type: ignore[union-attr]
    assert memory.head(thread_event_id(thread_id)) == checkpoint_event_id(thread_id, head)


def test_the_example_shows_the_stock_store_leaking_and_branchmem_not() -> None:
    example = Path(__file__).resolve().parent.parent / "examples" / "langgraph_fork.py"
    if not example.exists():
        pytest.skip("examples/ is not part of this checkout")
    run = runpy.run_path(str(example))["run"]
    assert run(InMemoryStore(), InMemorySaver()) == (["likes cats"], ["likes cats", "likes dogs"])
    memory = Memory()
    assert run(BranchStore(memory), BranchCheckpointer(InMemorySaver(), memory)) == (
        ["likes cats"],
        ["likes dogs"],
    )


def test_writes_of_an_interrupted_step_count_only_if_the_step_completes(memory: Memory) -> None:
    def ask(state: Turn, *, store: BaseStore) -> Turn:
        store.put(FACTS, "draft", {"text": "draft"})
        return {"said": str(interrupt("confirm?"))}

    builder = StateGraph(Turn)
    builder.add_node("ask", ask)
    builder.add_node("recall", recall)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", "recall")
    builder.add_edge("recall", END)
    graph = builder.compile(
        checkpointer=BranchCheckpointer(InMemorySaver(), memory), store=BranchStore(memory)
    )
    resumed, abandoned = new_thread(), new_thread()
    for thread in (resumed, abandoned):
        graph.invoke({"said": "hi"}, thread)
    assert graph.invoke(Command(resume="yes"), resumed)["recalled"] == ["draft"]

    paused_at = graph.get_state(abandoned).config
    sibling = graph.update_state(paused_at, {"said": "never mind"}, as_node="ask")
    view = BranchStore(memory, cross_thread=False)
    assert view.at(sibling).search(FACTS) == []
