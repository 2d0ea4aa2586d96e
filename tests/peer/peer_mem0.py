"""Stand-ins for ``mem0.Memory``/``AsyncMemory`` that build the real Mem0 (with whatever
the upstream test patched into Mem0's factories) and wrap it in ``BranchMem0``.

Each is the class swap a Mem0 user makes: ``BranchMem0(mem0.Memory(config))`` with its
defaults (a new in-memory store, the wrapper recording each ``add``'s messages and
following the conversation's head), so every call stands where the chat is. Mem0 internals
the tests reach for (``vector_store``, ``db``, ``config``, private helpers) are the wrapped
Mem0's."""

from __future__ import annotations

from typing import Any

import mem0
import mem0.memory.main

from branchmem.integrations.mem0 import AsyncBranchMem0, BranchMem0
from mem0_peer_calls import API, note

STOCK_MEMORY = mem0.memory.main.Memory
STOCK_ASYNC_MEMORY = mem0.memory.main.AsyncMemory


class _Delegating:
    """Attributes the wrapper does not have are read from, and written to, the wrapped
    Mem0 (the suite swaps ``memory.vector_store`` for a mock after construction)."""

    def _inner(self) -> Any:
        return self.__dict__.get("memory")

    def __getattr__(self, name: str) -> Any:
        inner = self._inner()
        if inner is None:
            raise AttributeError(name)
        if name.startswith("_") and not name.startswith("__"):
            note(f"private:{name}")  # the test reaches past the wrapper
        return getattr(inner, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in API:
            note(f"mocked:{name}")  # the test replaces a wrapper method on the instance
        inner = self._inner()
        if inner is not None and name not in self.__dict__ and hasattr(inner, name):
            setattr(inner, name, value)
        else:
            object.__setattr__(self, name, value)


class BranchedMemory(_Delegating, BranchMem0):
    """``mem0.Memory(config)`` for the upstream suite."""

    def __init__(self, config: Any = None) -> None:
        inner = STOCK_MEMORY(config) if config is not None else STOCK_MEMORY()
        super().__init__(inner)


class BranchedAsyncMemory(_Delegating, AsyncBranchMem0):
    """``mem0.AsyncMemory(config)`` for the upstream suite."""

    def __init__(self, config: Any = None) -> None:
        inner = STOCK_ASYNC_MEMORY(config) if config is not None else STOCK_ASYNC_MEMORY()
        super().__init__(inner)

    def _inner(self) -> Any:
        sync = self.__dict__.get("sync")
        return None if sync is None else sync.memory
