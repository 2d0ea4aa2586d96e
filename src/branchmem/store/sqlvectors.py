"""Record embeddings in SQL, one per revision, for vector search."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from . import codec
from .base import RevisionKey
from .sqlsession import SQLSession


class VectorsTable:
    """The ``vectors`` table."""

    __slots__ = ("session",)

    def __init__(self, session: SQLSession) -> None:
        self.session = session

    def put_vector(self, namespace: str, key: RevisionKey, vector: Sequence[float]) -> None:
        record_id, revision = key
        self.session._run(
            "INSERT INTO vectors (namespace, record_id, revision, vector) VALUES (?, ?, ?, ?)",
            (namespace, record_id, revision, codec.pack_vector(vector)),
        )

    def vectors(
        self, namespace: str, keys: Collection[RevisionKey]
    ) -> dict[RevisionKey, list[float]]:
        wanted = set(keys)
        found: dict[RevisionKey, list[float]] = {}
        for chunk in self.session._chunks(sorted({record_id for record_id, _ in wanted})):
            rows = self.session._all(
                "SELECT record_id, revision, vector FROM vectors WHERE namespace = ? "
                f"AND record_id IN ({self.session._marks(len(chunk))})",
                (namespace, *chunk),
            )
            for record_id, revision, blob in rows:
                key = (str(record_id), int(revision))
                if key in wanted:
                    found[key] = codec.unpack_vector(bytes(blob))
        return found
