"""``branchmem.AsyncMemory``: the embedded ``Memory`` for asyncio code, off the event loop.

    mem = AsyncMemory.open("memory.db")          # or AsyncMemory(Memory.open(...))
    await mem.add_event("u1", content="I'm moving to Chengdu")
    records = await mem.visible("u1")

Every ``MemoryAPI`` method is a coroutine with the same parameters, defaults, docstring and
result as ``Memory``'s. The call runs on one worker thread that belongs to this object: a
store read or write (SQLite, PostgreSQL) never blocks the loop, and calls run one at a time
in the order they were awaited, which is what ``Memory`` does anyway (every public call
holds its lock), so more threads would only wait on that lock.

Cancelling an awaiting task cancels a call that has not started yet; a call already running
on the worker finishes (a write is all-or-nothing either way) and its result is dropped.

The methods are not written here: each is one line, ``name = offloaded(MemoryAPI.name)``,
read from the same operation table as ``Client`` and ``AsyncClient``.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import os
from collections.abc import AsyncIterator, Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from ._core.validation import check_id
from .api.protocol import MemoryAPI, takes_declared_docs
from .errors import InvalidInput
from .memory import Memory

if TYPE_CHECKING:
    from .search.embedding import Embedder
    from .search.tokens import TokenCounter

P = ParamSpec("P")
R = TypeVar("R")

# who the audit log names for the mutations of this task (``AsyncMemory.acting_as``);
# ``Memory.acting_as`` is per thread, and every task shares the one worker thread
_ACTOR: contextvars.ContextVar[str | None] = contextvars.ContextVar("branchmem_actor", default=None)


def offloaded(
    declared: Callable[Concatenate[MemoryAPI, P], R],
) -> Callable[Concatenate[AsyncMemory, P], Coroutine[Any, Any, R]]:
    """An ``AsyncMemory`` method for an API method: same signature and docstring, run by
    the wrapped ``Memory`` on the worker thread."""
    name = declared.__name__

    @functools.wraps(declared)
    async def call(self: AsyncMemory, /, *args: P.args, **kwargs: P.kwargs) -> R:
        method: Callable[..., R] = getattr(self.memory, name)
        return await self._run(method, *args, **kwargs)

    return call


@takes_declared_docs
class AsyncMemory:
    """An embedded ``Memory`` whose calls are awaited; close it (``await mem.close()``)."""

    def __init__(self, memory: Memory | None = None) -> None:
        """Wrap ``memory`` (a fresh in-memory one when None); closing this closes it."""
        if memory is not None and not isinstance(memory, Memory):
            raise InvalidInput(f"AsyncMemory wraps a branchmem.Memory, got {type(memory).__name__}")
        self.memory = memory if memory is not None else Memory()
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="branchmem")
        self._closed = False

    @classmethod
    def open(
        cls,
        url: str | os.PathLike[str],
        mode: str = "strict",
        *,
        migrate: bool = False,
        embedder: Embedder | None = None,
        counter: TokenCounter | None = None,
    ) -> AsyncMemory:
        """``Memory.open`` wrapped. It blocks while the store opens (and migrates): call it
        at start-up (a FastAPI lifespan), or through ``asyncio.to_thread`` on a live loop."""
        memory = Memory.open(url, mode, migrate=migrate, embedder=embedder, counter=counter)
        return cls(memory)

    @property
    def mode(self) -> str:
        """The decision mode of the wrapped ``Memory``."""
        return self.memory.mode

    async def _run(self, method: Callable[..., R], *args: Any, **kwargs: Any) -> R:
        """``method(*args, **kwargs)`` on the worker, as the task's actor when it names one."""
        if self._closed:
            raise InvalidInput("this AsyncMemory is closed")
        actor = _ACTOR.get()
        if actor is not None:
            target = functools.partial(self._acting, actor, method, *args, **kwargs)
        else:
            target = functools.partial(method, *args, **kwargs)
        task = asyncio.current_task()

        def unless_cancelled() -> R:
            # Task.cancel() marks the task at once, but the loop may deliver it only after
            # the worker reached this call: a call not started when cancelled never runs
            if task is not None and task.cancelling():
                raise asyncio.CancelledError
            return target()

        return await asyncio.get_running_loop().run_in_executor(self._worker, unless_cancelled)

    def _acting(self, actor: str, method: Callable[..., R], *args: Any, **kwargs: Any) -> R:
        with self.memory.acting_as(actor):
            return method(*args, **kwargs)

    @asynccontextmanager
    async def acting_as(self, actor: str) -> AsyncIterator[None]:
        """Attribute the mutations awaited in this block (this task and the tasks it
        starts) to ``actor`` in the audit log; other tasks keep their own actor."""
        check_id(actor, "actor")
        token = _ACTOR.set(actor)
        try:
            yield
        finally:
            _ACTOR.reset(token)

    # -- lifecycle ---------------------------------------------------------------------
    async def close(self) -> None:
        # the Memory closes once the calls already awaited are done; then the worker
        if self._closed:
            return
        await self._run(self.memory.close)
        self._closed = True
        self._worker.shutdown(wait=False)

    aclose = close  # the name contextlib.aclosing and httpx use

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- the API: one line per MemoryAPI method (mypy reads each signature from there) --
    add_event = offloaded(MemoryAPI.add_event)
    add_events = offloaded(MemoryAPI.add_events)
    get_event = offloaded(MemoryAPI.get_event)
    path = offloaded(MemoryAPI.path)
    set_head = offloaded(MemoryAPI.set_head)
    head = offloaded(MemoryAPI.head)
    heads = offloaded(MemoryAPI.heads)
    conversations = offloaded(MemoryAPI.conversations)
    trees = offloaded(MemoryAPI.trees)
    tree_events = offloaded(MemoryAPI.tree_events)
    record_views = offloaded(MemoryAPI.record_views)
    import_ = offloaded(MemoryAPI.import_)  # progress is called on the worker thread
    add_record = offloaded(MemoryAPI.add_record)
    add_records = offloaded(MemoryAPI.add_records)
    revise = offloaded(MemoryAPI.revise)
    get_record = offloaded(MemoryAPI.get_record)
    supersede = offloaded(MemoryAPI.supersede)
    retract = offloaded(MemoryAPI.retract)
    withdraw = offloaded(MemoryAPI.withdraw)
    erase = offloaded(MemoryAPI.erase)
    restore = offloaded(MemoryAPI.restore)
    dependents = offloaded(MemoryAPI.dependents)
    # -- forget and receipts
    forget = offloaded(MemoryAPI.forget)
    verify_receipt = offloaded(MemoryAPI.verify_receipt)
    visible = offloaded(MemoryAPI.visible)
    explain = offloaded(MemoryAPI.explain)
    current = offloaded(MemoryAPI.current)
    stale = offloaded(MemoryAPI.stale)
    diff = offloaded(MemoryAPI.diff)
    promote = offloaded(MemoryAPI.promote)
    report = offloaded(MemoryAPI.report)
    audit = offloaded(MemoryAPI.audit)
    history = offloaded(MemoryAPI.history)
    repair_queue = offloaded(MemoryAPI.repair_queue)
    search = offloaded(MemoryAPI.search)
    context = offloaded(MemoryAPI.context)
    deliveries = offloaded(MemoryAPI.deliveries)
    stale_deliveries = offloaded(MemoryAPI.stale_deliveries)
    blame = offloaded(MemoryAPI.blame)
    namespaces = offloaded(MemoryAPI.namespaces)

    async def is_visible(self, record_id: str, anchor: str | None, **options: Any) -> bool:
        return (await self.explain(record_id, anchor, **options)).visible
