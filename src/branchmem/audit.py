"""The audit log: every mutation, by id, never by content."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One mutation. ``ids`` names what it touched; no text of events or records is kept."""

    seq: int
    time: float
    namespace: str
    op: str
    ids: tuple[str, ...]
    actor: str | None = None
    reason: str = ""
    revision: int | None = None

    def matches(
        self,
        *,
        id: str | None = None,
        op: str | None = None,
        since: float | None = None,
        until: float | None = None,
    ) -> bool:
        if id is not None and id not in self.ids:
            return False
        if op is not None and self.op != op:
            return False
        if since is not None and self.time < since:
            return False
        return until is None or self.time <= until
