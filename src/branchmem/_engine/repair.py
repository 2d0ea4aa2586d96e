"""The repair queue and ``repair`` (SPEC §5 "a deriver can rebuild it").

Corrections queue the records built on what they changed (``dependents.mark_stale``); an
entry counts only while its record is still stale somewhere it matters — at its own deepest
source event, or else at the anchor the cause acted from. ``repair`` runs in three steps the
facade puts in separate transactions, because the deriver (maybe a model call) must run
outside any: ``plan`` picks the work, the deriver runs, ``done`` or ``failed`` writes back.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from .._core.visibility import View
from ..errors import InvalidInput
from ..model import STALE, Record, RepairItem, RepairResult, RepairView
from .dependents import home
from .namespace import Namespace
from .records import next_revision, put_new_revision
from .views import chosen, view

# record id -> (its queue entry, the stale revision, what the deriver is shown)
RepairWork = dict[str, tuple[RepairItem, Record, RepairView]]


def _stale_view(
    ns: Namespace, record_id: str, anchors: Iterable[str | None], views: dict[str, View]
) -> tuple[str, View] | None:
    """The first of ``anchors`` where the record is stale, with that view (``views``
    caches one view per anchor for the length of a call)."""
    for anchor in dict.fromkeys(anchors):
        if anchor is None:
            continue
        found = views.get(anchor)
        if found is None:
            if ns.store.get_event(ns.name, anchor) is None:
                continue
            found = views[anchor] = View(ns.store, ns.name, anchor, ns.mode)
        decision = found.decide(record_id)
        if (
            decision.revision is not None
            and decision.stale
            and not (decision.retracted or decision.superseded)
        ):
            return anchor, found
    return None


def _where_stale(
    ns: Namespace, item: RepairItem, views: dict[str, View]
) -> tuple[RepairItem, View] | None:
    """Where a queued record is stale now: at its own deepest source event, or else at
    the anchor the cause acted from; None once nothing there leaves it stale."""
    revisions = ns.store.get_revisions(ns.name, item.record_id)
    if not revisions:
        return None
    found = _stale_view(ns, item.record_id, (home(revisions[-1]), item.anchor), views)
    if found is None:
        return None
    return replace(item, anchor=found[0]), found[1]


def pending(ns: Namespace) -> list[tuple[RepairItem, View]]:
    """Queue entries whose record is still stale, each with the view where it is."""
    views: dict[str, View] = {}
    found = []
    for item in ns.store.repairs(ns.name):
        where = _where_stale(ns, item, views)
        if where is not None:
            found.append(where)
    return found


def pending_count(ns: Namespace) -> int:
    """How many records the queue still holds stale."""
    return len({item.record_id for item, _ in pending(ns)})


def _stale_at(
    ns: Namespace, anchor: str, queued: list[tuple[RepairItem, View]]
) -> list[tuple[RepairItem, View]]:
    """Every record stale at ``anchor``, with its queue entry when it has one."""
    at = view(ns, anchor, False, None)
    entries = {item.record_id: item for item, _ in reversed(queued)}
    found = []
    for decision in chosen(at, None, None, None, False, True):
        if not decision.stale or decision.revision is None:
            continue
        node = decision.revision
        item = entries.get(node.record_id) or RepairItem(
            node.record_id, node.revision, STALE, "", anchor, 0
        )
        found.append((replace(item, anchor=anchor), at))
    return found


def plan(ns: Namespace, anchor: str | None, limit: int | None, result: RepairResult) -> RepairWork:
    """Clear settled entries (into ``result.cleared``) and pick what the deriver rebuilds:
    the queue, or with ``anchor`` every record stale in that view, queued or not."""
    stored = ns.store.repairs(ns.name)
    queued = pending(ns)
    settled = {(i.record_id, i.cause) for i in stored} - {(i.record_id, i.cause) for i, _ in queued}
    todo = queued if anchor is None else _stale_at(ns, anchor, queued)
    for record_id, cause in sorted(settled):
        ns.store.remove_repairs(ns.name, record_id=record_id, cause=cause)
        result.cleared.append(record_id)
    work: RepairWork = {}
    for item, at in todo:
        if item.record_id in work or (limit is not None and len(work) >= limit):
            continue
        latest = ns.store.get_revisions(ns.name, item.record_id)[-1]
        records = [
            ns.to_record(d.revision)
            for d in chosen(at, None, None, None, False, False)
            if d.revision
        ]
        shown = RepairView(item.anchor, item.reason, item.cause, records)
        work[item.record_id] = (item, ns.to_record(latest), shown)
    return work


def failed(ns: Namespace, item: RepairItem, error: str) -> None:
    """Count a failed attempt on the record's entries (queueing one if it had none)."""
    store = ns.store
    entries = [e for e in store.repairs(ns.name) if e.record_id == item.record_id]
    if not entries:  # found by anchor, not queued: queue it with the failure
        entries = [replace(item, cause=item.cause, seq=store.next_seq(ns.name))]
    for entry in entries:
        store.put_repair(ns.name, replace(entry, attempts=entry.attempts + 1, last_error=error))
    store.bump_counter(ns.name, "failed")
    ns.audit("repair_failed", (item.record_id,), reason=item.reason)


def done(
    ns: Namespace,
    item: RepairItem,
    stale_record: Record,
    derived: object,
    result: RepairResult,
) -> None:
    """Write the deriver's result as the next revision (or drop the entry for None)."""
    store = ns.store
    revisions = store.get_revisions(ns.name, item.record_id)
    status = store.statuses(ns.name, [item.record_id]).get(item.record_id)
    if status is not None or revisions[-1].revision != stale_record.revision:
        return  # changed while the deriver ran: the next pass sees the new state
    if derived is None:
        store.remove_repairs(ns.name, record_id=item.record_id)
        store.bump_counter(ns.name, "dropped")
        ns.audit("repair_dropped", (item.record_id,), reason=item.reason)
        result.dropped.append(item.record_id)
        return
    if not isinstance(derived, tuple) or len(derived) != 2:
        raise InvalidInput(f"deriver for {item.record_id!r} must return (content, sources) or None")
    content, sources = derived
    what = f"repair of record {item.record_id!r}"
    node = next_revision(ns, revisions[-1], content, sources, what, refuse_erased=True)
    store.remove_repairs(ns.name, record_id=item.record_id)
    put_new_revision(ns, node, "repair")
    store.bump_counter(ns.name, "repaired")
    result.repaired.append(item.record_id)
