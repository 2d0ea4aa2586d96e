"""The in-memory backend: dictionaries plus an undo journal for all-or-nothing calls.

Memory per record is kept small (bench/footprint.py measures it): the indexes hold the stored
``RevisionNode`` objects themselves, not (record, revision) tuples or ranking tuples; a bucket
with one entry is the entry itself, not a one-element set or list; record and event order are
the insertion order of their dicts; repeated strings (an event id cited as a source, kind, key,
scope, role) are stored once; empty meta and empty id sets are one shared object. Fewer
container objects also make a full garbage collection proportionally cheaper. The tables
themselves (one namespace's dicts and indexes) and the helpers that share what they hold are
in ``memtables.py``; this module writes them under the journal and reads them.
"""

from __future__ import annotations

import sys
import threading
from bisect import bisect_left, insort
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import replace
from itertools import islice
from typing import Any

from .._core.provenance import Gate, RevisionNode
from .._core.questions import IndexTooLarge, TreeIndex
from .._core.retraction import TREE, RetractionNode
from .._core.rules import rank_key
from .._core.topology import EventNode
from .._core.validation import check_text
from ..audit import AuditEntry
from ..errors import ConflictError
from ..model import RETRACTION_KIND, Delivery, RepairItem
from ..receipt import ResidueScope, StoreScan
from .base import TOMBSTONE, ItemByItemAnswers, MessageRow, PathMessage, RevisionKey
from .keys import ApiKeyRow, KeyStore
from .memtables import (
    LIST_MAX,
    NO_IDS,
    NO_META,
    RECORD_ORDER,
    SHARE_TRIES,
    Bucket,
    Tables,
    bucket_nodes,
    group_order,
    latest_first,
    rank_in,
    revision_keys,
    shared_name,
    shared_ref,
    stored_values,
)
from .residue import MEMORY_CANNOT_CLEAN, object_hits


class InMemoryStore(ItemByItemAnswers, KeyStore):
    """Process-local storage. Every mutation logs its inverse so a failed call rolls back."""

    process_local = True
    backend = "memory"

    def __init__(self) -> None:
        self._spaces: dict[str, Tables] = {}
        self._api_keys: dict[str, ApiKeyRow] = {}
        self._keys_lock = threading.Lock()  # a key's check and insert are one step
        self._journal: list[Callable[[], None]] | None = None
        self._changes = 0  # moved by every change and every transaction's end
        # the stamps around the last outermost transaction that ended well (``write_stamps``)
        self._written: tuple[int, int] | None = None

    # -- journal -----------------------------------------------------------------------
    @contextmanager
    def reading(self, namespace: str) -> Iterator[None]:
        yield  # the caller's lock already excludes writers

    @contextmanager
    def transaction(self, namespace: str | None = None) -> Iterator[None]:
        outermost = self._journal is None
        if outermost:
            self._journal = []
            self._written = None
        began = self._changes
        assert self._journal is not None
        savepoint = len(self._journal)
        try:
            yield
        except BaseException:
            journal = self._journal
            while len(journal) > savepoint:
                journal.pop()()
            if outermost:
                self._journal = None
            self._changes += 1
            raise
        if outermost:
            self._journal = None
        self._changes += 1
        if outermost:  # the caller's lock kept every other writer out meanwhile
            self._written = (began, self._changes)

    def commit_stamp(self) -> int:
        return self._changes

    def write_stamps(self) -> tuple[int, int] | None:
        return self._written

    def scan_bytes(
        self, key: str, fingerprints: frozenset[str], lock: AbstractContextManager[Any]
    ) -> StoreScan:
        """Every string reachable from the store's objects, under ``lock``: writers change
        them in place."""
        with lock:
            return StoreScan({"objects": object_hits(self, key, fingerprints)})

    def cannot_clean(self) -> tuple[str, ...]:
        return MEMORY_CANNOT_CLEAN

    def api_keys(self) -> KeyStore:
        return self

    def _undo(self, action: Callable[[], None]) -> None:
        self._changes += 1
        if self._journal is not None:
            self._journal.append(action)

    def _dict_set(self, mapping: dict[Any, Any], key: Any, value: Any) -> None:
        if key in mapping:
            old = mapping[key]
            self._undo(lambda: mapping.__setitem__(key, old))
        else:
            self._undo(lambda: mapping.pop(key, None))
        mapping[key] = value

    def _dict_pop(self, mapping: dict[Any, Any], key: Any) -> None:
        if key in mapping:
            old = mapping.pop(key)
            self._undo(lambda: mapping.__setitem__(key, old))

    def _bucket_add(self, index: dict[str, Bucket], name: str, node: RevisionNode) -> None:
        """File ``node`` under ``name`` (the caller never files one node twice under a name)."""
        bucket = index.get(name)
        if bucket is None:
            self._dict_set(index, name, node)
        elif isinstance(bucket, RevisionNode):
            self._dict_set(index, name, [bucket, node])
        elif isinstance(bucket, dict):
            self._dict_set(bucket, id(node), node)
        elif len(bucket) < LIST_MAX:
            self._append(bucket, node)
        else:
            self._dict_set(index, name, {id(item): item for item in (*bucket, node)})

    def _bucket_discard(self, index: dict[str, Bucket], name: str, node: RevisionNode) -> None:
        bucket = index.get(name)
        if bucket is node:
            self._dict_pop(index, name)
        elif isinstance(bucket, dict):
            self._dict_pop(bucket, id(node))
        elif isinstance(bucket, list):
            at = next((i for i, item in enumerate(bucket) if item is node), None)
            if at is not None:
                del bucket[at]
                self._undo(lambda: bucket.insert(at, node))

    def _append(self, items: list[Any], item: Any) -> None:
        items.append(item)
        self._undo(items.pop)

    def _space(self, namespace: str) -> Tables:
        space = self._spaces.get(namespace)
        if space is None:
            space = self._spaces[namespace] = Tables()
        return space

    def close(self) -> None:
        self._spaces = {}

    def next_seq(self, namespace: str) -> int:
        space = self._space(namespace)
        old = space.seq
        space.seq = old + 1

        def undo() -> None:
            space.seq = old

        self._undo(undo)
        return space.seq

    def prefetch(
        self,
        namespace: str,
        ids: Collection[str],
        *,
        children: bool = True,
        ancestry: Collection[str] | None = None,
        citing: Collection[str] = (),
    ) -> None:
        """Nothing to fetch: every read is a dict look-up."""

    # -- events ------------------------------------------------------------------------
    def get_event(self, namespace: str, event_id: str) -> EventNode | None:
        return self._space(namespace).events.get(event_id)

    def put_event(self, namespace: str, node: EventNode) -> None:
        space = self._space(namespace)
        node = self._compact_event(space, node)
        if node.id not in space.events and node.parent is not None:
            siblings = space.children.get(node.parent)
            if siblings is None:
                self._dict_set(space.children, node.parent, node.id)
            elif isinstance(siblings, str):
                self._dict_set(space.children, node.parent, [siblings, node.id])
            else:
                self._append(siblings, node.id)
        self._dict_set(space.events, node.id, node)

    @staticmethod
    def _compact_event(space: Tables, node: EventNode) -> EventNode:
        """``node`` with its parent id the parent's own string, its role shared, and the
        shared empty meta (a copy only when one of them differs)."""
        known = space.events.get(node.parent) if node.parent is not None else None
        parent = node.parent if known is None else known.id
        role, meta = shared_name(node.role), node.meta or NO_META
        if parent is node.parent and role is node.role and meta is node.meta:
            return node
        assert role is not None
        return EventNode(
            node.id, parent, node.tree, node.explicit_tree, role, node.content, meta,
            node.ts, node.seq, node.attached, node.depth, node.jump, node.tokens,
        )  # fmt: skip

    def children(self, namespace: str, parent_id: str) -> list[str]:
        found = self._space(namespace).children.get(parent_id)
        if found is None:
            return []
        return [found] if isinstance(found, str) else list(found)

    def path_ids(self, namespace: str, anchor: str) -> list[str]:
        events = self._space(namespace).events
        path: list[str] = []
        node = events.get(anchor)
        while node is not None:
            path.append(node.id)
            node = events.get(node.parent) if node.parent is not None else None
        path.reverse()
        return path

    def transcript(self, namespace: str, event_id: str, limit: int) -> list[PathMessage]:
        # the Store default without a method call per event: a context walks ~200 of them
        space = self._space(namespace)
        events, hidden = space.events, space.statuses
        found: list[PathMessage] = []
        node = events.get(event_id)
        while node is not None and len(found) < limit:
            shown = node.id not in hidden
            found.append(node if shown else MessageRow(node.id, node.parent, node.role, ""))
            node = events.get(node.parent) if node.parent is not None else None
        return found

    def iter_events(self, namespace: str, tree: str | None = None) -> Iterator[EventNode]:
        for node in list(self._space(namespace).events.values()):
            if tree is None or node.tree == tree:
                yield node

    def set_head(self, namespace: str, tree: str, event_id: str) -> None:
        self._dict_set(self._space(namespace).heads, tree, event_id)

    def heads(self, namespace: str) -> dict[str, str]:
        return dict(self._space(namespace).heads)

    def namespaces(self) -> list[str]:
        # a read makes an empty Tables too: only a drawn arrival number marks a write
        return sorted(name for name, space in self._spaces.items() if space.seq > 0)

    # -- records -----------------------------------------------------------------------
    def get_revisions(self, namespace: str, record_id: str) -> list[RevisionNode]:
        return list(self._space(namespace).revisions_of(record_id))

    def put_revision(self, namespace: str, node: RevisionNode) -> None:
        check_text(node.kind, f"record {node.record_id!r}: kind")
        check_text(node.content, f"record {node.record_id!r}: content")
        space = self._space(namespace)
        node = self._compact_revision(space, node)
        revisions, stored = space.revisions, space.revisions.get(node.record_id)
        if stored is None:
            assert node.revision == 1
            self._dict_set(revisions, node.record_id, node)
        elif isinstance(stored, list):
            if node.revision <= len(stored):
                self._unindex(space, stored[node.revision - 1])
                self._list_set(stored, node.revision - 1, node)
            else:
                assert node.revision == len(stored) + 1
                self._append(stored, node)
        elif node.revision == 1:
            self._unindex(space, stored)
            self._dict_set(revisions, node.record_id, node)
        else:
            assert node.revision == 2
            self._dict_set(revisions, node.record_id, [stored, node])
        self._index(space, node)

    @staticmethod
    def _compact_revision(space: Tables, node: RevisionNode) -> RevisionNode:
        """``node`` as stored, equal to the input: event ids among its sources as the events'
        own strings, a reference to an event and a gate shared with a revision already filed
        under that event when equal, kind, key and scope shared, the shared empty meta and
        empty id sets. The buckets find what to share: no table kept for it."""
        events = space.events
        sources, refs = node.sources, node.refs
        if sources is not None:
            sources = tuple(
                [e.id if (e := events.get(text)) is not None else text for text in sources]
            )
        if refs is not None:
            refs = tuple([shared_ref(space, ref) for ref in refs])
        gate = node.gate
        if (not gate.detached and gate.detached is not NO_IDS) or (
            not gate.unknown and gate.unknown is not NO_IDS
        ):
            gate = Gate(
                gate.frontiers, gate.detached or NO_IDS, gate.unknown or NO_IDS, gate.legacy
            )
        if gate.frontiers:
            filed = bucket_nodes(space.at_frontier.get(gate.frontiers[0].event))
            for other in islice(filed, SHARE_TRIES):
                if other.gate == gate:
                    gate = other.gate
                    break
        kind = shared_name(node.kind)
        assert kind is not None
        return RevisionNode(
            node.record_id, node.revision, kind, node.content, sources, refs,
            shared_name(node.key), shared_name(node.scope), node.meta or NO_META, node.seq, gate,
        )  # fmt: skip

    @staticmethod
    def _cited_names(node: RevisionNode) -> set[str]:
        return {name for ref in node.refs or () for name in (ref.target, ref.text)}

    def _index(self, space: Tables, node: RevisionNode) -> None:
        if node.gate.frontiers:
            for frontier in node.gate.frontiers:
                self._bucket_add(space.at_frontier, frontier.event, node)
        else:
            self._dict_set(space.ungated, (node.record_id, node.revision), node)
        for event_id in node.gate.detached:
            self._bucket_add(space.pending, event_id, node)
        for name in self._cited_names(node):
            self._bucket_add(space.citing, name, node)
        if node.key is not None:
            for tree in self._key_trees(node):
                ranked = space.by_key.setdefault(node.key, {}).setdefault(tree, [])
                self._insort(ranked, node, rank_in(tree))
                self._count_group(space.groups.setdefault(tree, {}), (node.key, node.scope), 1)
            self._insort(space.by_key_seq.setdefault(node.key, []), node, latest_first)
        for tree in self._unkeyed_trees(node):
            self._insort(space.unkeyed.setdefault(tree, []), node, rank_in(tree))

    def _unindex(self, space: Tables, node: RevisionNode) -> None:
        for frontier in node.gate.frontiers:
            self._bucket_discard(space.at_frontier, frontier.event, node)
        if not node.gate.frontiers:
            self._dict_pop(space.ungated, (node.record_id, node.revision))
        for event_id in node.gate.detached:
            self._bucket_discard(space.pending, event_id, node)
        for name in self._cited_names(node):
            self._bucket_discard(space.citing, name, node)
        if node.key is not None:
            for tree in self._key_trees(node):
                self._remove_sorted(space.by_key[node.key][tree], node, rank_in(tree))
                self._count_group(space.groups[tree], (node.key, node.scope), -1)
            self._remove_sorted(space.by_key_seq[node.key], node, latest_first)
        for tree in self._unkeyed_trees(node):
            self._remove_sorted(space.unkeyed[tree], node, rank_in(tree))

    @staticmethod
    def _key_trees(node: RevisionNode) -> list[str]:
        """Where a keyed revision sits in ``by_key``: once per frontier tree ("": none)."""
        return [f.tree for f in node.gate.frontiers] or [""]

    @staticmethod
    def _unkeyed_trees(node: RevisionNode) -> list[str]:
        """Where a revision competing under no key sits in ``unkeyed``: once per frontier."""
        if node.key is not None and node.kind != RETRACTION_KIND:
            return []
        return [f.tree for f in node.gate.frontiers]

    def _count_group(
        self, groups: dict[tuple[str, str | None], int], group: tuple[str, str | None], step: int
    ) -> None:
        count = groups.get(group, 0) + step
        if count:
            self._dict_set(groups, group, count)
        else:
            self._dict_pop(groups, group)

    def _insort(
        self, ranked: list[RevisionNode], node: RevisionNode, rank: Callable[[RevisionNode], Any]
    ) -> None:
        insort(ranked, node, key=rank)
        self._undo(lambda: self._remove_sorted(ranked, node, rank, journal=False))

    def _remove_sorted(
        self,
        ranked: list[RevisionNode],
        node: RevisionNode,
        rank: Callable[[RevisionNode], Any],
        *,
        journal: bool = True,
    ) -> None:
        """Remove ``node`` itself (ranks are unique: they end in record and revision)."""
        position = bisect_left(ranked, rank(node), key=rank)
        assert ranked[position] is node
        del ranked[position]
        if journal:
            self._undo(lambda: insort(ranked, node, key=rank))

    def revisions_at(self, namespace: str, event_ids: Collection[str]) -> list[RevisionNode]:
        # the hot read of a view along its path: one dict entry per revision, no tuples
        at_frontier = self._space(namespace).at_frontier
        found: dict[int, RevisionNode] = {}
        for event_id in event_ids:
            bucket = at_frontier.get(event_id)
            if bucket is None:
                continue
            if isinstance(bucket, RevisionNode):
                found[id(bucket)] = bucket
            elif isinstance(bucket, dict):
                found.update(bucket)
            else:
                for node in bucket:
                    found[id(node)] = node
        return sorted(found.values(), key=RECORD_ORDER)

    def ungated_revisions(self, namespace: str) -> list[RevisionNode]:
        ungated = self._space(namespace).ungated
        return [ungated[key] for key in sorted(ungated)]

    def record_ids(self, namespace: str) -> list[str]:
        return list(self._space(namespace).revisions)

    def key_candidates(
        self, namespace: str, key: str, tree: str, depth: int, cross_tree: bool = False
    ) -> Iterator[RevisionNode]:
        space = self._space(namespace)
        by_tree = space.by_key.get(key, {})
        placed = by_tree.get(tree, [])
        if placed:
            # a read at the head starts at the top: one depth, not a bisection, finds it
            top = placed[0].gate.frontier_in(tree)
            start = 0
            if top is not None and top.depth > depth:
                bound = (*rank_key(depth, sys.maxsize), "", 0)
                start = bisect_left(placed, bound, key=rank_in(tree))
            for index in range(start, len(placed)):  # lazily: a reader often takes one
                yield placed[index]
        if not cross_tree:
            yield from by_tree.get("", ())
            return
        for node in space.by_key_seq.get(key, ()):
            if node.gate.frontier_in(tree) is None:
                yield node

    def _key_retractions(self, namespace: str, key: str) -> list[RetractionNode]:
        space = self._space(namespace)
        found = (space.retractions.get(i) for i in space.retractions_by_name.get(f"key:{key}", ()))
        return sorted((n for n in found if n is not None and n.key == key), key=lambda n: n.seq)

    def _tree_index(self, namespace: str, tree: str, limit: int) -> TreeIndex | IndexTooLarge:
        space = self._space(namespace)
        placed, unplaced = space.groups.get(tree, {}), space.groups.get("", {})
        unkeyed = space.unkeyed.get(tree, [])
        if len(placed) + len(unplaced) + len(unkeyed) > limit:
            return IndexTooLarge(tree, limit)
        return TreeIndex(
            groups=tuple(sorted({*placed, *unplaced}, key=group_order)),
            unkeyed=(*unkeyed, *self.ungated_revisions(namespace)),
        )

    def revisions_newest_first(self, namespace: str, record_id: str) -> Iterator[RevisionNode]:
        yield from reversed(self._space(namespace).revisions_of(record_id))

    def citing(self, namespace: str, target: str) -> list[RevisionKey]:
        return revision_keys(bucket_nodes(self._space(namespace).citing.get(target)))

    def pending_on(self, namespace: str, event_id: str) -> list[RevisionKey]:
        return revision_keys(bucket_nodes(self._space(namespace).pending.get(event_id)))

    # -- relations ---------------------------------------------------------------------
    def add_supersede(self, namespace: str, new_id: str, old_id: str) -> None:
        space = self._space(namespace)
        news = space.superseders.setdefault(old_id, [])
        if new_id not in news:
            self._append(news, new_id)
            self._append(space.superseded_by.setdefault(new_id, []), old_id)

    def superseders(self, namespace: str, old_ids: Collection[str]) -> dict[str, list[str]]:
        space = self._space(namespace)
        return {old: list(space.superseders[old]) for old in old_ids if space.superseders.get(old)}

    def superseded_by(self, namespace: str, new_id: str) -> list[str]:
        return list(self._space(namespace).superseded_by.get(new_id, ()))

    def _superseded_by_all(self, namespace: str, new_ids: Collection[str]) -> dict[str, list[str]]:
        known = self._space(namespace).superseded_by
        return {new: list(old) for new in new_ids if (old := known.get(new))}

    def put_retraction(self, namespace: str, node: RetractionNode) -> None:
        space = self._space(namespace)
        self._dict_set(space.retractions, node.id, node)
        names = [*node.targets, *([] if node.key is None else [f"key:{node.key}"])]
        for name in names:
            self._name_retraction(space.retractions_by_name.setdefault(name, set()), node.id)

    def _name_retraction(self, found: set[str], retraction_id: str) -> None:
        if retraction_id not in found:
            found.add(retraction_id)
            self._undo(lambda: found.discard(retraction_id))

    def retractions_naming(
        self, namespace: str, record_id: str, key: str | None
    ) -> list[RetractionNode]:
        space = self._space(namespace)
        ids = set(space.retractions_by_name.get(record_id, ()))
        if key is not None:
            ids |= space.retractions_by_name.get(f"key:{key}", set())
        found = (space.retractions[item] for item in ids if item in space.retractions)
        return sorted(
            (n for n in found if record_id in n.targets or (key is not None and n.key == key)),
            key=lambda n: n.seq,
        )

    def retractions(self, namespace: str, ids: Collection[str]) -> dict[str, RetractionNode]:
        known = self._space(namespace).retractions
        return {item: known[item] for item in ids if item in known}

    def tree_retractions(self, namespace: str) -> list[RetractionNode]:
        known = self._space(namespace).retractions.values()
        return sorted((node for node in known if node.scope == TREE), key=lambda n: n.seq)

    # -- corrections -------------------------------------------------------------------
    def set_status(self, namespace: str, item_id: str, status: str | None) -> None:
        statuses = self._space(namespace).statuses
        if status is None:
            self._dict_pop(statuses, item_id)
        else:
            self._dict_set(statuses, item_id, status)

    def statuses(self, namespace: str, ids: Collection[str]) -> dict[str, str]:
        known = self._space(namespace).statuses
        return {item: known[item] for item in ids if item in known}

    def event_roles(self, namespace: str, ids: Collection[str]) -> dict[str, str]:
        found = {item: self.get_event(namespace, item) for item in ids}
        return {item: node.role for item, node in found.items() if node is not None}

    def erase_content(
        self, namespace: str, event_ids: Collection[str], record_ids: Collection[str]
    ) -> None:
        space = self._space(namespace)
        keys = {rev.key for rid in record_ids for rev in space.revisions_of(rid) if rev.key}
        for event_id in event_ids:
            node = space.events.get(event_id)
            if node is not None:
                blank = replace(node, role=TOMBSTONE, content="", meta=NO_META, tokens=None)
                self._dict_set(space.events, event_id, blank)
        self._blank_records(namespace, record_ids, kind=TOMBSTONE)
        for record_id in record_ids:
            self.remove_repairs(namespace, record_id=record_id)
        erased = {*event_ids, *record_ids}
        named = {
            retraction.id
            for retraction in space.retractions.values()
            if erased & set(retraction.targets) or retraction.key in keys
        }
        self._blank_records(namespace, sorted(named - erased))
        surviving = {rev.key for rev in space.all_revisions() if rev.key}
        for retraction in list(space.retractions.values()):
            if retraction.key is not None and retraction.key in keys - surviving:
                forgotten = replace(retraction, key=None, key_scope=None)
                self._dict_set(space.retractions, retraction.id, forgotten)
        touched = erased | named
        for position, entry in enumerate(space.audit):
            if entry.reason and touched.intersection(entry.ids):
                self._list_set(space.audit, position, replace(entry, reason=""))

    def _blank_records(
        self, namespace: str, record_ids: Collection[str], *, kind: str | None = None
    ) -> None:
        """Blank the records' text; ``kind``: their kind too (see ``SQLStore``)."""
        space = self._space(namespace)
        for record_id in record_ids:
            for revision in list(space.revisions_of(record_id)):
                blank = replace(revision, content="", meta={}, key=None, scope=None)
                blank = blank if kind is None else replace(blank, kind=kind)
                self.put_revision(namespace, blank)
                self._dict_pop(space.vectors, (record_id, revision.revision))

    def _list_set(self, items: list[Any], position: int, item: Any) -> None:
        old = items[position]
        items[position] = item
        self._undo(lambda: items.__setitem__(position, old))

    def records_with_key(self, namespace: str, key: str) -> list[str]:
        space = self._space(namespace)
        return sorted({rev.record_id for rev in space.all_revisions() if rev.key == key})

    # -- repair queue ------------------------------------------------------------------
    def put_repair(self, namespace: str, item: RepairItem) -> None:
        self._dict_set(self._space(namespace).repairs, (item.record_id, item.cause), item)

    def repairs(self, namespace: str) -> list[RepairItem]:
        items = self._space(namespace).repairs.values()
        return sorted(items, key=lambda item: (item.seq, item.record_id, item.cause))

    def remove_repairs(
        self, namespace: str, *, record_id: str | None = None, cause: str | None = None
    ) -> None:
        queue = self._space(namespace).repairs
        for key in list(queue):
            if (record_id is None or key[0] == record_id) and (cause is None or key[1] == cause):
                self._dict_pop(queue, key)

    def bump_counter(self, namespace: str, name: str) -> None:
        counters = self._space(namespace).counters
        self._dict_set(counters, name, counters.get(name, 0) + 1)

    def counters(self, namespace: str) -> dict[str, int]:
        return dict(self._space(namespace).counters)

    # -- vectors ---------------------------------------------------------------------
    def put_vector(self, namespace: str, key: RevisionKey, vector: Sequence[float]) -> None:
        self._dict_set(self._space(namespace).vectors, key, [float(x) for x in vector])

    def vectors(
        self, namespace: str, keys: Collection[RevisionKey]
    ) -> dict[RevisionKey, list[float]]:
        stored = self._space(namespace).vectors
        return {key: list(stored[key]) for key in keys if key in stored}

    # -- deliveries --------------------------------------------------------------------
    def add_delivery(self, namespace: str, delivery: Delivery) -> None:
        sessions = self._space(namespace).deliveries
        if delivery.session not in sessions:
            self._dict_set(sessions, delivery.session, [])
        self._append(sessions[delivery.session], delivery)

    def deliveries(self, namespace: str, session: str) -> list[Delivery]:
        return list(self._space(namespace).deliveries.get(session, ()))

    # -- service keys (KeyStore) --------------------------------------------------------
    def add_api_key(self, row: ApiKeyRow, admit: Callable[[list[ApiKeyRow]], None]) -> None:
        with self._keys_lock:
            admit(self.list_api_keys())
            if row.key_id in self._api_keys:
                raise ConflictError(f"api key {row.key_id!r} already exists")
            self._api_keys[row.key_id] = row

    def get_api_key(self, key_id: str) -> ApiKeyRow | None:
        return self._api_keys.get(key_id)

    def list_api_keys(self) -> list[ApiKeyRow]:
        return sorted(self._api_keys.values(), key=lambda k: (k.created, k.key_id))

    def delete_api_key(self, key_id: str) -> bool:
        with self._keys_lock:
            return self._api_keys.pop(key_id, None) is not None

    def residue_values(self, namespace: str, scope: ResidueScope) -> Iterator[tuple[str, object]]:
        """The objects that hold the scope's items, their every field."""
        space = self._spaces.get(namespace)
        if space is None:
            return
        gone = scope.events | scope.records
        named = {rid for item in gone for rid in space.retractions_by_name.get(item, ())}
        records = scope.records | named
        for event_id in sorted(scope.events):
            yield from stored_values("events", space.events.get(event_id))
        for record_id in sorted(records):
            for revision in space.revisions_of(record_id):
                yield from stored_values("revisions", revision)
                yield from stored_values(
                    "vectors", space.vectors.get((record_id, revision.revision))
                )
            yield from stored_values("retractions", space.retractions.get(record_id))
        for (record_id, cause), item in space.repairs.items():
            if record_id in records or cause in gone:
                yield from stored_values("repairs", item)
        for tree in sorted(scope.trees):
            yield from stored_values("tree keys", list(space.groups.get(tree, {})))
        for session in sorted(scope.sessions):
            yield from stored_values("deliveries", space.deliveries.get(session))
        for entry in space.audit:
            if not gone.isdisjoint(entry.ids):
                yield from stored_values("audit", entry)

    def finish_cleanup(self) -> str | None:
        """Nothing outlives the objects here; erased text is garbage once unreferenced."""
        return None

    # -- audit and gauges --------------------------------------------------------------
    def append_audit(self, entry: AuditEntry) -> None:
        check_text(entry.reason, f"{entry.op} {', '.join(entry.ids)}: reason")
        self._append(self._space(entry.namespace).audit, entry)

    def audit(
        self,
        namespace: str,
        *,
        id: str | None = None,
        op: str | None = None,
        since: float | None = None,
        until: float | None = None,
    ) -> list[AuditEntry]:
        entries = self._space(namespace).audit
        return [e for e in entries if e.matches(id=id, op=op, since=since, until=until)]

    def gauges(self, namespace: str) -> dict[str, int]:
        space = self._space(namespace)
        revisions = list(space.all_revisions())
        return {
            "events": len(space.events),
            "detached_events": sum(1 for e in space.events.values() if not e.attached),
            "trees": len({e.tree for e in space.events.values() if e.tree is not None}),
            "records": len(space.revisions),
            "revisions": len(revisions),
            "legacy_revisions": sum(1 for r in revisions if r.gate.legacy),
            "unknown_source_revisions": sum(1 for r in revisions if r.gate.unknown),
            "detached_source_revisions": sum(1 for r in revisions if r.gate.detached),
            "inconsistent_revisions": sum(1 for r in revisions if not r.gate.consistent),
            "retractions": len(space.retractions),
            "withdrawn": sum(1 for s in space.statuses.values() if s == "withdrawn"),
            "erased": sum(1 for s in space.statuses.values() if s == "erased"),
        }
