"""What a schema migration fills or rewrites from older rows in SQL (the statements
themselves are in schema.py, run by ``SQLSession.migrate``)."""

from __future__ import annotations

from . import codec
from .schema import COMPACT_STORAGE_VERSION
from .sqlsession import SQLSession


class MigrationFills:
    """What ``SQLSession._after_migration`` asks, over the store's session: retraction
    targets indexed (4), revisions written short (7)."""

    __slots__ = ("session",)

    def __init__(self, session: SQLSession) -> None:
        self.session = session

    def after_migration(self, version: int) -> None:
        if version == COMPACT_STORAGE_VERSION:
            self._compact_revisions()
        if version == 4:  # index the targets of the retractions written before
            rows = self.session._all("SELECT namespace, id, targets FROM retractions")
            self.session._many(
                "INSERT INTO retraction_targets (namespace, target, id) VALUES (?, ?, ?) "
                "ON CONFLICT DO NOTHING",
                [
                    (namespace, target, rid)
                    for namespace, rid, targets in rows
                    for target in dict.fromkeys(codec.loads(targets))
                ],
            )

    def _compact_revisions(self) -> None:
        """Write the references and gates of revisions stored before schema 7 short, a page
        at a time in key order (a store of millions of revisions never sits in memory)."""
        after: tuple[str, str, int] = ("", "", 0)
        while True:
            rows = self.session._all(
                "SELECT namespace, record_id, revision, sources, refs, gate FROM revisions "
                "WHERE (namespace, record_id, revision) > (?, ?, ?) "
                "ORDER BY namespace, record_id, revision LIMIT 2000",
                after,
            )
            if not rows:
                return
            changed = []
            for namespace, record_id, revision, sources, refs, gate in rows:
                listed = None if sources is None else tuple(codec.loads(sources))
                short = (
                    codec.refs_text(listed, codec.refs_value(listed, refs)),
                    codec.gate_json(codec.gate_value(gate, listed), listed),
                )
                if short != (refs, gate):
                    changed.append((*short, namespace, record_id, revision))
            self.session._many(
                "UPDATE revisions SET refs = ?, gate = ? WHERE namespace = ? AND record_id = ? "
                "AND revision = ?",
                changed,
            )
            after = (rows[-1][0], rows[-1][1], int(rows[-1][2]))
