"""What the report reads in SQL: the decision counters and the store's gauges."""

from __future__ import annotations

from .sqlsession import SQLSession


class GaugesTable:
    """The ``counters`` table, and counts over the engine's tables."""

    __slots__ = ("session",)

    def __init__(self, session: SQLSession) -> None:
        self.session = session

    def bump_counter(self, namespace: str, name: str) -> None:
        self.session._run(
            "INSERT INTO counters (namespace, name, value) VALUES (?, ?, 1) "
            "ON CONFLICT (namespace, name) DO UPDATE SET value = counters.value + 1",
            (namespace, name),
        )

    def counters(self, namespace: str) -> dict[str, int]:
        rows = self.session._all(
            "SELECT name, value FROM counters WHERE namespace = ?", (namespace,)
        )
        return {str(name): int(value) for name, value in rows}

    def gauges(self, namespace: str) -> dict[str, int]:
        def count(text: str) -> int:
            row = self.session._one(text, (namespace,))
            return int(row[0]) if row and row[0] is not None else 0

        revisions = "SELECT COUNT(*) FROM revisions WHERE namespace = ?"
        statuses = "SELECT COUNT(*) FROM statuses WHERE namespace = ? AND status = "
        return {
            "events": count("SELECT COUNT(*) FROM events WHERE namespace = ?"),
            "detached_events": count(
                "SELECT COUNT(*) FROM events WHERE namespace = ? AND attached = 0"
            ),
            "trees": count(
                "SELECT COUNT(DISTINCT tree) FROM events WHERE namespace = ? AND tree IS NOT NULL"
            ),
            "records": count(revisions + " AND revision = 1"),
            "revisions": count(revisions),
            "legacy_revisions": count(revisions + " AND legacy = 1"),
            "unknown_source_revisions": count(revisions + " AND unknown_sources = 1"),
            "detached_source_revisions": count(revisions + " AND detached_sources = 1"),
            "inconsistent_revisions": count(revisions + " AND consistent = 0"),
            "retractions": count("SELECT COUNT(*) FROM retractions WHERE namespace = ?"),
            "withdrawn": count(statuses + "'withdrawn'"),
            "erased": count(statuses + "'erased'"),
        }
