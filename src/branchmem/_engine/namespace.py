"""One namespace of one store, as a public call sees it inside its transaction.

``Memory`` checks the namespace name once per call and hands every engine function a
``Namespace``: the store, the call's defaults (mode, embedder), who is acting (for the audit
log) and the namespace's decision counts (for ``report``). Engine functions never open a
transaction; the facade owns that.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from .._core.keyed import KeyedView
from .._core.provenance import RevisionNode
from .._core.resolution import Resolution
from .._core.topology import AnchorPath, EventNode, Lookup, SettledPlaces
from .._core.validation import check_id
from ..audit import AuditEntry
from ..errors import ErasedError, NotFoundError
from ..model import ERASED, Record, new_record
from ..search.embedding import Embedder
from ..store.base import Store
from .viewcache import SearchViews


class _EventLookup:
    """``store.get_event`` in one namespace: an object, not a closure, so what a Memory
    keeps leads to no module's globals (an in-memory store's residue check walks it)."""

    __slots__ = ("name", "store")

    def __init__(self, store: Store, name: str) -> None:
        self.store, self.name = store, name

    def __call__(self, event_id: str) -> EventNode | None:
        return self.store.get_event(self.name, event_id)


@dataclass(frozen=True, slots=True)
class Namespace:
    """The store and the call's settings for one (already checked) namespace name."""

    store: Store
    name: str
    mode: str
    counts: Counter[str]
    actor: str | None = None
    embedder: Embedder | None = None
    # a view reads a tree's index when it has at most depth / this many entries (the
    # Memory's option, ``_engine.views.PATH_EVENTS_PER_ENTRY`` unless given; 0: whenever it
    # can, None: never)
    path_events_per_entry: int | None = field(kw_only=True)
    # where attached events sit, kept across the Memory's calls (None: a process-local store,
    # whose own lookups cost no statement)
    places: SettledPlaces | None = field(default=None, kw_only=True)
    # search views kept across the Memory's calls while nothing is committed (None: keep none)
    views: SearchViews | None = field(default=None, kw_only=True)
    # the lookups every call reads events through, made once: a Memory keeps its Namespace
    # across calls, and a keyed read asks for them on every call
    _lookup: Lookup = field(init=False, repr=False, compare=False)
    _place_lookup: Lookup = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        lookup = _EventLookup(self.store, self.name)
        places = lookup if self.places is None else self.places.lookup(self.name, lookup)
        object.__setattr__(self, "_lookup", lookup)  # frozen: set once, here
        object.__setattr__(self, "_place_lookup", places)

    def audit(
        self,
        op: str,
        ids: Iterable[str],
        *,
        reason: str = "",
        revision: int | None = None,
    ) -> None:
        """Append one mutation to the audit log (ids only, never content)."""
        self.store.append_audit(
            AuditEntry(
                seq=self.store.next_seq(self.name),
                time=time.time(),
                namespace=self.name,
                op=op,
                ids=tuple(ids),
                actor=self.actor,
                reason=reason,
                revision=revision,
            )
        )

    def resolution(self) -> Resolution:
        return Resolution(self.store, self.name)

    def lookup(self) -> Lookup:
        return self._lookup

    def place_lookup(self) -> Lookup:
        """A lookup for ancestor tests: an attached event's place may come without its text
        (``topology.SettledPlaces``), so never read content through it."""
        return self._place_lookup

    def anchor_path(self, anchor: EventNode, lookup: Lookup) -> AnchorPath:
        """Ancestor tests on an attached anchor's path over ``lookup``, with the ancestors
        earlier calls found (``topology.SettledPlaces``)."""
        if self.places is None:
            return AnchorPath(anchor, lookup)
        return self.places.path(self.name, anchor, lookup)

    def keyed_view(
        self,
        anchor: EventNode,
        mode: str,
        heads: dict[str, EventNode] | None = None,
        counts: Counter[str] | None = None,
    ) -> KeyedView:
        """A keyed read at an attached ``anchor`` (and ``heads``, cross-tree) whose ancestor
        tests read places and the paths earlier calls walked."""
        return KeyedView(
            self.store, self.name, anchor, mode, heads, self.place_lookup(), self.anchor_path,
            counts,
        )  # fmt: skip

    def place(self, event_id: str, lookup: Lookup | None = None) -> EventNode:
        """``event_node`` for where the event sits, not for its text, through ``lookup``
        (default: ``place_lookup()``)."""
        check_id(event_id, "event id")
        node = (lookup or self.place_lookup())(event_id)
        if node is None:
            raise NotFoundError(f"event {event_id!r} not found in namespace {self.name!r}")
        return node

    # -- the lookups every part needs, with errors that name the id -------------------------
    def anchor_node(self, anchor: str | None) -> EventNode | None:
        """A read's anchor, checked and read once at the top of the call (None: no anchor);
        the engine then hands the node down, never the id to look up again."""
        return None if anchor is None else self.event_node(anchor)

    def event_node(self, event_id: str) -> EventNode:
        check_id(event_id, "event id")
        node = self.store.get_event(self.name, event_id)
        if node is None:
            raise NotFoundError(f"event {event_id!r} not found in namespace {self.name!r}")
        return node

    def latest(self, record_id: str) -> RevisionNode:
        """A record's latest revision; an erased record is an ``ErasedError``."""
        check_id(record_id, "record id")
        revisions = self.store.get_revisions(self.name, record_id)
        if not revisions:
            raise NotFoundError(f"record {record_id!r} not found in namespace {self.name!r}")
        if self.store.statuses(self.name, [record_id]).get(record_id) == ERASED:
            raise ErasedError(f"record {record_id!r} was erased")
        return revisions[-1]

    def status_of(self, item_id: str) -> str | None:
        """Withdrawn, erased or None, for an event or record that must exist."""
        check_id(item_id, "id")
        store = self.store
        if store.get_event(self.name, item_id) is None and not store.get_revisions(
            self.name, item_id
        ):
            raise NotFoundError(f"no event or record {item_id!r} in namespace {self.name!r}")
        return store.statuses(self.name, [item_id]).get(item_id)

    def to_record(self, node: RevisionNode) -> Record:
        return new_record(
            node.record_id, node.revision, node.kind, node.content, node.sources, node.key,
            node.scope, dict(node.meta), node.seq, self.name,
        )  # fmt: skip
