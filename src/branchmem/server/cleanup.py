"""The service finishes an erase's cleanup of the store's files when the erase could not.

An erase removes the text from every table in its transaction, then cleans the files
(SQLite: checkpoint and truncate the write-ahead log). Another process's open read
transaction pins the log, and the erase then only warns ``CleanupPending``: the old page
images stay in the -wal file until someone calls ``Memory.finish_cleanup()``. A library
caller can; a long-running server has no caller to do it, and the next automatic
checkpoint reuses the log without truncating it. So the service runs one background thread
that, after each erase request (and once at startup, for a cleanup a crash left), calls
``finish_cleanup()`` until it reports nothing left, backing off while a reader holds on.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import AsyncIterator
from typing import Final, Protocol

from starlette.concurrency import run_in_threadpool

from ..errors import BranchmemError

log = logging.getLogger("branchmem.server")

FIRST_RETRY_S: Final = 0.05  # a reader's snapshot usually ends within a request or two
LAST_RETRY_S: Final = 5.0  # each try may hold the store for the checkpoint's short wait
# The operations after which the files may need cleaning (forget erases too).
CLEANING_OPERATIONS: Final = frozenset({"erase", "forget"})


class Cleans(Protocol):
    def finish_cleanup(self) -> str | None: ...


class FileCleanup:
    """One daemon thread per service calling ``finish_cleanup()`` until it returns None.

    ``request()`` wakes it (started on first use); ``close()`` stops it before the store
    closes. The pending cleanup is recorded in the store (``erase_cleanup``), so a cleanup
    this thread did not finish is resumed when the store is next opened."""

    def __init__(
        self,
        memory: Cleans,
        *,
        first_retry: float = FIRST_RETRY_S,
        last_retry: float = LAST_RETRY_S,
    ) -> None:
        self._memory = memory
        self._first_retry = first_retry
        self._last_retry = last_retry
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._guard = threading.Lock()
        self._thread: threading.Thread | None = None
        self.pending: str | None = None  # why the last try did not finish; None: done

    def request(self) -> None:
        """Ask for a cleanup soon (a no-op for the store when nothing is due)."""
        with self._guard:
            if self._stop.is_set():
                return
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="branchmem-erase-cleanup", daemon=True
                )
                self._thread.start()
        self._wake.set()

    def close(self, timeout: float = 10.0) -> None:
        """Stop the thread (a try under way finishes first)."""
        with self._guard:
            self._stop.set()
            thread, self._thread = self._thread, None
        self._wake.set()
        if thread is not None:
            thread.join(timeout)

    @contextlib.asynccontextmanager
    async def lifespan(self, app: object) -> AsyncIterator[None]:
        """The service's lifespan: a try at startup (what a crash or a reader left), and
        the thread stopped at shutdown, before the caller closes the store."""
        self.request()
        yield
        await run_in_threadpool(self.close)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait()
            self._wake.clear()
            delay = self._first_retry
            while not self._stop.is_set():
                self.pending = self._try()
                if self.pending is None:
                    break
                if delay == self._first_retry:  # once per episode, not per try
                    log.warning("erase cleanup pending, retrying: %s", self.pending)
                self._stop.wait(delay)
                delay = min(delay * 2, self._last_retry)

    def _try(self) -> str | None:
        try:
            return self._memory.finish_cleanup()
        except BranchmemError as error:  # e.g. the database unreachable for a moment
            return f"{type(error).__name__}: {error}"
