"""What a ``Memory``'s transactions are made of: the thread's actor, the read snapshot, and
the flag a kept view asks (is a write open?). ``Memory._read``/``_write`` use them."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from .._engine.namespace import Namespace
from ..errors import ConflictError
from ..store.base import Store

if TYPE_CHECKING:
    from . import Memory


class Acting(threading.local):
    """Who acts on this thread (``Memory.acting_as``): None until a thread says so, read as a
    class attribute until then, without a failed lookup on every call."""

    name: str | None = None


class Reading:
    """``Memory._read``: the Memory's lock, then one store snapshot (a class, not a
    generator: every read passes here, and a generator context costs twice as much)."""

    __slots__ = ("_lock", "_ns", "_snapshot", "_store")

    def __init__(self, lock: threading.RLock, store: Store, ns: Namespace) -> None:
        self._lock, self._store, self._ns = lock, store, ns

    def __enter__(self) -> Namespace:
        self._lock.acquire()
        try:
            self._snapshot = self._store.reading(self._ns.name)
            self._snapshot.__enter__()
        except BaseException:
            self._lock.release()
            raise
        return self._ns

    def __exit__(self, *exc: Any) -> bool | None:
        try:
            return self._snapshot.__exit__(*exc)
        finally:
            self._lock.release()


class Writing:
    """Whether a Memory has a write transaction open: an object, not a closure, so what a
    Memory keeps leads to no module's globals (an in-memory store's residue check walks it)."""

    __slots__ = ("_memory",)

    def __init__(self, memory: Memory) -> None:
        self._memory = memory

    def __call__(self) -> bool:
        return self._memory._writes > 0


@contextmanager
def writing(memory: Memory, ns: Namespace, *, adds: bool = False) -> Iterator[Namespace]:
    """``Memory._write``: the Memory's lock, then one write transaction of the store; the
    write generation moves once it ends, and so do the kept search views: they go, or, when
    every call of the outermost write only added (``adds``: the call is one that may, and
    the engine says whether it did) and it committed, they are kept past it
    (``_engine.viewcache``)."""
    with memory._lock:
        if memory._snapshots and not memory._writes:
            raise ConflictError(
                f"a write inside Memory.snapshot() (namespace {ns.name!r}) would be "
                "rolled back when the snapshot ends: write after it, or read and write "
                "together in Memory.transaction()"
            )
        views = memory._views
        outermost = not memory._writes
        if outermost:
            views.begin_write()
        if not adds:
            views.not_only_adding()
        places = memory._places
        mark = 0 if places is None else places.placed_mark()
        memory._writes += 1
        committed = False
        try:
            with memory._store.transaction(ns.name):
                yield ns
            committed = True
        finally:
            memory._writes -= 1
            # bumped under the lock, after the commit: concurrent writers never lose a
            # bump, and a reader that saw the old count re-reads at its next call
            memory._generation += 1
            if places is not None:  # the events this block placed: gone, or kept at the end
                if not committed:
                    places.drop_placed(mark)
                elif outermost:
                    places.keep_placed()
            if outermost:  # rolled back: none is kept
                views.end_write(memory._store.write_stamps() if committed else None)
