"""Erase cleanup in SQL: erased bytes still in the database's files, until removed.

An erase commits its blanked rows and a row in erase_cleanup in one transaction; the files
are cleaned after the commit (a checkpoint cannot run inside a transaction). Only a cleanup
that completed deletes the rows it saw, so a crash or a busy reader leaves the row, and the
next open or finish_cleanup() resumes.
"""

from __future__ import annotations

from .sqlsession import SQLSession


class EraseCleanupTable:
    """The ``erase_cleanup`` table over the store's session; the backend says how its files
    are cleaned (``SQLSession._clean_files``)."""

    __slots__ = ("session",)

    def __init__(self, session: SQLSession) -> None:
        self.session = session

    def mark(self, namespace: str) -> None:
        """Record, in the erase's transaction, that the files' cleanup is due."""
        session = self.session
        session._run(
            "INSERT INTO erase_cleanup (namespace, seq) VALUES (?, ?) ON CONFLICT DO NOTHING",
            (namespace, session._current_seq(namespace)),
        )

    def cleanup_pending(self) -> bool:
        """True while an erase's cleanup of the files has not completed."""
        with self.session._session():
            return self.session._one("SELECT 1 FROM erase_cleanup LIMIT 1") is not None

    def cleanup_due(self, namespace: str) -> bool:
        with self.session._session():
            row = self.session._one(
                "SELECT 1 FROM erase_cleanup WHERE namespace = ? LIMIT 1", (namespace,)
            )
            return row is not None

    def finish_cleanup(self) -> str | None:
        session = self.session
        if session._depth != 0:
            return "cleanup cannot run inside a transaction"
        with session._session():
            due = session._all("SELECT namespace, seq FROM erase_cleanup")
            if not due:
                return None
            reason = session._clean_files()
            if reason is not None:
                return reason
            # the deletion's own WAL frames hold ids only: the next checkpoint takes them
            session._many("DELETE FROM erase_cleanup WHERE namespace = ? AND seq = ?", due)
        return None
