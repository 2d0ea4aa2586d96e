"""The embedded default: one SQLite file, WAL, one transaction per public call.

Writers take the database lock up front (``BEGIN IMMEDIATE``) and wait up to
``busy_timeout`` for it, so several processes can share one file. Opening a store whose
schema is current takes no lock at all. ``secure_delete`` makes SQLite overwrite freed
cells and pages with zeros, which erasure relies on; after an erase the write-ahead log,
which still holds old page images, is checkpointed into the file and truncated.
"""

from __future__ import annotations

import random
import sqlite3
import time
from collections.abc import Hashable
from contextlib import AbstractContextManager, nullcontext, suppress
from pathlib import Path
from typing import Any

from ..errors import ConflictError, StorageError
from ..receipt import StoreScan
from .base import ItemByItemAnswers
from .residue import SQLITE_CANNOT_CLEAN, file_scan
from .sql import SQLStore

BUSY_TIMEOUT_MS = 30_000
_NO_SESSION: AbstractContextManager[None] = nullcontext()
CLEANUP_WAIT_MS = 200  # how long an erase's checkpoint waits for readers before reporting
WAL_ATTEMPTS = 50  # tries to switch a new file to WAL while other processes do the same
WAL_BACKOFF_S = 0.01

# What schema version 3 had on SQLite only: an FTS5 index over search_docs, dropped by
# version 4 (see schema.py). A store that erased often may hold an index FTS5 itself calls
# corrupt ("vtable constructor failed"), which DROP TABLE cannot open: then its shadow tables
# are dropped and its schema row removed directly, inside the migration's transaction.
FTS_TRIGGERS = ("search_docs_indexed", "search_docs_unindexed")
FTS_SHADOWS = ("data", "idx", "docsize", "config", "content")


class SQLiteStore(ItemByItemAnswers, SQLStore):
    """Storage in one SQLite database file (``":memory:"`` for a private in-memory one).

    ``answer`` goes item by item (``ItemByItemAnswers``): in-process SQLite has no round trip
    to save, and its per-item reads skip what a candidate's facts already said (a read
    snapshot's ``_CANDIDATE_FACTS``), which the bulk statements cannot."""

    backend = "sqlite"
    without_rowid = "WITHOUT ROWID"

    def __init__(self, path: str | Path, *, migrate: bool = False) -> None:
        super().__init__()
        self.path = str(path)
        self._conn: sqlite3.Connection | None = None
        # (commits, data_version) as the write in progress began, and the stamps around
        # the last one that committed (``write_stamps``)
        self._writing: tuple[int, int] = (0, 0)
        self._written: tuple[tuple[int, int], tuple[int, int]] | None = None
        try:
            self._conn = sqlite3.connect(
                self.path,
                isolation_level=None,  # we issue BEGIN/COMMIT ourselves
                check_same_thread=False,  # Memory serialises threads with its own lock
                timeout=BUSY_TIMEOUT_MS / 1000,
            )
            self._use_wal(self._conn)
            for pragma in (
                f"busy_timeout = {BUSY_TIMEOUT_MS}",
                "foreign_keys = ON",
                "synchronous = NORMAL",  # durable against a crashed process; WAL keeps order
                "secure_delete = ON",
                "cache_size = -65536",  # 64 MiB: a large batch stays in memory until COMMIT
            ):
                self._conn.execute(f"PRAGMA {pragma}")
        except sqlite3.Error as error:
            self.close()
            raise StorageError(f"cannot open SQLite database {self.path!r}: {error}") from error
        try:
            version = self.schema_version()
            self.migrate(upgrade=migrate or version == 0)
            if self.cleanup_pending():  # an erase's cleanup was cut short (a crash, a reader)
                self.scrub()
        except BaseException:
            self.close()
            raise

    def _use_wal(self, connection: sqlite3.Connection) -> None:
        """Switch the file to WAL. On a new file this needs an exclusive lock for a moment,
        and SQLite reports "database is locked" at once (no busy wait) when several processes
        do it together: retry with jittered backoff until one of them has switched it."""
        for attempt in range(1, WAL_ATTEMPTS + 1):
            try:
                mode = connection.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            except sqlite3.OperationalError as error:
                if "locked" not in str(error) and "busy" not in str(error):
                    raise
                if attempt == WAL_ATTEMPTS:
                    raise
                time.sleep(WAL_BACKOFF_S * min(attempt, 10) * (0.5 + random.random()))
                continue
            if mode == "wal" or self.path == ":memory:":
                return
            raise StorageError(f"SQLite database {self.path!r} cannot use WAL (mode {mode!r})")

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StorageError(f"the store {self.path!r} is closed")
        return self._conn

    sessionless = True

    def _session(self) -> AbstractContextManager[None]:
        return _NO_SESSION  # one connection, held for the store's life

    def _begin_write(self, namespace: str | None) -> None:
        self._run("BEGIN IMMEDIATE")
        # no other connection commits while this one holds the write lock, and its own
        # commit leaves data_version as it is: the stamps around this write are known now
        row = self._one("PRAGMA data_version")
        assert row is not None
        self._written, self._writing = None, (self._commits, int(row[0]))

    def _after_commit(self) -> None:
        before, data_version = self._writing
        self._written = ((before, data_version), (self._commits, data_version))

    def write_stamps(self) -> tuple[Hashable, Hashable] | None:
        return self._written

    def _begin_read(self) -> None:
        # every read starts here, with nothing held (a write outside a transaction is sent
        # at once): the statement itself, without ``_run``'s bookkeeping
        try:
            self._connection().execute("BEGIN")
        except sqlite3.Error as error:
            raise StorageError(f"SQLite error on {self.path!r}: {error}") from error

    def commit_stamp(self) -> tuple[int, int]:
        """This store's own write transactions, and ``PRAGMA data_version``, which moves when
        any other connection to the file (another process, another store) has committed and
        holds still inside a snapshot, whose state it names."""
        row = self._one("PRAGMA data_version")
        assert row is not None
        return self._commits, int(row[0])

    def scan_bytes(
        self, key: str, fingerprints: frozenset[str], lock: AbstractContextManager[Any]
    ) -> StoreScan:
        """The database file, journal, write-ahead log and shared memory, read by a child
        process (this one holds the database open); ``lock`` is not needed."""
        return file_scan(self.path, key, fingerprints)

    def cannot_clean(self) -> tuple[str, ...]:
        return SQLITE_CANNOT_CLEAN

    def _translate(self, error: Exception) -> Exception | None:
        if isinstance(error, sqlite3.IntegrityError):
            return ConflictError(f"the store refused a duplicate: {error}")
        if isinstance(error, sqlite3.Error):
            return StorageError(f"SQLite error on {self.path!r}: {error}")
        return None

    def _table_exists(self, name: str) -> bool:
        row = self._one("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,))
        return row is not None

    def _before_migration(self, version: int) -> None:
        if version != 4:
            return
        for trigger in FTS_TRIGGERS:
            self._run(f"DROP TRIGGER IF EXISTS {trigger}")
        try:
            self._run("DROP TABLE IF EXISTS search_fts")
        except StorageError:  # a corrupt index: take it apart
            for shadow in FTS_SHADOWS:
                self._run(f"DROP TABLE IF EXISTS search_fts_{shadow}")
            self._run("PRAGMA writable_schema = ON")
            try:
                self._run("DELETE FROM sqlite_master WHERE type = 'table' AND name = 'search_fts'")
            finally:
                self._run("PRAGMA writable_schema = OFF")

    def _clean_files(self) -> str | None:
        """Copy the WAL into the database file and truncate it (old page images of erased
        rows live in the WAL; in the file, ``secure_delete`` zeroed them). A reader's open
        snapshot pins the WAL: wait briefly, then report instead of blocking writers."""
        busy, log, copied = self._checkpoint()
        if busy or log > 0:
            return (
                f"another connection holds a read transaction on {self.path!r}: the write-ahead "
                f"log was not emptied ({copied} of {log} frames copied); erased bytes may "
                "remain in its -wal file until Memory.finish_cleanup() succeeds"
            )
        return None

    def _checkpoint(self) -> tuple[int, int, int]:
        connection = self._connection()
        try:
            connection.execute(f"PRAGMA busy_timeout = {CLEANUP_WAIT_MS}")
            row = connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        except sqlite3.OperationalError as error:
            if "locked" in str(error) or "busy" in str(error):
                return 1, -1, -1  # a writer holds the lock: report, do not wait
            raise StorageError(f"SQLite error on {self.path!r}: {error}") from error
        finally:
            with suppress(sqlite3.Error):
                connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        return int(row[0]), int(row[1]), int(row[2])

    def query_plan(self, text: str, params: tuple[Any, ...] = ()) -> list[str]:
        """``EXPLAIN QUERY PLAN`` details, for tests that check an index is used."""
        return [str(row[3]) for row in self._all("EXPLAIN QUERY PLAN " + text, params)]

    def close(self) -> None:
        if self._conn is not None:
            with suppress(sqlite3.Error, StorageError):
                self._checkpoint()  # leave a small file behind; a reader only makes it skip
            self._conn.close()
            self._conn = None
