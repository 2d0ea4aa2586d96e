"""The audit log in SQL: every mutation in arrival order, ids only, never content."""

from __future__ import annotations

from typing import Any

from .._core.validation import check_text
from ..audit import AuditEntry
from . import codec
from .sqlsession import SQLSession


class AuditTable:
    """The ``audit`` table and its ``audit_ids`` index."""

    __slots__ = ("session",)

    def __init__(self, session: SQLSession) -> None:
        self.session = session

    def append_audit(self, entry: AuditEntry) -> None:
        check_text(entry.reason, f"{entry.op} {', '.join(entry.ids)}: reason")
        # Both writes go by ``_many``: nothing reads their result, so PostgreSQL sends them
        # with the call's next statement instead of a round trip each.
        self.session._many(
            "INSERT INTO audit (namespace, seq, time, op, ids, actor, reason, revision) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [(
                entry.namespace, entry.seq, entry.time, entry.op, codec.dumps(list(entry.ids)),
                entry.actor, entry.reason, entry.revision,
            )],
        )  # fmt: skip
        self.session._many(  # the entry's seq is new: its rows cannot conflict
            "INSERT INTO audit_ids (namespace, id, seq) VALUES (?, ?, ?)",
            [(entry.namespace, item, entry.seq) for item in dict.fromkeys(entry.ids)],
        )

    def audit(
        self,
        namespace: str,
        *,
        id: str | None = None,
        op: str | None = None,
        since: float | None = None,
        until: float | None = None,
    ) -> list[AuditEntry]:
        where = ["a.namespace = ?"]
        params: list[Any] = [namespace]
        source = "audit a"
        if id is not None:
            source = "audit_ids i JOIN audit a ON a.namespace = i.namespace AND a.seq = i.seq"
            where.append("i.id = ?")
            params.append(id)
        if op is not None:
            where.append("a.op = ?")
            params.append(op)
        if since is not None:
            where.append("a.time >= ?")
            params.append(since)
        if until is not None:
            where.append("a.time <= ?")
            params.append(until)
        rows = self.session._all(
            "SELECT a.seq, a.time, a.op, a.ids, a.actor, a.reason, a.revision "
            f"FROM {source} WHERE {' AND '.join(where)} ORDER BY a.seq",
            params,
        )
        return [codec.audit_entry(namespace, row) for row in rows]
