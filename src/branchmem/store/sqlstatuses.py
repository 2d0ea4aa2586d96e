"""Corrections in SQL: the status (withdrawn, erased) of an event or record."""

from __future__ import annotations

from collections.abc import Collection

from .sqlsession import SQLSession


class StatusesTable:
    """The ``statuses`` table over the store's session (a read snapshot keeps what it read,
    in the session's facts)."""

    __slots__ = ("session",)

    def __init__(self, session: SQLSession) -> None:
        self.session = session

    def set_status(self, namespace: str, item_id: str, status: str | None) -> None:
        if status is None:
            self.session._run(
                "DELETE FROM statuses WHERE namespace = ? AND id = ?", (namespace, item_id)
            )
        else:
            self.session._run(
                "INSERT INTO statuses (namespace, id, status) VALUES (?, ?, ?) "
                "ON CONFLICT (namespace, id) DO UPDATE SET status = excluded.status",
                (namespace, item_id, status),
            )

    def statuses(self, namespace: str, ids: Collection[str]) -> dict[str, str]:
        session = self.session
        found: dict[str, str] = {}
        known = session._known_statuses  # filled in a read snapshot only
        unknown: list[str] = []
        for item in ids:
            if (namespace, item) not in known:
                unknown.append(item)
            elif (status := known[(namespace, item)]) is not None:
                found[item] = status
        if not unknown:
            return found
        for chunk in session._chunks(unknown):
            rows = session._all(
                "SELECT id, status FROM statuses WHERE namespace = ? "
                f"AND id IN ({session._marks(len(chunk))})",
                (namespace, *chunk),
            )
            found.update({row[0]: row[1] for row in rows})
            if session._snapshot:
                for item in chunk:
                    known[(namespace, item)] = found.get(item)
        return found
