"""The byte checks of a receipt: what a forget left, looked for by keyed fingerprints.

Two checks, for two readers. ``check_rows`` is the receipt's: the rows of one namespace
that held what went (``ResidueScope``), read through the store's own driver, inside the
forget's transaction or a reader's snapshot; it never reads another tenant's bytes, so its
answer is the same whatever else the store holds, and a tenant cannot test guesses with it.
``scan_store`` is the operator's: every place the store keeps data (a SQLite store's files,
a PostgreSQL store's every row, TOAST chunk and planner statistic, an in-memory store's
objects), for one receipt at a time per store, in bounded memory. Files are read by a child
process (``branchmem.bytescan``): a process holding a SQLite database open must not open and
close its files. The check looks for fingerprints (``branchmem.receipt``), never the text.
"""

from __future__ import annotations

import gc
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import Any, Final

from ..bytescan import postgres_row_hits, sqlite_file_hits
from ..receipt import ByteCheck, HitCounter, ResidueScope, value_hits
from .base import Store
from .inmemory import InMemoryStore

# What stays whatever a forget does, per backend (said in every receipt's cannot_clean).
CANNOT_CLEAN: Final[dict[str, tuple[str, ...]]] = {
    "memory": (
        "process memory that held the text is freed, not overwritten, and may be read from a "
        "core dump or swap until reused",
        "copies the application made outside branchmem (logs, prompts sent to a model, "
        "caches, integrations' own stores)",
    ),
    "sqlite": (
        "the write-ahead log (-wal) until the cleanup after the commit checkpoints it: "
        "cleanup_pending says when a reader held it up (Memory.finish_cleanup retries)",
        "copies of the database file: backups, snapshots, replicas, file-sync services",
        "disk blocks the file system freed (a file rewritten or truncated) until reused",
        "copies the application made outside branchmem (logs, prompts sent to a model, "
        "caches, integrations' own stores)",
    ),
    "postgresql": (
        "WAL segments not yet recycled, WAL archives and base backups: rotate them under "
        "your retention policy",
        "streaming and logical replicas, and their WAL",
        "free space VACUUM left in table, index and TOAST pages: a B-tree index page keeps "
        "an erased key's entry until VACUUM removes it and the page is reused (REINDEX and "
        "VACUUM FULL rewrite them; this check reads rows through SQL, not pages)",
        "copies the application made outside branchmem (logs, prompts sent to a model, "
        "caches, integrations' own stores)",
    ),
}
CLEANUP_DUE: Final = (
    "the cleanup after an erase in this namespace is still due: the write-ahead log may hold "
    "the erased pages until Memory.finish_cleanup() succeeds"
)
ELSEWHERE: Final = (
    "this backend's own storage (files, logs, backups, replicas): the check reads what the "
    "backend's residue_values gives, not its storage",
    "copies the application made outside branchmem (logs, prompts sent to a model, "
    "caches, integrations' own stores)",
)
SHORT_IN_FILES: Final = (
    "fields shorter than a fingerprint window are looked for as whole values in rows, "
    "never in file bytes"
)

_SCANS: weakref.WeakKeyDictionary[Store, threading.Lock] = weakref.WeakKeyDictionary()
_SCANS_LOCK = threading.Lock()


def backend_of(store: Store) -> str:
    return store.backend


def check_rows(store: Store, namespace: str, scope: ResidueScope, key: str,
               fingerprints: frozenset[str]) -> ByteCheck:  # fmt: skip
    """Fingerprint hits per table in the namespace's rows the scope names (the caller
    holds the store's transaction or snapshot). Clean: none, and nothing left unread."""
    locations: dict[str, int] = {}
    for location, value in store.residue_values(namespace, scope):
        hits = value_hits(key, fingerprints, value) if fingerprints else 0
        locations[location] = locations.get(location, 0) + hits
    clean = not any(locations.values())
    return ByteCheck(backend_of(store), locations, (), clean, time.time())


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
    backend = backend_of(store)
    locations: dict[str, int] = {}
    unchecked: list[str] = []
    if isinstance(store, InMemoryStore):
        counter = HitCounter(key, fingerprints)
        with lock:
            for text in _reachable_strings(store):
                counter.feed(text.encode("utf-8", "surrogatepass"))
                counter.feed(b"\x00" * 16)  # no window spans two strings
        locations["objects"] = counter.hits
    elif backend == "sqlite":
        _scan_files(str(getattr(store, "path", "")), key, fingerprints, locations, unchecked)
    elif backend == "postgresql":
        _scan_postgres(str(getattr(store, "url", "")), key, fingerprints, locations, unchecked)
    else:
        unchecked.append(f"a {backend} store: no byte scan is known for this backend")
    clean = not any(locations.values()) and not unchecked
    if backend in ("sqlite", "postgresql"):  # a note, not a place left unread
        unchecked.append(SHORT_IN_FILES)
    return ByteCheck(backend, locations, tuple(unchecked), clean, time.time())


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


def _scan_files(
    path: str, key: str, fingerprints: frozenset[str], found: dict[str, int], unchecked: list[str]
) -> None:
    if path in ("", ":memory:"):
        unchecked.append("an in-memory SQLite database has no files to read")
        return
    found.update(sqlite_file_hits(path, key, fingerprints, unchecked))


def _scan_postgres(
    url: str, key: str, fingerprints: frozenset[str], found: dict[str, int], unchecked: list[str]
) -> None:
    import psycopg

    try:
        db = psycopg.connect(url, autocommit=True)
    except psycopg.Error as error:
        unchecked.append(f"PostgreSQL: cannot connect to read the rows ({type(error).__name__})")
        return
    with db:
        hits, unread = postgres_row_hits(db, key, fingerprints)
    found.update(hits)
    unchecked.extend(unread)
