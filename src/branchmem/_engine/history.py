"""What happened, read back from the audit log (SPEC §6 "Audit"), and the report's figures.

The audit log holds ids, never content; a record's history is the log's rows that name it,
each told from that record's side (it was superseded, or it did the superseding).
"""

from __future__ import annotations

from typing import Any, Final

from .._core.validation import check_id
from ..errors import NotFoundError
from ..model import RETRACTED, SUPERSEDED
from .namespace import Namespace
from .repair import pending

# Audit op -> what happened to the record named in it (see ``Memory.history``).
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


def history(ns: Namespace, record_id: str) -> list[dict[str, Any]]:
    """One entry per audit row naming the record, oldest first, with the revision that
    held when it happened."""
    check_id(record_id, "record id")
    revisions = ns.store.get_revisions(ns.name, record_id)
    if not revisions:
        raise NotFoundError(f"record {record_id!r} not found in namespace {ns.name!r}")
    entries = []
    for entry in ns.store.audit(ns.name, id=record_id):
        revision = entry.revision if entry.ids[:1] == (record_id,) else None
        if revision is None:  # the revision that held when it happened
            held = [r.revision for r in revisions if r.seq <= entry.seq]
            revision = held[-1] if held else None
        entries.append(
            {
                "seq": entry.seq,
                "time": entry.time,
                "op": entry.op,
                "happened": happened(entry.op, entry.ids, record_id),
                "revision": revision,
                "ids": list(entry.ids),
                "reason": entry.reason,
                "actor": entry.actor,
            }
        )
    return entries


def report(ns: Namespace) -> dict[str, Any]:
    """Decision counts by reason (every case of missing information) and store gauges."""
    counts = ns.counts
    waiting = pending(ns)
    counters = ns.store.counters(ns.name)
    return {
        "mode": ns.mode,
        "decisions": {reason: counts[reason] for reason in sorted(counts)},
        "store": ns.store.gauges(ns.name),
        "repairs": {
            "pending": len({item.record_id for item, _ in waiting}),
            **{name: counters.get(name, 0) for name in ("repaired", "dropped", "failed")},
        },
    }
