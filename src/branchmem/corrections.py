"""What corrections leave behind for consumers: the repair queue and delivered contexts.

A correction (withdraw, retract, supersede, erase) hides what it targets at once; what was
*built* on the target goes stale, and what a running conversation was already *given* is out
of date. These values describe both, by id only: no text of an event or record is kept here,
so erasure never has to find a copy in a queue or a delivery log.
"""

from __future__ import annotations

from typing import Final

from .model import ERASED, RETRACTED, REVISED, STALE, SUPERSEDED, WITHDRAWN

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
