"""The byte checks of a receipt: what a forget left, looked for by keyed fingerprints.

Two checks, for two readers. ``check_rows`` is the receipt's: the rows of one namespace
that held what went (``ResidueScope``), read through the store's own driver, inside the
forget's transaction or a reader's snapshot; it never reads another tenant's bytes, so its
answer is the same whatever else the store holds, and a tenant cannot test guesses with it.
``scan_store`` is the operator's: every place the store keeps data (a SQLite store's files,
a PostgreSQL store's every row, TOAST chunk and planner statistic, an in-memory store's
objects), for one receipt at a time per store, in bounded memory. Files are read by a child
process (``filescan``): a process holding a SQLite database open must not open and close
its files. The check looks for fingerprints (``branchmem.receipt``), never for the text.
"""

from __future__ import annotations

import gc
import threading
import time
import weakref
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager
from typing import Any, Final

from ..receipt import ByteCheck, HitCounter, ResidueScope, value_hits
from .base import Store
from .filescan import scan_files
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


def sqlite_file_hits(
    path: str, key: str, fingerprints: frozenset[str], unchecked: list[str], label: str = ""
) -> dict[str, int]:
    """Hits per file of a SQLite database and its journal, write-ahead log and shared
    memory, read by a child process; a file not there holds nothing."""
    names = [f"{path}{suffix}" for suffix in ("", "-journal", "-wal", "-shm")]
    scanned = scan_files(key, fingerprints, names)
    found: dict[str, int] = {}
    for name in names:
        shown = f"{label}{name.rsplit('/', 1)[-1]}"
        if name in scanned.errors:
            unchecked.append(f"{shown}: {scanned.errors[name]}")
        elif scanned.hits.get(name) is not None or not name.endswith("-journal"):
            found[shown] = scanned.hits.get(name) or 0
    return found


def sqlite_row_hits(
    connection: Any,
    key: str,
    fingerprints: frozenset[str],
    tables: Iterable[str] | None = None,
) -> int:
    """Hits in every value of ``tables`` (default: every table) of an open SQLite
    database, through its own connection (an in-memory one has no file to read); a table
    that is not there is the driver's error."""
    if tables is None:
        query = "SELECT name FROM sqlite_master WHERE type='table'"
        tables = [row[0] for row in connection.execute(query)]
    hits = 0
    for table in tables:
        for row in connection.execute(f'SELECT * FROM "{table}"'):
            hits += sum(value_hits(key, fingerprints, value) for value in row)
    return hits


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


def postgres_row_hits(
    db: Any,
    key: str,
    fingerprints: frozenset[str],
    tables: Iterable[str] | None = None,
    label: str = "",
) -> tuple[dict[str, int], list[str]]:
    """Hits per table of a PostgreSQL database as SQL reads it: the rows of ``tables``
    (default: every table of the current schema), their TOAST chunks and the planner's
    statistics of them (samples of the rows at the last ANALYZE); and what this role may
    not read. ``db``: a psycopg connection in autocommit. Pages are not read: free space a
    VACUUM left is the server's (a receipt's ``cannot_clean`` says so)."""
    import psycopg
    from psycopg.rows import tuple_row

    with db.cursor(row_factory=tuple_row) as cursor:  # whatever rows the connection makes
        wanted = None if tables is None else sorted(tables)
        found: dict[str, int] = {}
        unchecked: list[str] = []
        listed = cursor.execute(
            "SELECT c.relname, t.relname FROM pg_catalog.pg_class c "
            "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
            "LEFT JOIN pg_catalog.pg_class t ON t.oid = c.reltoastrelid "
            "WHERE n.nspname = current_schema() AND c.relkind = 'r' "
            "AND (%s::text[] IS NULL OR c.relname = ANY(%s::text[])) ORDER BY c.relname",
            (wanted, wanted),
        ).fetchall()
        for table, toast in listed:
            rows = cursor.stream(f'SELECT * FROM "{table}"')  # a row at a time
            found[f"{label}{table}"] = sum(
                value_hits(key, fingerprints, value) for row in rows for value in row
            )
            if toast is None:
                continue
            try:
                toasted = sum(
                    value_hits(key, fingerprints, chunk)
                    for (chunk,) in cursor.stream(f'SELECT chunk_data FROM pg_toast."{toast}"')
                )
            except psycopg.Error:
                unchecked.append(
                    f"TOAST of {table}: this role may not read pg_toast.{toast} (its values "
                    "were read de-toasted with the rows)"
                )
                continue
            found[f"{label}toast {table}"] = toasted
        stats = cursor.execute(
            "SELECT tablename, attname, most_common_vals::text, histogram_bounds::text "
            "FROM pg_catalog.pg_stats WHERE schemaname = current_schema() "
            "AND (%s::text[] IS NULL OR tablename = ANY(%s::text[])) ORDER BY tablename, attname",
            (wanted, wanted),
        ).fetchall()
        found[f"{label}pg_stats"] = sum(
            value_hits(key, fingerprints, common or "")
            + value_hits(key, fingerprints, bounds or "")
            for _table, _column, common, bounds in stats
        )
        return found, unchecked


def clear_postgres_stats_of_empty(db: Any, tables: Iterable[str]) -> None:
    """Clear the planner's statistics of those of ``tables`` that hold no row.

    ANALYZE of a table with no rows left keeps the statistics it had, so the sample values
    of rows an erase emptied the table of would stay: PostgreSQL 18's
    ``pg_clear_attribute_stats`` (which the table's owner may call) clears them; before 18
    only a superuser could, so they stay until the table has rows again and is analyzed.
    A refusal leaves them, and a receipt's check shows them."""
    import psycopg
    from psycopg.rows import tuple_row

    if db.info.server_version < 180000:  # known from the connection: no statement
        return
    with db.cursor(row_factory=tuple_row) as cursor:
        try:
            stats = cursor.execute(
                "SELECT DISTINCT tablename::text, attname::text FROM pg_catalog.pg_stats "
                "WHERE schemaname = current_schema() AND tablename = ANY(%s)",
                (list(tables),),
            ).fetchall()
            # is each table empty: once per table; the names are the caller's, as pg_stats
            # gave them back
            empty = {
                table
                for table in sorted({str(table) for table, _ in stats})
                if cursor.execute(f'SELECT NOT EXISTS (SELECT 1 FROM "{table}")').fetchone()[0]
            }
            for table, column in stats:
                if table in empty:
                    cursor.execute(
                        "SELECT pg_catalog.pg_clear_attribute_stats("
                        "current_schema(), %s, %s, false)",
                        (table, column),
                    )
        except psycopg.Error:
            return  # refused (not the owner): they stay, and a receipt's check shows them
