"""The byte check of a receipt: where a store could still hold forgotten text, look.

Each backend is read on its own terms, around the store code rather than through it: a
SQLite store's files byte by byte (database, ``-wal``, ``-shm``); a PostgreSQL store's rows
of every table of its schema, the raw chunks of their TOAST tables, and the planner's
statistics (``pg_stats``); an in-memory store's objects. The check looks for a receipt's
keyed fingerprints (``branchmem.receipt``), never for the text.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Final

from ..receipt import ByteCheck, count_hits, postgres_row_hits
from .base import Store
from .inmemory import InMemoryStore

# What no check from inside the store can clean or see, per backend (said in every receipt).
CANNOT_CLEAN: Final[dict[str, tuple[str, ...]]] = {
    "memory": (
        "process memory that held the text is freed, not overwritten, and may be read from a "
        "core dump or swap until reused",
        "copies the application made outside branchmem (logs, prompts sent to a model, "
        "caches, integrations' own stores)",
    ),
    "sqlite": (
        "copies of the database file: backups, snapshots, replicas, file-sync services",
        "copies the application made outside branchmem (logs, prompts sent to a model, "
        "caches, integrations' own stores)",
    ),
    "postgresql": (
        "WAL segments not yet recycled, WAL archives and base backups: rotate them under "
        "your retention policy",
        "streaming and logical replicas, and their WAL",
        "free space VACUUM left in table and TOAST pages: VACUUM FULL rewrites the files "
        "(this check reads rows and TOAST chunks through SQL, not pages)",
        "copies the application made outside branchmem (logs, prompts sent to a model, "
        "caches, integrations' own stores)",
    ),
}


def backend_of(store: Store) -> str:
    if isinstance(store, InMemoryStore):
        return "memory"
    name = type(store).__name__
    if name == "SQLiteStore":
        return "sqlite"
    if name == "PostgresStore":
        return "postgresql"
    return name


def check_store(
    store: Store, key: str, fingerprints: frozenset[str], lock: AbstractContextManager[Any]
) -> ByteCheck:
    """Fingerprint hits in every place the store keeps data. Runs outside any transaction
    (on PostgreSQL on a connection of its own); ``lock`` (the ``Memory``'s) is held only
    while walking an in-memory store's objects, which writers change in place: a file or
    a table is read as it stands, without holding up the process's other calls."""
    backend = backend_of(store)
    locations: dict[str, int] = {}
    unchecked: list[str] = []
    if backend == "memory":
        with lock:
            texts = list(_reachable_strings(store))
        locations["objects"] = sum(
            count_hits(key, fingerprints, text.encode("utf-8", "surrogatepass")) for text in texts
        )
    elif backend == "sqlite":
        _check_files(str(getattr(store, "path", "")), key, fingerprints, locations, unchecked)
    elif backend == "postgresql":
        _check_postgres(str(getattr(store, "url", "")), key, fingerprints, locations, unchecked)
    else:
        unchecked.append(f"a {backend} store: no byte check is known for this backend")
    clean = not unchecked and not any(locations.values())
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


def _check_files(
    path: str, key: str, fingerprints: frozenset[str], found: dict[str, int], unchecked: list[str]
) -> None:
    if path in ("", ":memory:"):
        unchecked.append("an in-memory SQLite database has no files to read")
        return
    for suffix in ("", "-wal", "-shm"):
        file = Path(f"{path}{suffix}")
        try:
            data = file.read_bytes()
        except FileNotFoundError:
            found[file.name] = 0  # not there: nothing held
            continue
        except OSError as error:
            unchecked.append(f"{file.name}: {error.strerror or error}")
            continue
        found[file.name] = count_hits(key, fingerprints, data)


def _check_postgres(
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
