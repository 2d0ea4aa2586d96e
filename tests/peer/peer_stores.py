"""Stand-ins for LangGraph's store classes that build a ``BranchStore`` instead.

Each store stands on the head of a thread a ``BranchCheckpointer`` saved one checkpoint
for: a real anchor, so every write is sourced and every read gated, as in an application
that reads its long-term memory as of a thread outside a run (``store.at(config)``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver

from branchmem import Memory
from branchmem.integrations.langgraph import AsyncBranchStore, BranchCheckpointer, BranchStore

THREAD = "peer-thread"


def _thread_head(memory: Memory) -> Any:
    """A config naming the head of a thread with one checkpoint, mirrored into ``memory``."""
    checkpointer = BranchCheckpointer(InMemorySaver(), memory)
    config: Any = {"configurable": {"thread_id": THREAD, "checkpoint_ns": ""}}
    checkpoint = empty_checkpoint()
    checkpointer.put(config, checkpoint, {"source": "input", "step": -1, "parents": {}}, {})
    return config


class BranchInMemoryStore(BranchStore):
    """``InMemoryStore(**options)`` for the upstream suite: a BranchStore over a fresh
    in-memory Memory, standing at a thread's head (a class: the suite spies on ``batch``)."""

    def __init__(self, **options: Any) -> None:
        memory = Memory()
        super().__init__(memory, config=_thread_head(memory), **options)


def _memory_at(conn_string: str) -> Memory:
    if conn_string == ":memory:":
        return Memory()
    # the upstream fixture hands us an empty temp file; branchmem opens its own schema there
    path = Path(conn_string)
    if path.exists() and path.stat().st_size == 0:
        path.unlink()
    return Memory.open(path)


class BranchSqliteStore:
    """``SqliteStore`` for the upstream suite: ``from_conn_string`` yields a BranchStore
    over a Memory opened at that path (branchmem's own SQLite schema)."""

    @staticmethod
    @contextmanager
    def from_conn_string(conn_string: str, **options: Any) -> Iterator[BranchStore]:
        memory = _memory_at(conn_string)
        try:
            yield BranchStore(memory, config=_thread_head(memory), **options)
        finally:
            memory.close()


class BranchAsyncSqliteStore:
    """``AsyncSqliteStore`` for the upstream suite: an ``AsyncBranchStore``, whose
    ``setup`` is a coroutine as the suite awaits it."""

    @staticmethod
    @asynccontextmanager
    async def from_conn_string(conn_string: str, **options: Any) -> AsyncIterator[AsyncBranchStore]:
        memory = _memory_at(conn_string)
        try:
            yield AsyncBranchStore(memory, config=_thread_head(memory), **options)
        finally:
            memory.close()
