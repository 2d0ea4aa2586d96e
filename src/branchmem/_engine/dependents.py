"""What is built on what (SPEC §5 "dependents go stale", §6 ``dependents``).

A correction or a new revision changes something other records were built from. Those
dependents are queued for repair here; whether, and in which view, each really went stale is
decided when the queue is read (``repair.pending``), so a write pays for an index lookup over
the citing records, never for a view.
"""

from __future__ import annotations

from .._core.provenance import RevisionNode
from ..model import ERASED, RepairItem
from .namespace import Namespace


def dependents(ns: Namespace, item_id: str) -> set[str]:
    """Every record built, directly or transitively, on the event or record ``item_id``."""
    found: set[str] = set()
    stack = [item_id]
    while stack:
        for record_id, _ in ns.store.citing(ns.name, stack.pop()):
            if record_id not in found:
                found.add(record_id)
                stack.append(record_id)
    found.discard(item_id)
    return found


def home(node: RevisionNode) -> str | None:
    """The deepest source event of a revision: the view it was written for."""
    frontiers = node.gate.frontiers
    return max(frontiers, key=lambda f: (f.depth, f.event)).event if frontiers else None


def home_of(ns: Namespace, record_id: str) -> str | None:
    return home(ns.store.get_revisions(ns.name, record_id)[-1])


def mark_stale(ns: Namespace, cause: str, reason: str, *, cause_anchor: str | None = None) -> None:
    """Queue every (not erased) record built on ``cause``, in the view the cause acted from
    (``cause_anchor``), else at the record's own home."""
    store = ns.store
    found = dependents(ns, cause)
    if not found:
        return
    erased = store.statuses(ns.name, found)
    marked = [record_id for record_id in sorted(found) if erased.get(record_id) != ERASED]
    if not marked:
        return
    seq = store.next_seq(ns.name)
    for record_id in marked:
        latest = store.get_revisions(ns.name, record_id)[-1]
        anchor = cause_anchor if cause_anchor is not None else home(latest)
        store.put_repair(
            ns.name, RepairItem(record_id, latest.revision, reason, cause, anchor, seq)
        )
    ns.audit("mark_stale", (cause, *marked), reason=reason)
