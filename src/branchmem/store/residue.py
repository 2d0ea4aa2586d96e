"""The byte checks of a receipt: what a forget left, looked for by keyed fingerprints.

Two checks, for two readers, each through a port every backend implements its own way.
``check_rows`` is the receipt's: the rows of one namespace that held what went
(``ResidueScope``), read through ``Store.residue_values``, inside the forget's transaction
or a reader's snapshot; it never reads another tenant's bytes, so its answer is the same
whatever else the store holds, and a tenant cannot test guesses with it. ``scan_store`` is
the operator's: every place the store keeps data (a SQLite store's files, a PostgreSQL
store's every row, TOAST chunk and planner statistic, an in-memory store's objects), read
by ``Store.scan_bytes``, for one receipt at a time per store, in bounded memory. Files are
read by a child process (``branchmem.bytescan``): a process holding a SQLite database open
must not open and close its files. The check looks for fingerprints (``branchmem.receipt``),
never the text.
"""

from __future__ import annotations

import gc
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import Any, Final

from ..bytescan import sqlite_file_hits
from ..receipt import ByteCheck, HitCounter, ResidueScope, StoreScan, value_hits
from .base import ELSEWHERE, Store

# What stays whatever a forget does, per backend (said in every receipt's cannot_clean):
# each backend's ``Store.cannot_clean`` port returns its own.
MEMORY_CANNOT_CLEAN: Final = (
    "process memory that held the text is freed, not overwritten, and may be read from a "
    "core dump or swap until reused",
    "copies the application made outside branchmem (logs, prompts sent to a model, "
    "caches, integrations' own stores)",
)
SQLITE_CANNOT_CLEAN: Final = (
    "the write-ahead log (-wal) until the cleanup after the commit checkpoints it: "
    "cleanup_pending says when a reader held it up (Memory.finish_cleanup retries)",
    "copies of the database file: backups, snapshots, replicas, file-sync services",
    "disk blocks the file system freed (a file rewritten or truncated) until reused",
    "copies the application made outside branchmem (logs, prompts sent to a model, "
    "caches, integrations' own stores)",
)
POSTGRES_CANNOT_CLEAN: Final = (
    "WAL segments not yet recycled, WAL archives and base backups: rotate them under "
    "your retention policy",
    "streaming and logical replicas, and their WAL",
    "free space VACUUM left in table, index and TOAST pages: a B-tree index page keeps "
    "an erased key's entry until VACUUM removes it and the page is reused (REINDEX and "
    "VACUUM FULL rewrite them; this check reads rows through SQL, not pages)",
    "copies the application made outside branchmem (logs, prompts sent to a model, "
    "caches, integrations' own stores)",
)
CLEANUP_DUE: Final = (
    "the cleanup after an erase in this namespace is still due: the write-ahead log may hold "
    "the erased pages until Memory.finish_cleanup() succeeds"
)
SHORT_IN_FILES: Final = (
    "fields shorter than a fingerprint window are looked for as whole values in rows, "
    "never in file bytes"
)

_SCANS: weakref.WeakKeyDictionary[Store, threading.Lock] = weakref.WeakKeyDictionary()
_SCANS_LOCK = threading.Lock()


__all__ = [
    "CLEANUP_DUE",
    "ELSEWHERE",
    "MEMORY_CANNOT_CLEAN",
    "POSTGRES_CANNOT_CLEAN",
    "SHORT_IN_FILES",
    "SQLITE_CANNOT_CLEAN",
    "check_rows",
    "file_scan",
    "object_hits",
    "scan_store",
]


def check_rows(store: Store, namespace: str, scope: ResidueScope, key: str,
               fingerprints: frozenset[str]) -> ByteCheck:  # fmt: skip
    """Fingerprint hits per table in the namespace's rows the scope names (the caller
    holds the store's transaction or snapshot). Clean: none, and nothing left unread."""
    locations: dict[str, int] = {}
    for location, value in store.residue_values(namespace, scope):
        hits = value_hits(key, fingerprints, value) if fingerprints else 0
        locations[location] = locations.get(location, 0) + hits
    clean = not any(locations.values())
    return ByteCheck(store.backend, locations, (), clean, time.time())


def scan_store(
    store: Store, key: str, fingerprints: frozenset[str], lock: AbstractContextManager[Any]
) -> ByteCheck:
    """Fingerprint hits in every place the store keeps data, every tenant's included: the
    operator's check, one at a time per store. Runs outside any transaction (on PostgreSQL
    on a connection of its own); ``lock`` (the ``Memory``'s) is held only while walking an
    in-memory store's objects, which writers change in place."""
    with _SCANS_LOCK:
        one_at_a_time = _SCANS.setdefault(store, threading.Lock())
    with one_at_a_time:
        return _scan(store, key, fingerprints, lock)


def _scan(
    store: Store, key: str, fingerprints: frozenset[str], lock: AbstractContextManager[Any]
) -> ByteCheck:
    scanned = store.scan_bytes(key, fingerprints, lock)  # each backend's port
    clean = not any(scanned.locations.values()) and not scanned.unchecked
    unchecked = (*scanned.unchecked, *scanned.notes)  # a note says what no scan can see
    return ByteCheck(store.backend, dict(scanned.locations), unchecked, clean, time.time())


def object_hits(root: object, key: str, fingerprints: frozenset[str]) -> int:
    """Fingerprint hits in every string reachable from ``root`` (an in-memory store's
    objects); the caller holds the lock its writers take."""
    counter = HitCounter(key, fingerprints)
    for text in _reachable_strings(root):
        counter.feed(text.encode("utf-8", "surrogatepass"))
        counter.feed(b"\x00" * 16)  # no window spans two strings
    return counter.hits


def _reachable_strings(root: object) -> Iterator[str]:
    seen: set[int] = set()
    stack: list[Any] = [root]
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, str):
            yield item
        elif not isinstance(item, type):  # classes lead to modules and their constants
            stack.extend(gc.get_referents(item))


def file_scan(path: str, key: str, fingerprints: frozenset[str]) -> StoreScan:
    """A SQLite store's scan: its database file, journal, write-ahead log and shared memory,
    read by a child process."""
    if path in ("", ":memory:"):
        return StoreScan(
            {}, ("an in-memory SQLite database has no files to read",), (SHORT_IN_FILES,)
        )
    unchecked: list[str] = []
    found = sqlite_file_hits(path, key, fingerprints, unchecked)
    return StoreScan(found, tuple(unchecked), (SHORT_IN_FILES,))
