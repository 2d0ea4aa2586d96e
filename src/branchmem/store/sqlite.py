"""The embedded default: one SQLite file, WAL, one transaction per public call.

Writers take the database lock up front (``BEGIN IMMEDIATE``) and wait up to
``busy_timeout`` for it, so several processes can share one file. ``secure_delete`` makes
SQLite overwrite freed pages with zeros, which erasure relies on.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from ..errors import ConflictError, StorageError
from .base import RevisionKey
from .sql import SQLStore

# The lexical index: FTS5 over search_docs (external content, so the text is stored once),
# trigram tokens, no case folding (search_text is already lexical.normalize()d).
FTS_SCHEMA = (
    """CREATE VIRTUAL TABLE search_fts USING fts5(
        search_text, content = 'search_docs', content_rowid = 'rowid',
        tokenize = 'trigram case_sensitive 1')""",
    """CREATE TRIGGER search_docs_indexed AFTER INSERT ON search_docs BEGIN
        INSERT INTO search_fts (rowid, search_text) VALUES (new.rowid, new.search_text); END""",
    """CREATE TRIGGER search_docs_unindexed AFTER DELETE ON search_docs BEGIN
        INSERT INTO search_fts (search_fts, rowid, search_text)
        VALUES ('delete', old.rowid, old.search_text); END""",
)

BUSY_TIMEOUT_MS = 30_000


class SQLiteStore(SQLStore):
    """Storage in one SQLite database file (``":memory:"`` for a private in-memory one)."""

    def __init__(self, path: str | Path, *, migrate: bool = False) -> None:
        super().__init__()
        self.path = str(path)
        self._fts_dirty = False  # an erasure deleted FTS entries: merge before checkpointing
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

    def _after_migration(self, version: int) -> None:
        if version == 3:
            for statement in FTS_SCHEMA:
                self._run(statement)
        super()._after_migration(version)

    def lexical_match(self, namespace: str, terms: Sequence[str]) -> list[tuple[RevisionKey, str]]:
        """Terms of three or more characters through the trigram index (a quoted FTS5 phrase
        matches exactly the rows containing it); shorter CJK terms by ``instr``."""
        if not terms:
            return []
        unique = list(dict.fromkeys(terms))
        long_terms = [term for term in unique if len(term) >= 3]
        conditions: list[str] = []
        params: list[Any] = [namespace]
        if long_terms:
            conditions.append("rowid IN (SELECT rowid FROM search_fts WHERE search_fts MATCH ?)")
            params.append(" OR ".join('"' + term.replace('"', '""') + '"' for term in long_terms))
        for term in unique:
            if len(term) < 3:
                conditions.append("instr(search_text, ?) > 0")
                params.append(term)
        rows = self._all(
            "SELECT record_id, revision, search_text FROM search_docs WHERE namespace = ? "
            f"AND ({' OR '.join(conditions)}) ORDER BY record_id, revision",
            params,
        )
        return [((str(r[0]), int(r[1])), str(r[2])) for r in rows]

    def erase_content(
        self, namespace: str, event_ids: Collection[str], record_ids: Collection[str]
    ) -> None:
        super().erase_content(namespace, event_ids, record_ids)
        self._fts_dirty = True

    def scrub(self) -> None:
        """Leave no erased byte in the files. Deleted FTS5 entries live on in older index
        segments until a merge, so the index is merged into one segment first; then the WAL
        is copied into the database file and truncated. With ``secure_delete`` every freed
        cell and page was zeroed on the way."""
        if self._depth == 0 and self._conn is not None:
            if self._fts_dirty:
                with self.transaction(None):
                    self._run("INSERT INTO search_fts (search_fts) VALUES ('optimize')")
                self._fts_dirty = False
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
