"""What one record says of others in SQL: supersedes and retractions."""

from __future__ import annotations

from collections.abc import Collection

from .._core.retraction import TREE, RetractionNode
from . import codec
from .sqlsession import SQLSession
from .sqlshared import RETRACTION_COLUMNS, supersedes_pairs


class RelationsTable:
    """The ``supersedes``, ``retractions`` and ``retraction_targets`` tables over the store's
    session."""

    __slots__ = ("session",)

    def __init__(self, session: SQLSession) -> None:
        self.session = session

    def add_supersede(self, namespace: str, new_id: str, old_id: str) -> None:
        session = self.session
        session._run(
            "INSERT INTO supersedes (namespace, old_id, new_id, seq) VALUES (?, ?, ?, ?) "
            "ON CONFLICT DO NOTHING",
            (namespace, old_id, new_id, session._current_seq(namespace)),
        )

    def superseders(self, namespace: str, old_ids: Collection[str]) -> dict[str, list[str]]:
        session = self.session
        unknown = [i for i in old_ids if (namespace, i) not in session._unsuperseded]
        return self._pairs("old_id", namespace, unknown) if unknown else {}

    def superseded_by(self, namespace: str, new_id: str) -> list[str]:
        rows = self.session._all(
            "SELECT old_id FROM supersedes WHERE namespace = ? AND new_id = ? ORDER BY seq",
            (namespace, new_id),
        )
        return [row[0] for row in rows]

    def superseded_by_all(self, namespace: str, new_ids: Collection[str]) -> dict[str, list[str]]:
        """``superseded_by`` of many new ids: a statement per chunk (only ids with any)."""
        return self._pairs("new_id", namespace, new_ids)

    def _pairs(self, asked: str, namespace: str, ids: Collection[str]) -> dict[str, list[str]]:
        """Each id of column ``asked`` -> the other ids of its supersedes, in seq order."""
        session = self.session
        found: dict[str, list[str]] = {}
        for chunk in session._chunks(ids):
            rows = session._all(
                *supersedes_pairs(asked, namespace, chunk, session._marks(len(chunk)))
            )
            for key, value in rows:
                found.setdefault(key, []).append(value)
        return found

    def put_retraction(self, namespace: str, node: RetractionNode) -> None:
        self.session._run(
            "INSERT INTO retractions (namespace, id, scope, targets, key_name, key_scope, seq) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                namespace, node.id, node.scope, codec.dumps(list(node.targets)), node.key,
                node.key_scope, node.seq,
            ),
        )  # fmt: skip
        self.session._many(
            "INSERT INTO retraction_targets (namespace, target, id) VALUES (?, ?, ?) "
            "ON CONFLICT DO NOTHING",
            [(namespace, target, node.id) for target in dict.fromkeys(node.targets)],
        )

    def retractions(self, namespace: str, ids: Collection[str]) -> dict[str, RetractionNode]:
        session = self.session
        found: dict[str, RetractionNode] = {}
        for chunk in session._chunks(ids):
            rows = session._all(
                f"SELECT {RETRACTION_COLUMNS} FROM retractions WHERE namespace = ? "
                f"AND id IN ({session._marks(len(chunk))})",
                (namespace, *chunk),
            )
            for row in rows:
                found[row[0]] = codec.retraction_node(row)
        return found

    def tree_retractions(self, namespace: str) -> list[RetractionNode]:
        rows = self.session._all(
            f"SELECT {RETRACTION_COLUMNS} FROM retractions WHERE namespace = ? "
            "AND scope = ? ORDER BY seq",
            (namespace, TREE),
        )
        return [codec.retraction_node(row) for row in rows]
