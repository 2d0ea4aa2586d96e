"""Reading the memory as it stood at an earlier point (``as_of``, docs/semantics.md "As of").

Every write already says when it happened: events, revisions and retractions carry their
arrival ``seq``, deliveries theirs, and the relations and statuses that have no seq of their
own (supersede, withdraw/restore, set_head) each have an audit entry with one. So a point is
one arrival number, and ``AsOfReader`` answers a ``View``'s questions as the store would
have then: later revisions, retractions, supersedes, withdrawals and head moves are left
out, later restores undone. Two things are read as they are now: where each event sits in
its tree (a parent that arrived later places its child where it always belonged), and
erasure (erased text never comes back: an item erased at any time is ``erased``).

This is the slow, obviously-right path: it builds a whole view and reads the audit log's
corrections; the keyed and tree indexes answer only the present.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import UTC, datetime
from typing import Final

from .._core.provenance import RevisionNode
from .._core.resolution import RevisionKey
from .._core.retraction import RetractionNode
from .._core.topology import EventNode
from ..errors import InvalidInput
from ..model import ERASED, WITHDRAWN, Delivery
from ..store.base import MessageRow, PathMessage, Store
from .namespace import Namespace

# Audit operations whose entry is the only record of when the change happened.
STATUS_OPS: Final = ("withdraw", "restore")


def point(ns: Namespace, as_of: int | str | None) -> int | None:
    """The arrival number ``as_of`` names: an int (or a string of digits, as a query string
    or the CLI carries it) is a ``seq``; any other string an ISO 8601 time, naming the
    point after every write the audit log stamped at or before it (a time without a zone
    is UTC; compared to the microsecond). None stays None: the present."""
    if as_of is None:
        return None
    if isinstance(as_of, bool) or not isinstance(as_of, int | str):
        raise InvalidInput(f"as_of must be a seq (int) or an ISO 8601 time, got {as_of!r}")
    if isinstance(as_of, str) and as_of.isascii() and as_of.isdigit():
        as_of = int(as_of)
    if isinstance(as_of, int):
        if as_of < 0:
            raise InvalidInput(f"as_of must be a seq >= 0, got {as_of}")
        return as_of
    try:
        moment = datetime.fromisoformat(as_of)
    except ValueError:
        raise InvalidInput(
            f"as_of must be a seq (int) or an ISO 8601 time, got {as_of[:64]!r}"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    # a write stamped within the same microsecond counts as at or before it
    candidates = ns.store.audit(ns.name, until=moment.timestamp() + 1e-6)
    stamped = [e.seq for e in candidates if datetime.fromtimestamp(e.time, UTC) <= moment]
    return max(stamped, default=0)


class AsOfReader:
    """A ``visibility.ViewReader`` over ``store`` that answers as of arrival number ``seq``."""

    def __init__(self, store: Store, namespace: str, seq: int) -> None:
        self.store = store
        self.namespace = namespace
        self.seq = seq
        withdrawn: dict[str, bool] = {}
        entries = [e for op in STATUS_OPS for e in store.audit(namespace, op=op) if e.seq <= seq]
        for entry in sorted(entries, key=lambda e: e.seq):
            for item in entry.ids:
                withdrawn[item] = entry.op == "withdraw"
        self.withdrawn = {item for item, now in withdrawn.items() if now}
        self.supersedes: dict[str, list[str]] = {}  # old -> new, as declared by then
        for entry in store.audit(namespace, op="supersede"):
            if entry.seq <= seq and len(entry.ids) == 2:
                news = self.supersedes.setdefault(entry.ids[1], [])
                if entry.ids[0] not in news:
                    news.append(entry.ids[0])
        self._heads: dict[str, str] = {}
        for entry in sorted(store.audit(namespace, op="set_head"), key=lambda e: e.seq):
            node = store.get_event(namespace, entry.ids[0]) if entry.ids else None
            if entry.seq <= seq and node is not None and node.tree is not None:
                self._heads[node.tree] = node.id

    def _then(self, revisions: Sequence[RevisionNode]) -> list[RevisionNode]:
        return [revision for revision in revisions if revision.seq <= self.seq]

    # -- the ViewReader protocol -------------------------------------------------------
    def get_event(self, namespace: str, event_id: str) -> EventNode | None:
        return self.store.get_event(namespace, event_id)

    def path_ids(self, namespace: str, anchor: str) -> list[str]:
        return self.store.path_ids(namespace, anchor)

    def heads(self, namespace: str) -> dict[str, str]:
        return dict(self._heads)

    def get_revisions(self, namespace: str, record_id: str) -> list[RevisionNode]:
        return self._then(self.store.get_revisions(namespace, record_id))

    def revisions_at(self, namespace: str, event_ids: Collection[str]) -> list[RevisionNode]:
        return self._then(self.store.revisions_at(namespace, event_ids))

    def ungated_revisions(self, namespace: str) -> list[RevisionNode]:
        return self._then(self.store.ungated_revisions(namespace))

    def record_ids(self, namespace: str) -> list[str]:
        return [
            rid for rid in self.store.record_ids(namespace) if self.get_revisions(namespace, rid)
        ]

    def pending_on(self, namespace: str, event_id: str) -> list[RevisionKey]:
        # revisions are numbered in arrival order, so those written by then are a prefix
        return [
            (record_id, number)
            for record_id, number in self.store.pending_on(namespace, event_id)
            if number <= len(self.get_revisions(namespace, record_id))
        ]

    def superseders(self, namespace: str, old_ids: Collection[str]) -> dict[str, list[str]]:
        return {old: list(self.supersedes[old]) for old in old_ids if old in self.supersedes}

    def retractions(self, namespace: str, ids: Collection[str]) -> dict[str, RetractionNode]:
        found = self.store.retractions(namespace, ids)
        return {rid: node for rid, node in found.items() if node.seq <= self.seq}

    def tree_retractions(self, namespace: str) -> list[RetractionNode]:
        return [n for n in self.store.tree_retractions(namespace) if n.seq <= self.seq]

    def statuses(self, namespace: str, ids: Collection[str]) -> dict[str, str]:
        """Erased whenever it was (the text is gone); withdrawn as the audit log says then."""
        erased = {i for i, s in self.store.statuses(namespace, ids).items() if s == ERASED}
        return {
            item: ERASED if item in erased else WITHDRAWN
            for item in ids
            if item in erased or item in self.withdrawn
        }


def transcript(ns: Namespace, reader: AsOfReader, anchor: str) -> list[PathMessage]:
    """The anchor's path as a prompt showed it then, root first: events that had arrived,
    those withdrawn then (and every erased one) empty."""
    found = [n for n in ns.store.path_events(ns.name, anchor) if n.seq <= reader.seq]
    hidden = reader.statuses(ns.name, [n.id for n in found])
    return [MessageRow(n.id, n.parent, n.role, "") if n.id in hidden else n for n in found]


def deliveries(ns: Namespace, session: str, seq: int | None) -> list[Delivery]:
    """A session's deliveries made by arrival number ``seq`` (None: all), oldest first."""
    found = ns.store.deliveries(ns.name, session)
    return found if seq is None else [d for d in found if d.seq <= seq]
