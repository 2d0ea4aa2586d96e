"""What corrections leave behind for consumers: the repair queue and delivered contexts.

A correction (withdraw, retract, supersede, erase) hides what it targets at once; what was
*built* on the target goes stale, and what a running conversation was already *given* is out
of date. These values describe both, by id only: no text of an event or record is kept here,
so erasure never has to find a copy in a queue or a delivery log.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from .model import ERASED, RETRACTED, STALE, SUPERSEDED, WITHDRAWN, Record

# Why a delivered item would not be given now, besides the visibility reasons of model.REASONS.
REVISED: Final = "revised"

# Audit op -> what happened to the record named in it (see Memory.history).
HAPPENED: Final[dict[str, str]] = {
    "add_record": "added",
    "revise": "revised",
    "repair": "repaired",
    "withdraw": "withdrawn",
    "restore": "restored",
    "erase": "erased",
    "deliver": "delivered",
    "repair_failed": "repair_failed",
    "repair_dropped": "repair_dropped",
}


def happened(op: str, ids: tuple[str, ...], record_id: str) -> str:
    """What an audit entry means for one record; ops naming two roles tell them apart."""
    if op == "supersede":  # ids = (new, old)
        return SUPERSEDED if ids[1:] and ids[1] == record_id else "superseding"
    if op == "retract":  # ids = (retraction, *targets)
        return "retracting" if ids[0] == record_id else RETRACTED
    if op == "mark_stale":  # ids = (cause, *dependents)
        return "cause_of_stale" if ids[0] == record_id else "went_stale"
    return HAPPENED.get(op, op)


@dataclass(frozen=True, slots=True)
class RepairItem:
    """A record made stale by a correction, waiting for a deriver to rebuild it.

    ``anchor`` is the view where it went stale (the home of the retraction or the superseding
    record; for a withdrawal, the record's own deepest source event); ``reason`` is what the
    ``cause`` underwent: withdrawn, retracted or superseded.
    """

    record_id: str
    revision: int
    reason: str
    cause: str
    anchor: str | None
    seq: int
    attempts: int = 0
    last_error: str = ""


@dataclass(frozen=True, slots=True)
class RepairView:
    """What a deriver is shown: where the record went stale and what holds there now."""

    anchor: str | None
    reason: str
    cause: str
    records: list[Record] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class RepairResult:
    """The outcome of one ``Memory.repair`` pass."""

    repaired: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    cleared: list[str] = field(default_factory=list)
    pending: int = 0


# deriver(stale_record, view) -> (content, sources) or None (no replacement: stay hidden)
Deriver = Callable[[Record, RepairView], "tuple[str, list[str]] | None"]


@dataclass(frozen=True, slots=True)
class Delivery:
    """One context handed to a session: the (record id, revision) pairs it contained."""

    session: str
    seq: int
    anchor: str | None
    time: float
    items: tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class StaleDelivery:
    """A delivered item the session would not be given now, and why."""

    session: str
    record_id: str
    revision: int
    delivered_at: str | None
    anchor: str | None
    reason: str
    current_revision: int | None = None


def stale_reason(
    *, returned: bool, reason: str, retracted: bool, superseded: bool, stale: bool
) -> str:
    """Name why a decided record is not what a context would carry now (never "visible")."""
    if reason in (WITHDRAWN, ERASED):
        return reason
    if retracted:
        return RETRACTED
    if superseded:
        return SUPERSEDED
    if stale:
        return STALE
    return REVISED if returned else reason
