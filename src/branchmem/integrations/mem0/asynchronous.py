"""``AsyncBranchMem0``: ``BranchMem0`` with ``mem0.AsyncMemory``'s shape."""

from __future__ import annotations

import asyncio
import copy
import inspect
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .observe import CALLER_LOOP
from .wrapper import BranchMem0

if TYPE_CHECKING:
    from branchmem import Memory


def _in_thread(name: str) -> Callable[..., Any]:
    """A coroutine method running ``BranchMem0.<name>`` in a worker thread, with its
    signature and docstring (so ``inspect`` sees Mem0's parameters)."""
    sync_method = getattr(BranchMem0, name)

    async def method(self: AsyncBranchMem0, *args: Any, **kwargs: Any) -> Any:
        CALLER_LOOP.set(asyncio.get_running_loop())  # to_thread carries it to the worker
        return await asyncio.to_thread(getattr(self.sync, name), *args, **kwargs)

    method.__name__ = name
    method.__qualname__ = f"AsyncBranchMem0.{name}"
    method.__doc__ = sync_method.__doc__
    method.__signature__ = inspect.signature(sync_method)  # type: ignore[attr-defined]
    return method


class AsyncBranchMem0:
    """``BranchMem0`` with ``mem0.AsyncMemory``'s shape: every method a coroutine.

    It wraps a ``mem0.AsyncMemory`` or a sync ``mem0.Memory`` and runs each call in a worker
    thread, since the gate's store writes are synchronous and the event loop must not wait
    on them; an ``AsyncMemory``'s own coroutines are run back on the caller's loop.
    """

    def __init__(self, memory: Any = None, store: Memory | None = None, **options: Any) -> None:
        self.sync = BranchMem0(memory, store, **options)

    @property
    def memory(self) -> Any:
        return self.sync.memory

    @property
    def store(self) -> Memory:
        return self.sync.store

    def head(self) -> str | None:
        """``BranchMem0.head``: where a call with no anchor stands (a quick store read)."""
        return self.sync.head()

    def report(self) -> dict[str, Any]:
        """``BranchMem0.report``."""
        return self.sync.report()

    def at(self, anchor: str | None, event_ids: Sequence[str] | None = None) -> AsyncBranchMem0:
        """``BranchMem0.at``: a view standing at ``anchor``."""
        view = copy.copy(self)
        view.sync = self.sync.at(anchor, event_ids)
        return view

    add = _in_thread("add")
    search = _in_thread("search")
    get_all = _in_thread("get_all")
    get = _in_thread("get")
    update = _in_thread("update")
    delete = _in_thread("delete")
    delete_all = _in_thread("delete_all")
    history = _in_thread("history")
    reset = _in_thread("reset")
    close = _in_thread("close")
    chat = _in_thread("chat")
    explain = _in_thread("explain")
    forget = _in_thread("forget")
    verify_receipt = _in_thread("verify_receipt")

    @classmethod
    def from_config(cls, config_dict: dict[str, Any], **options: Any) -> AsyncBranchMem0:
        """``mem0.AsyncMemory.from_config(config_dict)`` wrapped."""
        from mem0 import AsyncMemory  # type: ignore[import-untyped, import-not-found, unused-ignore]

        return cls(AsyncMemory.from_config(config_dict), **options)
