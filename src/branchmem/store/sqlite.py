"""The embedded default: one SQLite file, WAL, one transaction per public call.

Writers take the database lock up front (``BEGIN IMMEDIATE``) and wait up to
``busy_timeout`` for it, so several processes can share one file. ``secure_delete`` makes
SQLite overwrite freed pages with zeros, which erasure relies on.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from ..errors import ConflictError, StorageError
from .sql import SQLStore

BUSY_TIMEOUT_MS = 30_000


class SQLiteStore(SQLStore):
    """Storage in one SQLite database file (``":memory:"`` for a private in-memory one)."""

    def __init__(self, path: str | Path, *, migrate: bool = False) -> None:
        super().__init__()
        self.path = str(path)
        try:
            self._conn: sqlite3.Connection | None = sqlite3.connect(
                self.path,
                isolation_level=None,  # we issue BEGIN/COMMIT ourselves
                check_same_thread=False,  # Memory serialises threads with its own lock
                timeout=BUSY_TIMEOUT_MS / 1000,
            )
            for pragma in (
                "journal_mode = WAL",
                f"busy_timeout = {BUSY_TIMEOUT_MS}",
                "foreign_keys = ON",
                "synchronous = NORMAL",  # durable against a crashed process; WAL keeps order
                "secure_delete = ON",
                "cache_size = -65536",  # 64 MiB: a large batch stays in memory until COMMIT
            ):
                self._conn.execute(f"PRAGMA {pragma}")
        except sqlite3.Error as error:
            raise StorageError(f"cannot open SQLite database {self.path!r}: {error}") from error
        try:
            version = self.schema_version()
            self.migrate(upgrade=migrate or version == 0)
        except BaseException:
            self.close()
            raise

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StorageError(f"the store {self.path!r} is closed")
        return self._conn

    @contextmanager
    def _session(self) -> Iterator[None]:
        yield

    def _begin_write(self, namespace: str | None) -> None:
        self._run("BEGIN IMMEDIATE")

    def _translate(self, error: Exception) -> Exception | None:
        if isinstance(error, sqlite3.IntegrityError):
            return ConflictError(f"the store refused a duplicate: {error}")
        if isinstance(error, sqlite3.Error):
            return StorageError(f"SQLite error on {self.path!r}: {error}")
        return None

    def _table_exists(self, name: str) -> bool:
        row = self._one("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,))
        return row is not None

    def scrub(self) -> None:
        """Copy the WAL into the database file and truncate it: with ``secure_delete`` the
        freed cells were zeroed, so no erased byte is left in either file."""
        if self._depth == 0 and self._conn is not None:
            self._run("PRAGMA wal_checkpoint(TRUNCATE)")

    def query_plan(self, text: str, params: tuple[Any, ...] = ()) -> list[str]:
        """``EXPLAIN QUERY PLAN`` details, for tests that check an index is used."""
        return [str(row[3]) for row in self._all("EXPLAIN QUERY PLAN " + text, params)]

    def close(self) -> None:
        if self._conn is not None:
            with suppress(sqlite3.Error):
                self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self._conn.close()
            self._conn = None
