"""``BranchStore`` and ``AsyncBranchStore``: the checkpoint-gated store (``gated``) with the
lifecycle methods of LangGraph's SQL stores, so code written for ``SqliteStore`` or
``PostgresStore`` (sync) or their async variants runs unchanged. Both serve every sync and
async read and write alike; they differ only in whether ``setup``, ``sweep_ttl``,
``start_ttl_sweeper`` and ``stop_ttl_sweeper`` are plain calls or coroutines."""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from typing import Any, Self

from langchain_core.runnables import RunnableConfig
from langgraph.store.base import IndexConfig, TTLConfig

from ...errors import InvalidInput
from ...memory import Memory
from .gated import CheckpointNotMirrored, GatedStore, MissingAnchor
from .items import ITEM_KIND, item_key
from .ttl import TaskSweeper, ThreadSweeper, sweep_interval

__all__ = [
    "ITEM_KIND",
    "AsyncBranchStore",
    "BranchStore",
    "CheckpointNotMirrored",
    "GatedStore",
    "MissingAnchor",
    "item_key",
]


def _memory_at(conn_string: str, pipeline: object, pool_config: object) -> Memory:
    """The Memory ``from_conn_string`` serves: ``:memory:`` (as SQLite's), else
    ``Memory.open`` (a SQLite path or ``sqlite:///...``, or ``postgresql://...``).
    ``pipeline`` and ``pool_config`` are PostgresStore's connection modes: branchmem's
    PostgreSQL backend always keeps a pool and pipelines what it can, so either mode is
    what it does anyway (the pool's sizes are its own)."""
    if not isinstance(pipeline, bool):
        raise InvalidInput(f"pipeline must be a bool, got {type(pipeline).__name__}")
    if pool_config is not None and not isinstance(pool_config, Mapping):
        raise InvalidInput(f"pool_config must be a mapping, got {type(pool_config).__name__}")
    return Memory() if conn_string == ":memory:" else Memory.open(conn_string)


class BranchStore(GatedStore):
    """Answer every read as seen from a checkpoint; source every write at one (``GatedStore``),
    with ``SqliteStore``'s and ``PostgresStore``'s ``from_conn_string``, ``setup`` and TTL
    sweeper."""

    @classmethod
    @contextmanager
    def from_conn_string(
        cls,
        conn_string: str,
        *,
        pipeline: bool = False,
        pool_config: Mapping[str, Any] | None = None,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        namespace: str = "default",
        config: RunnableConfig | None = None,
    ) -> Iterator[Self]:
        """A store over a Memory opened at ``conn_string`` (closed on exit), as
        ``PostgresStore.from_conn_string`` and ``SqliteStore.from_conn_string`` give theirs;
        ``config`` anchors it outside a run (``at``)."""
        memory = _memory_at(conn_string, pipeline, pool_config)
        try:
            yield cls(memory, namespace=namespace, index=index, ttl=ttl, config=config)
        finally:
            memory.close()

    def setup(self) -> None:
        """Nothing to create: ``Memory.open`` made and migrated branchmem's schema. Kept so
        that code calling it before first use, as LangGraph's SQL stores ask, runs as is."""

    def sweep_ttl(self) -> int:
        """Expired items are hidden from the moment they expire, in every process, and their
        records stay in the Memory's history (``forget``/``erase`` remove content): a sweep
        only drops what this process holds for them. Returns how many it dropped."""
        return self._sweep()

    def start_ttl_sweeper(
        self, sweep_interval_minutes: int | None = None
    ) -> concurrent.futures.Future[None]:
        """Sweep every ``sweep_interval_minutes`` (else the TTL config's, else 5) in a daemon
        thread until ``stop_ttl_sweeper`` or the returned future is cancelled. Without a TTL
        config the future is already done, as in LangGraph's stores."""
        if not self.ttl_config:
            done: concurrent.futures.Future[None] = concurrent.futures.Future()
            done.set_result(None)
            return done
        return self._sweeper().start(sweep_interval(self.ttl_config, sweep_interval_minutes))

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper thread, waiting up to ``timeout`` seconds (None: for as long as
        it takes). True if it stopped or was not running."""
        return self._sweeper().stop(timeout)

    def _sweeper(self) -> ThreadSweeper:
        """Made on first use (views made by ``at`` before then get their own)."""
        sweeper: ThreadSweeper = self.__dict__.setdefault(
            "_ttl_sweeper", ThreadSweeper(self.sweep_ttl)
        )
        return sweeper


class AsyncBranchStore(GatedStore):
    """``BranchStore`` for code written for ``AsyncSqliteStore`` or ``AsyncPostgresStore``:
    ``setup``, ``sweep_ttl``, ``start_ttl_sweeper`` and ``stop_ttl_sweeper`` are coroutines
    (the sweeper a task on the running loop); reads and writes are the same store's."""

    @classmethod
    @asynccontextmanager
    async def from_conn_string(
        cls,
        conn_string: str,
        *,
        pipeline: bool = False,
        pool_config: Mapping[str, Any] | None = None,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        namespace: str = "default",
        config: RunnableConfig | None = None,
    ) -> AsyncIterator[Self]:
        """``BranchStore.from_conn_string`` for ``async with``, as the async stores have it."""
        memory = await asyncio.to_thread(_memory_at, conn_string, pipeline, pool_config)
        try:
            yield cls(memory, namespace=namespace, index=index, ttl=ttl, config=config)
        finally:
            await asyncio.to_thread(memory.close)

    async def setup(self) -> None:
        """Nothing to create: ``Memory.open`` made and migrated branchmem's schema."""

    async def sweep_ttl(self) -> int:
        """``BranchStore.sweep_ttl``, off the event loop."""
        return await asyncio.to_thread(self._sweep)

    async def start_ttl_sweeper(
        self, sweep_interval_minutes: int | None = None
    ) -> asyncio.Task[None]:
        """Sweep every ``sweep_interval_minutes`` (else the TTL config's, else 5) in a task
        until ``stop_ttl_sweeper`` or the task is cancelled; the running one if started."""
        if not self.ttl_config:
            return asyncio.get_running_loop().create_task(asyncio.sleep(0))
        return self._sweeper().start(sweep_interval(self.ttl_config, sweep_interval_minutes))

    async def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper task, waiting up to ``timeout`` seconds (None: for as long as it
        takes). True if it stopped or was not running."""
        return await self._sweeper().stop(timeout)

    def _sweeper(self) -> TaskSweeper:
        """Made on first use (views made by ``at`` before then get their own)."""
        made = TaskSweeper(self.sweep_ttl)
        sweeper: TaskSweeper = self.__dict__.setdefault("_ttl_sweeper", made)
        return sweeper
