"""The repair queue in SQL: records a correction made stale, waiting to be rebuilt."""

from __future__ import annotations

from ..model import RepairItem
from .sqlsession import SQLSession


class RepairsTable:
    """The ``repairs`` table: one row per (record, cause) still waiting."""

    __slots__ = ("session",)

    def __init__(self, session: SQLSession) -> None:
        self.session = session

    def put_repair(self, namespace: str, item: RepairItem) -> None:
        self.session._run(
            "INSERT INTO repairs (namespace, record_id, cause, revision, reason, anchor, seq, "
            "attempts, last_error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (namespace, record_id, cause) DO UPDATE SET "
            "revision = excluded.revision, reason = excluded.reason, anchor = excluded.anchor, "
            "seq = excluded.seq, attempts = excluded.attempts, last_error = excluded.last_error",
            (
                namespace, item.record_id, item.cause, item.revision, item.reason, item.anchor,
                item.seq, item.attempts, item.last_error,
            ),
        )  # fmt: skip

    def repairs(self, namespace: str) -> list[RepairItem]:
        rows = self.session._all(
            "SELECT record_id, revision, reason, cause, anchor, seq, attempts, last_error "
            "FROM repairs WHERE namespace = ? ORDER BY seq, record_id, cause",
            (namespace,),
        )
        return [
            RepairItem(str(r[0]), int(r[1]), str(r[2]), str(r[3]), r[4], int(r[5]), int(r[6]), r[7])
            for r in rows
        ]

    def remove_repairs(
        self, namespace: str, *, record_id: str | None = None, cause: str | None = None
    ) -> None:
        where, params = ["namespace = ?"], [namespace]
        for column, value in (("record_id", record_id), ("cause", cause)):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        self.session._run(f"DELETE FROM repairs WHERE {' AND '.join(where)}", params)
