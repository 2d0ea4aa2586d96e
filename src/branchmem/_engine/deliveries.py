"""Delivery tracking (SPEC §6 "Delivery"): what a session was given, and what of it is no
longer what it would be given now.

A delivery keeps (record id, revision) pairs only, so erasure never has to find text here.
"""

from __future__ import annotations

import time

from ..model import (
    ERASED,
    RETRACTED,
    REVISED,
    STALE,
    SUPERSEDED,
    WITHDRAWN,
    Delivery,
    StaleDelivery,
)
from ..search.context import Context
from . import asof
from .namespace import Namespace
from .views import view


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


def deliver(ns: Namespace, session: str, given: Context) -> int:
    """Remember that ``session`` was given a context: its anchor and the (record id,
    revision) pairs it rendered; the delivery's seq."""
    delivery = Delivery(session, ns.store.next_seq(ns.name), given.anchor, time.time(), given.items)
    ns.store.add_delivery(ns.name, delivery)
    ns.audit("deliver", [record_id for record_id, _ in given.items], reason=session)
    return delivery.seq


def judging_anchor(
    ns: Namespace, delivered_at: str | None, heads: dict[str, str] | None = None
) -> str | None:
    """Where to judge a session by default: its tree's head (now, or ``heads``: those of
    a point), else where it was given."""
    if delivered_at is None:
        return None
    node = ns.store.get_event(ns.name, delivered_at)
    if node is None or node.tree is None:
        return delivered_at
    return (ns.store.heads(ns.name) if heads is None else heads).get(node.tree, delivered_at)


def stale_deliveries(
    ns: Namespace, session: str, anchor: str | None, as_of: int | None = None
) -> list[StaleDelivery]:
    """Every delivered record the session would not be given now (``as_of``: of those
    delivered by then, as the memory stood then), judged by the revision it was given last."""
    delivered = asof.deliveries(ns, session, as_of)
    if not delivered:
        return []
    if anchor is None:
        heads = None if as_of is None else asof.AsOfReader(ns.store, ns.name, as_of).heads(ns.name)
        anchor = judging_anchor(ns, delivered[-1].anchor, heads)
    now_view = view(ns, anchor, False, None, as_of=as_of)
    found: list[StaleDelivery] = []
    seen: set[str] = set()
    for delivery in reversed(delivered):  # a record's newest delivery is what counts
        for record_id, revision in delivery.items:
            if record_id in seen:
                continue
            seen.add(record_id)
            decision = now_view.decide(record_id)
            returned = decision.returned(False, False)
            now = decision.revision.revision if decision.revision else None
            if returned and now == revision:
                continue
            reason = stale_reason(
                returned=returned,
                reason=decision.reason,
                retracted=decision.retracted,
                superseded=decision.superseded,
                stale=decision.stale,
            )
            found.append(
                StaleDelivery(
                    session, record_id, revision, delivery.anchor, anchor, reason,
                    now if returned else None,
                )
            )  # fmt: skip
    return found
