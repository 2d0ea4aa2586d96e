"""Stand-ins for LangGraph's store classes that build a ``BranchStore`` instead.

Each store stands on the head of a thread a ``BranchCheckpointer`` saved one checkpoint
for: a real anchor, so every write is sourced and every read gated, as in an application
that reads its long-term memory as of a thread outside a run (``store.at(config)``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver

from branchmem import Memory
from branchmem.integrations.langgraph import AsyncBranchStore, BranchCheckpointer, BranchStore
from branchmem.integrations.langgraph.mapping import thread_event_id

THREAD = "peer-thread"


def thread_head(memory: Memory) -> Any:
    """The config of the head of ``THREAD``, saving it one checkpoint if it has none (a
    suite may open one file or database twice)."""
    if memory.head(thread_event_id(THREAD)) is None:
        config: Any = {"configurable": {"thread_id": THREAD, "checkpoint_ns": ""}}
        metadata: Any = {"source": "input", "step": -1, "parents": {}}
        BranchCheckpointer(InMemorySaver(), memory).put(config, empty_checkpoint(), metadata, {})
    return {"configurable": {"thread_id": THREAD}}


class BranchInMemoryStore(BranchStore):
    """``InMemoryStore(**options)`` for the upstream suite: a BranchStore over a fresh
    in-memory Memory, standing at a thread's head (a class: the suite spies on ``batch``)."""

    def __init__(self, **options: Any) -> None:
        memory = Memory()
        super().__init__(memory, config=thread_head(memory), **options)


class BranchSqliteStore:
    """``SqliteStore`` for the upstream suite: ``BranchStore.from_conn_string`` (a Memory
    opened at that path, branchmem's own SQLite schema), standing at a thread's head."""

    @staticmethod
    @contextmanager
    def from_conn_string(conn_string: str, **options: Any) -> Iterator[BranchStore]:
        with BranchStore.from_conn_string(conn_string, **options) as store:
            yield store.at(thread_head(store.memory))


class BranchAsyncSqliteStore:
    """``AsyncSqliteStore`` for the upstream suite: ``AsyncBranchStore.from_conn_string``,
    whose ``setup`` is a coroutine as the suite awaits it."""

    @staticmethod
    @asynccontextmanager
    async def from_conn_string(conn_string: str, **options: Any) -> AsyncIterator[AsyncBranchStore]:
        async with AsyncBranchStore.from_conn_string(conn_string, **options) as store:
            yield store.at(thread_head(store.memory))
