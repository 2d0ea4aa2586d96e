"""Item expiry that every process sees, and the sweeper's lifecycle of LangGraph's stores.

A TTL refresh is a record of its own (``EXPIRY_KIND``), keyed by the item's slot and built
on the item revision it extends (its one source, pinned): it is visible wherever that item
is, so another process (or another store on the same file) reads the same expiry, and it is
the item's dependent, so erasing or forgetting the item takes it too. Only the latest
refresh of a slot counts, and only for the revision it names.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import threading
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Final

from ...model import Record
from .items import Found

if TYPE_CHECKING:
    from .cache import ReadCache, Refreshed
    from .ranking import VectorIndex

Live = dict[tuple[str, ...], dict[str, Found]]  # an anchor's live items by namespace and key

EXPIRY_KIND: Final = "langgraph.expiry"
_EXPIRY: Final = "langgraph.expiry:"
DEFAULT_SWEEP_MINUTES: Final = 5.0  # as SqliteStore and PostgresStore

logger = logging.getLogger(__name__)


def expiry_key(namespace: Sequence[str], key: str) -> str:
    """The record key of an item slot's refreshes (``item_key`` under another prefix)."""
    return _EXPIRY + json.dumps([*namespace, key], ensure_ascii=False)


def expiry_prefix(prefix: Sequence[str]) -> str:
    """What every ``expiry_key`` under the namespace ``prefix`` starts with."""
    if not prefix:
        return _EXPIRY + "["
    return _EXPIRY + json.dumps(list(prefix), ensure_ascii=False)[:-1] + ", "


def expiry_spec(item: Record, expires: float) -> dict[str, Any]:
    """The ``add_records`` item that moves ``item``'s expiry to ``expires`` (epoch seconds):
    its one source names the item revision, its meta holds the time alone (a forget checks
    that no text of what it erased is left, and a tombstone keeps ids)."""
    meta = item.meta
    return {
        "id": f"lg-expiry:{uuid.uuid4().hex}",
        "sources": [f"{item.id}@{item.revision}"],
        "kind": EXPIRY_KIND,
        "key": expiry_key(meta["namespace"], str(meta["key"])),
        "meta": {"expires_at": expires},
    }


def stored_expiry(record: Record) -> tuple[tuple[str, int], float] | None:
    """(item record id, revision) and the expiry a refresh record holds; None if it is not
    one (or its content was erased)."""
    expires = record.meta.get("expires_at")
    sources = record.sources or ()
    if record.kind != EXPIRY_KIND or not isinstance(expires, int | float) or len(sources) != 1:
        return None
    item_id, _, revision = sources[0].rpartition("@")
    if not item_id or not revision.isdigit():
        return None
    return (item_id, int(revision)), float(expires)


def latest_expiries(records: Sequence[Record]) -> dict[tuple[str, int], float]:
    """The expiry each item revision was last given among ``records`` (by arrival)."""
    latest: dict[tuple[str, int], tuple[int, float]] = {}
    for record in records:
        stored = stored_expiry(record)
        if stored is not None:
            slot, expires = stored
            if slot not in latest or latest[slot][0] < record.seq:
                latest[slot] = (record.seq, expires)
    return {slot: expires for slot, (_, expires) in latest.items()}


def drop_expired(
    refreshed: Refreshed,
    cache: ReadCache | None,
    index: VectorIndex | None,
    expires: Callable[[Record], float | None],
    now: float,
) -> int:
    """A sweep: drop what a store holds in this process for items expired at ``now`` (cached
    values, refresh times, vectors). They are hidden already, and a later read that finds
    them in the Memory finds them expired. The number of item revisions dropped."""
    expired = {slot for slot, at in list(refreshed.items()) if at <= now}
    if cache is not None:
        with cache.lock:
            for anchor, live in list(cache.items.items()):
                kept = _unexpired(live, expires, now, expired)
                if kept is not live:  # a copy: readers may be iterating the old one
                    cache.items[anchor] = kept
    for slot in expired:  # the put's own expiry is never later: dropping revives nothing
        refreshed.pop(slot, None)
    if index is not None:
        with index.lock:
            for slot in expired:
                index.vectors.pop(slot, None)
    return len(expired)


def _unexpired(
    live: Live, expires: Callable[[Record], float | None], now: float, expired: set[Any]
) -> Live:
    """``live`` without its items expired at ``now`` (noted in ``expired``); ``live`` itself
    if none is."""
    kept: Live = {}
    for namespace, slots in live.items():
        alive = {}
        for key, found in slots.items():
            at = expires(found.record)
            if at is not None and at <= now:
                expired.add((found.record_id, found.revision))
            else:
                alive[key] = found
        if alive:
            kept[namespace] = alive
    dropped = sum(map(len, live.values())) - sum(map(len, kept.values()))
    return kept if dropped else live


def sweep_interval(ttl: Any, minutes: float | None) -> float:
    """The sweep interval in minutes: the argument, else the TTL config's, else 5."""
    return float(minutes or (ttl or {}).get("sweep_interval_minutes") or DEFAULT_SWEEP_MINUTES)


class ThreadSweeper:
    """``SqliteStore``/``PostgresStore``'s sweeper: a daemon thread calling ``sweep`` every
    interval until stopped (or its future is cancelled)."""

    def __init__(self, sweep: Callable[[], int]) -> None:
        self.sweep = sweep
        self.thread: threading.Thread | None = None
        self.stopping = threading.Event()

    def start(self, minutes: float) -> concurrent.futures.Future[None]:
        future: concurrent.futures.Future[None] = concurrent.futures.Future()
        future.add_done_callback(lambda f: self.stopping.set() if f.cancelled() else None)
        if self.thread is not None and self.thread.is_alive():
            return future  # already running: this future can still cancel it
        self.stopping.clear()

        def loop() -> None:
            while not self.stopping.wait(minutes * 60):
                try:
                    self.sweep()
                except Exception:  # one failed round must not end the sweeper
                    logger.exception("BranchStore TTL sweep failed")
            if not future.done():
                future.set_result(None)

        self.thread = threading.Thread(target=loop, daemon=True, name="branchmem-ttl-sweeper")
        self.thread.start()
        return future

    def stop(self, timeout: float | None) -> bool:
        """True once stopped (or if it was not running); False if ``timeout`` ran out."""
        if self.thread is None or not self.thread.is_alive():
            return True
        self.stopping.set()
        self.thread.join(timeout)
        if self.thread.is_alive():
            return False
        self.thread = None
        return True


class TaskSweeper:
    """``AsyncSqliteStore``/``AsyncPostgresStore``'s sweeper: a task on the running loop
    calling ``sweep`` (off the loop) every interval until stopped or cancelled."""

    def __init__(self, sweep: Callable[[], Awaitable[int]]) -> None:
        self.sweep = sweep
        self.task: asyncio.Task[None] | None = None
        self.stopping: asyncio.Event | None = None

    def start(self, minutes: float) -> asyncio.Task[None]:
        if self.task is not None and not self.task.done():
            return self.task
        stopping = self.stopping = asyncio.Event()

        async def loop() -> None:
            while True:
                try:
                    await asyncio.wait_for(stopping.wait(), timeout=minutes * 60)
                    return
                except TimeoutError:
                    pass
                try:
                    await self.sweep()
                except Exception:  # one failed round must not end the sweeper
                    logger.exception("BranchStore TTL sweep failed")

        self.task = asyncio.get_running_loop().create_task(loop(), name="branchmem-ttl-sweeper")
        return self.task

    async def stop(self, timeout: float | None) -> bool:
        """True once stopped (or if it was not running); False if ``timeout`` ran out."""
        task = self.task
        if task is None or task.done():
            return True
        assert self.stopping is not None
        self.stopping.set()
        try:
            await asyncio.wait_for(asyncio.shield(task), timeout=timeout)
        except TimeoutError:
            return False
        self.task = None
        return True
