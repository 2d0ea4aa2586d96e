"""The in-memory store's tables: one namespace's dicts and indexes (``Tables``), the shape
of an index bucket, and the helpers that read and share what they hold (``inmemory.py``
writes them under its undo journal).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, is_dataclass
from dataclasses import fields as dataclass_fields
from itertools import islice
from operator import attrgetter
from typing import Any

from .._core.provenance import EVENT, RevisionNode, SourceRef
from .._core.retraction import RetractionNode
from .._core.rules import rank_key
from .._core.topology import EventNode
from ..audit import AuditEntry
from ..model import Delivery, RepairItem
from .base import RevisionKey

# Shared by every stored revision and event without meta (readers copy meta out, nothing
# writes into a stored one) and by every gate without detached or unknown sources.
NO_META: dict[str, Any] = {}
NO_IDS: frozenset[str] = frozenset()

# An index bucket: one revision alone, a few in a list, many in a dict by object id (so a
# removal stays O(1) on a hot event). The revisions are the stored nodes, which keep them alive.
Bucket = RevisionNode | list[RevisionNode] | dict[int, RevisionNode]
LIST_MAX = 16
SHARE_TRIES = 4  # revisions of a bucket looked at for an equal object to share: O(1) a write

Rank = tuple[int, int, int, str, int]


def rank_in(tree: str) -> Callable[[RevisionNode], Rank]:
    """The order a view ranks revisions placed in ``tree`` ("": no frontier): deepest frontier
    first, then latest arrival."""

    def rank(node: RevisionNode) -> Rank:
        frontier = node.gate.frontier_in(tree) if tree else None
        at = None if frontier is None else frontier.depth
        return (*rank_key(at, node.seq), node.record_id, node.revision)  # the rule's ranking

    return rank


def stored_values(location: str, value: object) -> Iterator[tuple[str, object]]:
    """Every string, bytes and number list in ``value``: a stored object's fields, the
    items of its containers (an index's keys included)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if item is None or isinstance(item, bool | int | float):
            continue
        if isinstance(item, str | bytes):
            yield location, item
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple | set | frozenset):
            stack.extend(item)
        elif is_dataclass(item):
            stack.extend(getattr(item, f.name) for f in dataclass_fields(item))


def latest_first(node: RevisionNode) -> tuple[int, str, int]:
    return (-node.seq, node.record_id, node.revision)


def bucket_nodes(bucket: Bucket | None) -> Iterable[RevisionNode]:
    if bucket is None:
        return ()
    if isinstance(bucket, RevisionNode):
        return (bucket,)
    return bucket.values() if isinstance(bucket, dict) else bucket


RECORD_ORDER = attrgetter("record_id", "revision")


def revision_keys(nodes: Iterable[RevisionNode]) -> list[RevisionKey]:
    return sorted({(node.record_id, node.revision) for node in nodes})


def shared_ref(space: Tables, ref: SourceRef) -> SourceRef:
    """An equal reference already stored (a revision filed as citing the same name holds
    one), else ``ref`` with an event id as the event's own string."""
    for other in islice(bucket_nodes(space.citing.get(ref.text)), SHARE_TRIES):
        for known in other.refs or ():
            if known == ref:
                return known
    if ref.kind == EVENT and ref.text == ref.target:
        event = space.events.get(ref.target)
        if event is not None and event.id is not ref.text:
            return SourceRef(event.id, EVENT, event.id)
    return ref


def shared_name(text: str | None) -> str | None:
    """One shared copy of a short repeated string (interned strings are freed when unused)."""
    return sys.intern(text) if type(text) is str else text


@dataclass
class Tables:
    """One namespace of the in-memory store: its rows and the indexes written with them."""

    seq: int = 0
    events: dict[str, EventNode] = field(default_factory=dict)  # in arrival order
    children: dict[str, str | list[str]] = field(default_factory=dict)  # one child: the id
    heads: dict[str, str] = field(default_factory=dict)
    # record -> its one revision, or the list of them; in the order records arrived
    revisions: dict[str, RevisionNode | list[RevisionNode]] = field(default_factory=dict)
    at_frontier: dict[str, Bucket] = field(default_factory=dict)
    ungated: dict[RevisionKey, RevisionNode] = field(default_factory=dict)
    citing: dict[str, Bucket] = field(default_factory=dict)
    pending: dict[str, Bucket] = field(default_factory=dict)
    superseders: dict[str, list[str]] = field(default_factory=dict)
    superseded_by: dict[str, list[str]] = field(default_factory=dict)
    retractions: dict[str, RetractionNode] = field(default_factory=dict)
    statuses: dict[str, str] = field(default_factory=dict)
    audit: list[AuditEntry] = field(default_factory=list)
    vectors: dict[RevisionKey, list[float]] = field(default_factory=dict)
    repairs: dict[tuple[str, str], RepairItem] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=dict)
    deliveries: dict[str, list[Delivery]] = field(default_factory=dict)
    # key -> tree ("" for revisions without a frontier) -> revisions placed there, one entry
    # per frontier, kept sorted by rank_in(tree): the order a view ranks a key's revisions
    # in; and key -> revisions latest first: the order of those without a frontier on the path
    by_key: dict[str, dict[str, list[RevisionNode]]] = field(default_factory=dict)
    by_key_seq: dict[str, list[RevisionNode]] = field(default_factory=dict)
    retractions_by_name: dict[str, set[str]] = field(default_factory=dict)  # target/key -> ids
    # what a one-tree view decides from without its path (keyed.TreeIndex): tree -> (key,
    # scope) -> how many revisions place it there; tree -> revisions competing under no key,
    # kept sorted by rank_in(tree)
    groups: dict[str, dict[tuple[str, str | None], int]] = field(default_factory=dict)
    unkeyed: dict[str, list[RevisionNode]] = field(default_factory=dict)

    def revisions_of(self, record_id: str) -> Sequence[RevisionNode]:
        stored = self.revisions.get(record_id)
        if stored is None:
            return ()
        return stored if isinstance(stored, list) else (stored,)

    def all_revisions(self) -> Iterator[RevisionNode]:
        for stored in self.revisions.values():
            if isinstance(stored, list):
                yield from stored
            else:
                yield stored


def group_order(group: tuple[str, str | None]) -> tuple[str, bool, str]:
    return (group[0], group[1] is not None, group[1] or "")
