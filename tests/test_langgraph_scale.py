"""BranchStore at agent scale: reads through the key index and the read cache, sync runs on
a thread with a running event loop, TTL refresh on search, distance types, and capabilities
the wrapped saver lacks (docs/langgraph.md)."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any, TypedDict

import pytest

pytest.importorskip("langgraph")

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore

from branchmem import InvalidInput, Memory
from branchmem.integrations.langgraph import BranchCheckpointer, BranchStore
from branchmem.integrations.langgraph import gated as langgraph_store
from branchmem.integrations.langgraph.mapping import thread_event_id
from branchmem.store.inmemory import InMemoryStore as InMemoryBackend
from branchmem.testing.differential import index_reads
from timing import Clock, deadline

NS = ("agent", "u1")


class Turn(TypedDict):
    i: int


def agent_turn(state: Turn, *, store: BaseStore) -> dict[str, Any]:
    store.put(NS, f"k{state['i'] % 3}", {"value": state["i"]})
    return {}


def agent_graph(memory: Memory, store: BaseStore) -> Any:
    builder = StateGraph(Turn)
    builder.add_node("turn", agent_turn)
    builder.add_edge(START, "turn")
    builder.add_edge("turn", END)
    return builder.compile(checkpointer=BranchCheckpointer(InMemorySaver(), memory), store=store)


def thread(name: str | None = None) -> RunnableConfig:
    return {"configurable": {"thread_id": name or f"t-{uuid.uuid4().hex}"}}


def thread_head(memory: Memory, name: str) -> RunnableConfig:
    """A thread with one checkpoint mirrored into ``memory``; its config (the head)."""
    config: Any = {"configurable": {"thread_id": name, "checkpoint_ns": ""}}
    BranchCheckpointer(InMemorySaver(), memory).put(
        config, empty_checkpoint(), {"source": "input", "step": -1, "parents": {}}, {}
    )
    return {"configurable": {"thread_id": name}}


class CountingBackend(InMemoryBackend):
    """branchmem's in-memory store, counting what a read takes from it: one per scalar
    answer, the length of a collection answer (events of a path, revisions of a tree...)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: Counter[str] = Counter()

    def __getattribute__(self, name: str) -> Any:
        found = super().__getattribute__(name)
        if name.startswith("_") or not callable(found):
            return found
        calls = super().__getattribute__("calls")

        def counted(*args: Any, **kwargs: Any) -> Any:
            answer = found(*args, **kwargs)
            sized = isinstance(answer, list | tuple | dict | set | frozenset)
            calls[name] += len(answer) if sized else 1
            return answer

        return counted


def cold_search_calls(steps: int) -> int:
    """What one search right after a write reads from the store, after ``steps`` steps."""
    backend = CountingBackend()
    memory = Memory(store=backend)
    store = BranchStore(memory)
    config = thread("agent")
    graph = agent_graph(memory, store)
    for i in range(steps):
        graph.invoke({"i": i}, config)
    view = store.at(config)
    view.put(NS, "k0", {"value": -1})
    backend.calls.clear()
    found = view.search(("agent",))
    assert sorted(item.key for item in found) == ["k0", "k1", "k2"]
    return sum(backend.calls.values())


def test_search_reads_the_live_keys_not_the_history() -> None:
    """The old search built the whole view: what it read grew with every step (99 at 15
    steps, 1449 at 240); now only the ancestor tests' jumps grow, logarithmically."""
    assert cold_search_calls(240) <= cold_search_calls(15) + 8


def test_cached_reads_follow_every_write_to_the_memory() -> None:
    memory = Memory()
    store = BranchStore(memory)
    config = thread("agent")
    graph = agent_graph(memory, store)
    graph.invoke({"i": 0}, config)
    view = store.at(config)
    assert [item.value for item in view.search(NS)] == [{"value": 0}]
    assert view.get(NS, "k0") is not None
    graph.invoke({"i": 3}, config)  # the head moves; k0 is rewritten
    assert view.get(NS, "k0").value == {"value": 3}  # type: ignore[union-attr]
    assert [item.value for item in view.search(NS)] == [{"value": 3}]
    view.delete(NS, "k0")
    assert view.get(NS, "k0") is None and view.search(NS) == []
    # another thread's head counts (cross-thread), written by another view of the store
    other = store.at(thread_head(memory, "other"))
    other.put(NS, "shared", {"value": "x"})
    assert view.get(NS, "shared") is not None
    assert [item.key for item in view.search(("agent",))] == ["shared"]


def test_cached_and_uncached_reads_agree() -> None:
    """The same writes on a store with the cache and one without (SQLite-like backends)."""
    memory = Memory()
    cached = BranchStore(memory).at(thread_head(memory, "a"))
    uncached = BranchStore(memory).at({"configurable": {"thread_id": "a"}})
    uncached._cache = None
    for i in range(12):
        cached.put(("n", str(i % 2)), f"k{i % 5}", {"i": i, "even": i % 2 == 0})
        if i % 4 == 3:
            cached.delete(("n", "1"), f"k{i % 5}")
        for prefix in ((), ("n",), ("n", "0"), ("n", "1"), ("x",)):
            for filter in (None, {"even": True}):
                assert _keys(cached.search(prefix, filter=filter, limit=50)) == _keys(
                    uncached.search(prefix, filter=filter, limit=50)
                )
        assert cached.list_namespaces() == uncached.list_namespaces()
        for key in ("k0", "k1", "k4"):
            assert cached.get(("n", "0"), key) == uncached.get(("n", "0"), key)


def _keys(items: list[Any]) -> list[tuple[tuple[str, ...], str, Any]]:
    return sorted((item.namespace, item.key, item.value["i"]) for item in items)


def test_sync_invoke_works_on_a_thread_with_a_running_event_loop() -> None:
    """A notebook: sync ``graph.invoke`` (sync nodes) from a coroutine. It raised
    InvalidStateError; only async runs must refuse sync store calls on their loop."""
    memory = Memory()
    store = BranchStore(memory)
    graph = agent_graph(memory, store)
    config = thread()

    async def cell() -> None:
        for i in range(3):
            graph.invoke({"i": i}, config)

    asyncio.run(cell())
    assert len(store.at(config).search(NS)) == 3


def test_an_async_node_calling_sync_store_methods_is_still_refused() -> None:
    memory = Memory()
    store = BranchStore(memory)

    async def bad(state: Turn, *, store: BaseStore) -> dict[str, Any]:
        store.put(NS, "k", {"value": state["i"]})
        return {}

    builder = StateGraph(Turn)
    builder.add_node("bad", bad)
    builder.add_edge(START, "bad")
    builder.add_edge("bad", END)
    graph = builder.compile(checkpointer=BranchCheckpointer(InMemorySaver(), memory), store=store)
    with pytest.raises(asyncio.InvalidStateError):
        asyncio.run(graph.ainvoke({"i": 0}, thread()))


def test_search_with_refresh_ttl_refreshes_the_ttl() -> None:
    memory = Memory()
    store = BranchStore(memory, ttl={"default_ttl": 1.0, "refresh_on_read": True}).at(
        thread_head(memory, "a")
    )
    store.put(NS, "k", {"v": 1})
    record = memory.current('langgraph:["agent", "u1", "k"]', memory.head(thread_event_id("a")))
    assert record is not None
    first = float(record.meta["expires_at"])
    time.sleep(0.05)
    store.search(NS, refresh_ttl=False)
    assert store._expires(record) == first
    store.search(NS, refresh_ttl=True)
    refreshed = store._expires(record)
    assert refreshed is not None and refreshed > first


@pytest.mark.parametrize(
    ("distance", "best", "score"),
    [
        ("cosine", "long", 1.0),  # same direction as the query, whatever the length
        ("inner_product", "long", 10.0),
        ("l2", "near", -1.0),  # PostgresStore's l2 score: minus the distance
    ],
)
def test_distance_type_is_honoured(distance: str, best: str, score: float) -> None:
    vectors = {"q": [1.0, 0.0], "long": [10.0, 0.0], "near": [1.0, 1.0]}

    def embed(texts: Any) -> list[list[float]]:
        return [vectors[text] for text in texts]

    memory = Memory()
    index: Any = {"dims": 2, "embed": embed, "fields": ["t"], "distance_type": distance}
    store = BranchStore(memory, index=index).at(thread_head(memory, "a"))
    store.put(NS, "long", {"t": "long"})
    store.put(NS, "near", {"t": "near"})
    found = store.search(NS, query="q")
    assert found[0].key == best
    assert found[0].score == pytest.approx(score)


def test_an_unknown_distance_type_is_refused() -> None:
    with pytest.raises(InvalidInput, match="hamming"):
        BranchStore(Memory(), index={"dims": 2, "embed": lambda t: [], "distance_type": "hamming"})  # type: ignore[typeddict-item]


@pytest.mark.parametrize("saver", ["sqlite", "postgres"])
def test_the_checkpointer_has_no_capability_the_saver_lacks(saver: str) -> None:
    """SqliteSaver has no adelete_thread or aput_writes; PostgresSaver no async method."""
    from langgraph.checkpoint.base import BaseCheckpointSaver

    if saver == "sqlite":
        from langgraph.checkpoint.sqlite import SqliteSaver as Saver
    else:
        Saver = pytest.importorskip("langgraph.checkpoint.postgres").PostgresSaver
    wrapper = type(BranchCheckpointer.__new__(BranchCheckpointer, Saver.__new__(Saver)))
    for name in ("aget_tuple", "alist", "aput", "aput_writes", "delete_thread", "adelete_thread"):
        lacks = getattr(Saver, name) is getattr(BaseCheckpointSaver, name)
        assert (getattr(wrapper, name) is getattr(BaseCheckpointSaver, name)) == lacks, name


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("cross_tree", [False, True])
@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_currents_is_current_of_every_key(
    seed: int, cross_tree: bool, backend: str, tmp_path: Path
) -> None:
    """``Memory.currents`` (what search reads) against ``current`` key by key, on random
    forked trees with heads, rewrites, retractions and supersedes, at every event; and
    None (read the whole view) at a shallow anchor with more keys than path events."""
    import random

    rng = random.Random(seed)
    memory = Memory() if backend == "memory" else Memory.open(tmp_path / "m.db")
    events: list[str] = []
    for tree in range(3):
        root = f"r{tree}"
        memory.add_event(root)
        events.append(root)
        for i in range(12):
            event = f"e{tree}.{i}"
            memory.add_event(event, rng.choice([e for e in events if e[1:2] == root[1:]]))
            events.append(event)
        memory.set_head(rng.choice([e for e in events if e[1:2] == root[1:]]))
    records: list[str] = []
    for i in range(40):
        source, key = rng.choice(events), f"k{rng.randrange(6)}"
        roll = rng.random()
        if roll < 0.15 and records:
            memory.retract(f"x{i}", sources=[source], targets=[rng.choice(records)])
        elif roll < 0.25:
            memory.retract(f"x{i}", sources=[source], key=key)
        elif roll < 0.3 and len(records) > 1:
            memory.supersede(records[-1], rng.choice(records[:-1]))
        else:
            memory.add_record(f"w{i}", sources=[source], content=str(i), key=key)
            records.append(f"w{i}")
    shown = 0
    for anchor in events:
        with index_reads(memory, 0):  # whenever the anchor allows, however shallow
            found = memory.currents(anchor, prefix="k", cross_tree=cross_tree)
        assert found is not None
        expected = [memory.current(f"k{k}", anchor, cross_tree=cross_tree) for k in range(6)]
        assert [r.id for r in found] == [r.id for r in expected if r is not None], anchor
        shown += len(found)
    assert memory.currents("r0", prefix="k", cross_tree=cross_tree) is None
    memory.close()
    assert shown > len(events)  # not a comparison of empty answers


def test_uncached_reads_hide_expired_items(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Over SQLite (no read cache) an expired item was still found by search."""
    clock = Clock()
    monkeypatch.setattr(langgraph_store, "time", clock)
    memory = Memory.open(tmp_path / "m.db")
    store = BranchStore(memory).at(thread_head(memory, "a"))
    store.put(NS, "k", {"v": 1}, ttl=0.001)  # 60 ms
    assert len(store.search(NS)) == 1
    clock.now += 0.1
    assert store.search(NS) == [] and store.get(NS, "k") is None
    memory.close()


class RecordingStore(BranchStore):
    """A BranchStore that notes the size of every batch it runs."""

    sizes: list[int]

    def batch(self, ops: Any) -> list[Any]:
        ops = list(ops)
        self.sizes.append(len(ops))
        return super().batch(ops)


def test_concurrent_async_calls_on_a_view_run_as_few_batches() -> None:
    """LangGraph's large-batch tests issue thousands of calls at once: on a view with an
    explicit anchor they run together (one stamp read, one write transaction per batch),
    each caller still getting its own answer."""
    memory = Memory()
    store = RecordingStore(memory, config=thread_head(memory, "a"))
    store.sizes = []

    async def calls() -> list[Any]:
        await asyncio.gather(*(store.aput(NS, f"k{i}", {"i": i}) for i in range(20)))
        return await asyncio.gather(
            *(store.aget(NS, f"k{i}") for i in range(20)), store.asearch(NS, limit=50)
        )

    *items, found = asyncio.run(calls())
    assert [item.value["i"] for item in items] == list(range(20))
    assert sorted(item.value["i"] for item in found) == list(range(20))
    assert len(store.sizes) <= 4 and sum(store.sizes) == 41


def test_an_error_fails_the_calls_of_its_batch_and_writes_none_of_them() -> None:
    memory = Memory()
    store = BranchStore(memory, config=thread_head(memory, "a"))

    async def calls() -> list[Any]:
        return await asyncio.gather(
            store.aput(NS, "a", {"v": 1}),
            store.aput(NS, "b", "not a dict"),  # type: ignore[arg-type]
            return_exceptions=True,
        )

    outcomes = asyncio.run(calls())
    assert all(isinstance(outcome, InvalidInput) for outcome in outcomes)
    assert store.get(NS, "a") is None  # the batch is one transaction, refused before writing
    asyncio.run(store.aput(NS, "a", {"v": 1}))
    assert store.get(NS, "a") is not None


class HeldStore(BranchStore):
    """A BranchStore whose first batch waits until ``callers`` calls are queued behind it,
    and which notes the size of every batch it runs (the ops of all the calls it joined)."""

    sizes: list[int]
    callers: int

    def _batch(self, ops: list[Any]) -> list[Any]:
        if not self.sizes:
            until = deadline(10)
            while len(self._thread_calls.waiting) < self.callers and time.monotonic() < until:
                time.sleep(0.001)
        self.sizes.append(len(ops))
        return super()._batch(ops)


def held_view(callers: int) -> HeldStore:
    memory = Memory()
    store = HeldStore(memory, config=thread_head(memory, "a"))
    store.sizes, store.callers = [], callers
    return store


def in_threads(calls: list[Any]) -> list[Any]:
    """Each call on a thread of its own, started together; their outcomes, in order."""
    outcomes: list[Any] = [None] * len(calls)

    def run(number: int) -> None:
        try:
            outcomes[number] = calls[number]()
        except Exception as error:
            outcomes[number] = error

    threads = [threading.Thread(target=run, args=(n,)) for n in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not any(thread.is_alive() for thread in threads)
    return outcomes


def test_concurrent_sync_calls_on_a_view_run_as_few_batches() -> None:
    """The sync twin of the async test above: threads calling one explicit-anchor view
    while a batch runs join the next one, each still getting its own answer. (A get the
    cache answers makes no batch at all.)"""
    store = held_view(callers=9)
    puts = in_threads([lambda i=i: store.put(NS, f"k{i}", {"i": i}) for i in range(10)])
    assert puts == [None] * 10
    assert store.sizes[0] == 1 and sum(store.sizes) == 10 and len(store.sizes) <= 3
    store.sizes.clear()
    got = in_threads(
        [lambda i=i: store.search(NS, filter={"i": i}) for i in range(10)]
        + [lambda: store.search(NS, limit=50)]
    )
    assert [[item.value["i"] for item in found] for found in got[:10]] == [[i] for i in range(10)]
    assert sorted(item.value["i"] for item in got[10]) == list(range(10))
    assert sum(store.sizes) == 11 and len(store.sizes) <= 3
    store.sizes.clear()
    found = store.get(NS, "k3")
    assert found is not None and found.value == {"i": 3} and store.sizes == []


def test_an_error_fails_the_sync_calls_of_its_batch_and_writes_none_of_them() -> None:
    store = held_view(callers=2)  # the first call's batch waits for the two behind it
    outcomes = in_threads(
        [
            lambda: store.get(NS, "first"),
            lambda: store.put(NS, "a", {"v": 1}),
            lambda: store.put(NS, "b", "not a dict"),  # type: ignore[arg-type]
        ]
    )
    assert outcomes[0] is None
    assert all(isinstance(outcome, InvalidInput) for outcome in outcomes[1:])
    assert store.sizes == [1, 2]  # the two puts ran as one batch, refused before writing
    assert store.get(NS, "a") is None
    store.put(NS, "a", {"v": 1})
    assert store.get(NS, "a") is not None


def test_a_view_called_again_from_inside_its_own_batch_does_not_wait_for_itself() -> None:
    class Reentrant(BranchStore):
        def _batch(self, ops: list[Any]) -> list[Any]:
            if ops and getattr(ops[0], "key", None) == "outer":
                self.get(NS, "inner")  # e.g. an embedder that reads the store
            return super()._batch(ops)

    memory = Memory()
    store = Reentrant(memory, config=thread_head(memory, "a"))
    [outcome] = in_threads([lambda: store.get(NS, "outer")])
    assert outcome is None
