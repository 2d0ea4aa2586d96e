"""Erase cleanup in SQL: erased bytes still in the database's files, until removed.

An erase commits its blanked rows and a row in erase_cleanup in one transaction; the files
are cleaned after the commit (a checkpoint cannot run inside a transaction). Only a cleanup
that completed deletes the rows it saw, so a crash or a busy reader leaves the row, and the
next open or finish_cleanup() resumes.
"""

from __future__ import annotations

from abc import abstractmethod

from .sqlsession import SQLSession


class SQLEraseCleanup(SQLSession):
    """The ``erase_cleanup`` table; each backend says how its files are cleaned."""

    def _mark_cleanup(self, namespace: str) -> None:
        self._run(
            "INSERT INTO erase_cleanup (namespace, seq) VALUES (?, ?) ON CONFLICT DO NOTHING",
            (namespace, self._current_seq(namespace)),
        )

    def cleanup_pending(self) -> bool:
        """True while an erase's cleanup of the files has not completed."""
        with self._session():
            return self._one("SELECT 1 FROM erase_cleanup LIMIT 1") is not None

    def cleanup_due(self, namespace: str) -> bool:
        with self._session():
            row = self._one("SELECT 1 FROM erase_cleanup WHERE namespace = ? LIMIT 1", (namespace,))
            return row is not None

    def finish_cleanup(self) -> str | None:
        if self._depth != 0:
            return "cleanup cannot run inside a transaction"
        with self._session():
            due = self._all("SELECT namespace, seq FROM erase_cleanup")
            if not due:
                return None
            reason = self._clean_files()
            if reason is not None:
                return reason
            # the deletion's own WAL frames hold ids only: the next checkpoint takes them
            self._many("DELETE FROM erase_cleanup WHERE namespace = ? AND seq = ?", due)
        return None

    @abstractmethod
    def _clean_files(self) -> str | None:
        """Remove erased bytes from the database's files (nothing open in this session);
        None when done, else why not."""
