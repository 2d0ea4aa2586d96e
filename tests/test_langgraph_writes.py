"""BranchStore's writes: a batch of puts is one write transaction that finds where it stands
inside itself, makes one nested write for its items, and updates the read cache only once
it has committed (docs/langgraph.md, "What a put costs")."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph")

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.config import get_config
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore, PutOp
from typing_extensions import TypedDict

from branchmem import InvalidInput, Memory
from branchmem.errors import StorageError
from branchmem.integrations.langgraph import BranchCheckpointer, BranchStore
from branchmem.integrations.langgraph.mapping import step_event_id
from branchmem.store.inmemory import InMemoryStore as InMemoryBackend
from pg import counting_store, fresh_database

NS = ("agent", "u1")


def head_view(memory: Memory, name: str = "t") -> BranchStore:
    """A store at the head of a thread with one checkpoint mirrored into ``memory``."""
    config: Any = {"configurable": {"thread_id": name, "checkpoint_ns": ""}}
    BranchCheckpointer(InMemorySaver(), memory).put(
        config, empty_checkpoint(), {"source": "input", "step": -1, "parents": {}}, {}
    )
    return uncached_view(memory, name)


def uncached_view(memory: Memory, name: str = "t") -> BranchStore:
    """Another store at the thread's head: its reads fill its own cache from the Memory."""
    head: RunnableConfig = {"configurable": {"thread_id": name}}
    return BranchStore(memory).at(head)


@pytest.fixture(params=["memory", "sqlite"])
def memory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Memory]:
    with Memory() if request.param == "memory" else Memory.open(tmp_path / "m.db") as opened:
        yield opened


def test_a_batch_whose_put_is_refused_writes_nothing(memory: Memory) -> None:
    """The batch's transaction rolls back: its delete, written before the put that fails,
    shows neither in the Memory nor in the cache."""
    view = head_view(memory)
    view.put(NS, "k0", {"v": 1})
    view.put(NS, "k1", {"v": 1})
    assert view.get(NS, "k1") is not None  # the cache holds both
    with pytest.raises(InvalidInput):
        view.batch(
            [
                PutOp(NS, "k1", None),
                PutOp(NS, "k0", {"v": 2}, index=[object()]),  # type: ignore[list-item]
            ]
        )
    assert view.get(NS, "k1") is not None
    assert view.get(NS, "k0").value == {"v": 1}  # type: ignore[union-attr]
    fresh = uncached_view(memory)  # what the Memory holds
    assert fresh.get(NS, "k1") is not None
    assert fresh.get(NS, "k0").value == {"v": 1}  # type: ignore[union-attr]


class FailingCommit(InMemoryBackend):
    """branchmem's in-memory store whose outermost transaction fails as it ends, once
    ``failing`` is set (a COMMIT the server refuses): everything in it rolls back."""

    failing = False

    @contextmanager
    def transaction(self, namespace: str | None = None) -> Iterator[None]:
        outermost = self._journal is None
        with super().transaction(namespace):
            yield
            if outermost and self.failing:
                raise StorageError("the commit failed")


def test_a_batch_whose_commit_fails_leaves_the_cache_as_it_was() -> None:
    """The cache is patched with a batch's writes only once they have committed."""
    backend = FailingCommit()
    memory = Memory(store=backend)
    view = head_view(memory)
    view.put(NS, "k0", {"v": 1})
    view.put(NS, "k1", {"v": 1})
    assert view.get(NS, "k1") is not None  # the cache holds both
    backend.failing = True
    with pytest.raises(StorageError):
        view.batch([PutOp(NS, "k1", None), PutOp(NS, "k0", {"v": 2})])
    backend.failing = False
    assert view.get(NS, "k1") is not None
    assert view.get(NS, "k0").value == {"v": 1}  # type: ignore[union-attr]


def test_a_batch_of_puts_and_deletes_lands_whole(memory: Memory) -> None:
    """Puts and deletes of one batch are one transaction, each item as put, last put of a
    key winning; created_at is kept across revisions."""
    view = head_view(memory)
    view.put(NS, "a", {"v": 0})
    created = view.get(NS, "a").created_at  # type: ignore[union-attr]
    view.batch(
        [
            PutOp(NS, "a", {"v": 1}),
            PutOp(NS, "b", {"v": 1}),
            PutOp(NS, "c", {"v": 1}),
            PutOp(NS, "b", None),
            PutOp(NS, "a", {"v": 2}),
        ]
    )
    for reader in (view, uncached_view(memory)):
        assert reader.get(NS, "a").value == {"v": 2}  # type: ignore[union-attr]
        assert reader.get(NS, "a").created_at == created  # type: ignore[union-attr]
        assert reader.get(NS, "b") is None
        assert reader.get(NS, "c").value == {"v": 1}  # type: ignore[union-attr]


# -- inside a run ------------------------------------------------------------------------
class Turn(TypedDict):
    value: Any


def put_in_a_node(
    memory: Memory, value: Any, threads: list[int] | None = None
) -> tuple[list[BaseException], str]:
    """Run a one-node graph whose node puts ``value``; the errors its put raised and the
    event of the step it ran in (``threads``: the node's thread is added there)."""
    errors: list[BaseException] = []
    steps: list[str] = []

    def node(state: Turn, *, store: BaseStore) -> Turn:
        config: Any = get_config()
        checkpoint = config["configurable"]["checkpoint_map"][""]
        steps.append(step_event_id(config["configurable"]["thread_id"], checkpoint))
        if threads is not None:
            threads.append(threading.get_ident())
        try:
            store.put(NS, "k", state["value"])
        except InvalidInput as error:
            errors.append(error)
        return state

    builder = StateGraph(Turn)
    builder.add_node("write", node)
    builder.add_edge(START, "write")
    builder.add_edge("write", END)
    graph = builder.compile(
        checkpointer=BranchCheckpointer(InMemorySaver(), memory), store=BranchStore(memory)
    )
    graph.invoke({"value": value}, {"configurable": {"thread_id": "run"}})
    return errors, steps[0]


# -- PostgreSQL: round trips ---------------------------------------------------------------
@pytest.fixture
def pg_memory(pg_dsn: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Memory, Any]]:
    """A Memory on a fresh database whose store counts its round trips (each ``BEGIN``
    pipeline, each pipeline of statements, each statement sent alone) and read snapshots,
    as tests/test_backend_postgres.py counts a batch's."""
    Counting, counts = counting_store(monkeypatch)
    with fresh_database(pg_dsn, "lg_writes") as url, Memory(store=Counting(url)) as memory:
        yield memory, counts


def test_a_put_on_postgresql_reads_no_snapshot_before_writing(
    pg_memory: tuple[Memory, Any],
) -> None:
    """Where a put stands (the thread's head, the change stamp) is found inside its write
    transaction, whose BEGIN brings the stamp: no read snapshot of its own."""
    memory, counts = pg_memory
    view = head_view(memory)
    view.put(NS, "k0", {"v": 0})
    counts["snapshots"] = 0
    for i in range(5):
        view.put(NS, "k0", {"v": i})
    assert counts["snapshots"] == 0
    assert view.get(NS, "k0").value == {"v": 4}  # type: ignore[union-attr]


def test_a_batch_of_puts_on_postgresql_takes_the_round_trips_of_one(
    pg_memory: tuple[Memory, Any],
) -> None:
    """The batch's items are one ``add_records`` call: ten puts cost what one does."""
    memory, counts = pg_memory
    view = head_view(memory)
    view.batch([PutOp(NS, f"k{i}", {"v": -1}) for i in range(10)])
    counts["trips"] = 0
    view.put(NS, "k0", {"v": 0})
    one = counts["trips"]
    counts["trips"] = 0
    view.batch([PutOp(NS, f"k{i}", {"v": i}) for i in range(10)])
    assert counts["trips"] == one, (one, counts["trips"])
    assert [view.get(NS, f"k{i}").value for i in range(10)] == [  # type: ignore[union-attr]
        {"v": i} for i in range(10)
    ]


def test_a_put_in_a_node_on_postgresql_is_one_write_transaction(
    pg_memory: tuple[Memory, Any],
) -> None:
    """The step's event and the item are written in one transaction: the node's thread
    begins one write (the checkpointer's mirror writes run on other threads)."""
    memory, counts = pg_memory
    put_in_a_node(memory, {"v": 0})
    threads: list[int] = []
    counts["writes"] = []
    errors, step = put_in_a_node(memory, {"v": 1}, threads)
    assert errors == []
    assert [t for t in counts["writes"] if t == threads[0]] == [threads[0]]
    assert memory.get_event(step).id == step
