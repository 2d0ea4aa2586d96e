"""The read cache of ``BranchStore`` (candidate sets, BM25 statistics and ranked answers
kept per Memory generation) against the uncached reads, over random sequences of puts,
deletes, TTL changes and reads, on forked threads and on views that switch branches
(docs/langgraph.md, "Read cache")."""

from __future__ import annotations

import random
import time
import uuid
from pathlib import Path
from typing import Any, TypedDict

import pytest

from timing import Clock

pytest.importorskip("langgraph")

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore

from branchmem import ConflictError, Memory
from branchmem.integrations.langgraph import BranchCheckpointer, BranchStore
from branchmem.integrations.langgraph import gated as langgraph_store
from branchmem.integrations.langgraph.store import item_key

KEYS = 12  # more candidates than 10: ids "10", "11" sort before "2"
WORDS = ["cat", "dog", "fish", "tea", "paris", "rain", "chess", "cats"]
NAMESPACES = [("n", "a"), ("n", "b"), ("m",), ("n", "a", "deep")]
PREFIXES = [(), ("n",), ("n", "a"), ("m",), ("x",)]
QUERIES = ["cat", "dog fish", "tea paris rain", "zzz", "", "ca", "CATS", "chess cat"]
FILTERS: list[dict[str, Any] | None] = [None, {"even": True}, {"n": {"$gt": 3}}, {"w": "tea"}]


class Turn(TypedDict, total=False):
    key: str
    i: int


def turn(state: Turn, *, store: BaseStore) -> dict[str, Any]:
    """A step that may write one item: the reads that follow it see a new generation."""
    if "key" in state:
        store.put(NAMESPACES[0], state["key"], {"i": state.get("i", 0), "w": "cat"})
    return {}


def value(rng: random.Random, i: int) -> dict[str, Any]:
    # few distinct texts: equal scores, where the tie-break decides the order
    words = " ".join(rng.choice(WORDS[:3]) for _ in range(rng.randrange(1, 3)))
    return {"text": words, "w": rng.choice(WORDS[:4]), "n": rng.randrange(6), "even": i % 2 == 0}


def answers(view: BranchStore, op: tuple[Any, ...]) -> Any:
    """One read, as comparable data (scores included, order kept)."""
    name, *args = op
    if name == "search":
        prefix, query, conditions, offset, limit, refresh = args
        found = view.search(
            prefix, query=query, filter=conditions, offset=offset, limit=limit, refresh_ttl=refresh
        )
        return [item.dict() for item in found]
    if name == "get":
        item = view.get(*args)
        return None if item is None else item.dict()
    return view.list_namespaces(prefix=args[0] or None)


def random_read(rng: random.Random) -> tuple[Any, ...]:
    roll = rng.random()
    if roll < 0.7:
        return (
            "search",
            rng.choice(PREFIXES),
            rng.choice([None, *QUERIES]),
            rng.choice(FILTERS),
            rng.choice([0, 0, 1, 3]),
            rng.choice([2, 10, 50]),
            rng.random() < 0.3,
        )
    if roll < 0.9:
        return ("get", rng.choice(NAMESPACES), f"k{rng.randrange(KEYS)}")
    return ("list", rng.choice(PREFIXES))


def open_memory(backend: str, folder: Path) -> Memory:
    return Memory() if backend == "memory" else Memory.open(folder / "m.db")


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_cached_reads_equal_uncached_reads(seed: int, backend: str, tmp_path: Path) -> None:
    """Over the in-memory store the cache is stamped with the write generation, over SQLite
    with the namespace's arrival counter; puts and deletes patch it."""
    rng = random.Random(seed)
    memory = open_memory(backend, tmp_path)
    store = BranchStore(memory, ttl={"default_ttl": 30.0, "refresh_on_read": True})
    builder = StateGraph(Turn)
    builder.add_node("turn", turn)
    builder.add_edge(START, "turn")
    builder.add_edge("turn", END)
    graph = builder.compile(checkpointer=BranchCheckpointer(InMemorySaver(), memory), store=store)
    threads: list[RunnableConfig] = [
        {"configurable": {"thread_id": f"t{n}-{uuid.uuid4().hex[:6]}"}} for n in range(2)
    ]
    for thread in threads:
        graph.invoke({}, thread)
    compared = served = 0
    for step in range(70):
        thread = rng.choice(threads)
        history = [state.config for state in graph.get_state_history(thread)]
        roll = rng.random()
        if roll < 0.1:  # a graph step, which may write
            wanted: Turn = (
                {"key": f"k{rng.randrange(KEYS)}", "i": step} if rng.random() < 0.5 else {}
            )
            graph.invoke(wanted, thread)
            continue
        if roll < 0.2:  # a fork from an earlier checkpoint: a branch switch for the head
            graph.update_state(rng.choice(history), {})
            continue
        # a view at the head, or at any checkpoint of the thread's history
        config = thread if rng.random() < 0.5 else rng.choice(history)
        cached = store.at(config)
        uncached = store.at(config)
        uncached._cache = None
        roll = rng.random()
        if roll < 0.4:
            namespace = rng.choice(NAMESPACES)
            ttl = rng.choice([None, None, 5.0])
            cached.put(namespace, f"k{rng.randrange(KEYS)}", value(rng, step), ttl=ttl)
        elif roll < 0.47:
            cached.delete(rng.choice(NAMESPACES), f"k{rng.randrange(KEYS)}")
        elif roll < 0.55:  # expire or revive an item without a write (as the TTL suites do)
            anchor = cached._place().anchor
            namespace, key = rng.choice(NAMESPACES), f"k{rng.randrange(KEYS)}"
            record = memory.current(item_key(namespace, key), anchor, cross_tree=True)
            if record is not None:
                shift = rng.choice([-60.0, 600.0])
                store._refreshed[(record.id, record.revision)] = time.time() + shift
        for _ in range(4):
            read = random_read(rng)
            first = answers(cached, read)  # fills the cache, or is served by it
            assert answers(uncached, read) == first, (seed, step, read)
            assert answers(cached, read) == first, (seed, step, read)
            compared += bool(first)
            assert store._cache is not None
            served += sum(bool(c.by_query) for c in store._cache.candidates.values())
    memory.close()
    assert compared > 30  # not a comparison of empty answers
    assert served > 10  # and the cache answered ranked queries


def test_a_write_by_another_memory_on_the_same_database_is_seen(tmp_path: Path) -> None:
    """Another process writing the SQLite file moves the arrival counter: the cache of a
    store that did not write is emptied, not served."""
    ours, theirs = Memory.open(tmp_path / "m.db"), Memory.open(tmp_path / "m.db")
    thread: RunnableConfig = {"configurable": {"thread_id": "t"}}
    BranchCheckpointer(InMemorySaver(), ours).put(
        {"configurable": {"thread_id": "t", "checkpoint_ns": ""}},
        empty_checkpoint(),
        {"source": "input", "step": -1, "parents": {}},
        {},
    )
    mine, other = BranchStore(ours).at(thread), BranchStore(theirs).at(thread)
    mine.put(("n",), "a", {"text": "cat"})
    assert [i.key for i in mine.search(("n",), query="cat")] == ["a"]
    assert mine._cache is not None and mine._cache.items  # served from the cache from now on
    other.put(("n",), "b", {"text": "cat cat"})
    other.delete(("n",), "a")
    mine.put(("n",), "c", {"text": "dog"})  # patches nothing: the cache predates their writes
    assert [i.key for i in mine.search(("n",), query="cat")] == ["b", "c"]
    assert mine.get(("n",), "a") is None
    ours.close()
    theirs.close()


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_an_item_leaves_cached_search_when_it_expires_without_a_write(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cached candidates are kept until the earliest expiry among them, or until a TTL
    assignment may expire or revive one: no write is needed to drop an expired item."""
    clock = Clock()
    monkeypatch.setattr(langgraph_store, "time", clock)
    memory = open_memory(backend, tmp_path)
    store = BranchStore(memory)
    graph = StateGraph(Turn)
    graph.add_node("turn", turn)
    graph.add_edge(START, "turn")
    graph.add_edge("turn", END)
    compiled = graph.compile(checkpointer=BranchCheckpointer(InMemorySaver(), memory))
    thread: RunnableConfig = {"configurable": {"thread_id": "t"}}
    compiled.invoke({}, thread)
    view = store.at(thread)
    view.put(("n",), "short", {"text": "cat"}, ttl=0.001)  # 60 ms
    view.put(("n",), "long", {"text": "cat dog"}, ttl=10.0)
    assert {i.key for i in view.search(("n",), query="cat")} == {"short", "long"}
    clock.now += 0.1
    assert [i.key for i in view.search(("n",), query="cat")] == ["long"]
    record = memory.current(item_key(("n",), "long"), view._place().anchor, cross_tree=True)
    assert record is not None
    view._refreshed[(record.id, record.revision)] = clock.now - 60.0  # expired now
    assert view.search(("n",), query="cat") == []
    view._refreshed[(record.id, record.revision)] = clock.now + 60.0  # revived
    assert [i.key for i in view.search(("n",), query="cat")] == ["long"]
    memory.close()


def test_a_rolled_back_write_leaves_the_stamp_at_the_database_value(tmp_path: Path) -> None:
    """The SQL stores' arrival counter is the cache's stamp: a write that rolled back used
    to leave the numbers it drew behind, so the stamp read next ran ahead of the database
    (and could later match a state the cache never saw)."""
    memory = Memory.open(tmp_path / "m.db")
    memory.add_event("e")
    stamp = memory.store._current_seq("default")  # type: ignore[attr-defined]
    with pytest.raises(ConflictError, match="r1"):
        memory.add_records(
            [
                {"id": "r1", "sources": ["e"], "content": "x"},
                {"id": "r1", "sources": ["e"], "content": "y"},
            ]
        )
    assert memory.store._current_seq("default") == stamp  # type: ignore[attr-defined]
    memory.close()
