"""The in-memory backend: dictionaries plus an undo journal for all-or-nothing calls."""

from __future__ import annotations

import sys
import threading
from bisect import bisect_left, insort
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from ..audit import AuditEntry
from ..errors import ConflictError
from ..model import RETRACTION_KIND, Delivery, RepairItem
from ..provenance import RevisionNode
from ..questions import Facts, IndexTooLarge, Questions, TreeIndex
from ..retraction import TREE, RetractionNode
from ..rules import rank_key
from ..topology import EventNode
from ..validation import check_text
from .base import TOMBSTONE, MessageRow, PathMessage, RevisionKey, Store, answer_item_by_item
from .keys import ApiKeyRow, KeyStore


@dataclass
class _Namespace:
    seq: int = 0
    events: dict[str, EventNode] = field(default_factory=dict)
    event_order: list[str] = field(default_factory=list)
    children: dict[str, list[str]] = field(default_factory=dict)
    heads: dict[str, str] = field(default_factory=dict)
    revisions: dict[str, list[RevisionNode]] = field(default_factory=dict)
    record_order: list[str] = field(default_factory=list)
    at_frontier: dict[str, set[RevisionKey]] = field(default_factory=dict)
    ungated: set[RevisionKey] = field(default_factory=set)
    citing: dict[str, set[RevisionKey]] = field(default_factory=dict)
    pending: dict[str, set[RevisionKey]] = field(default_factory=dict)
    superseders: dict[str, list[str]] = field(default_factory=dict)
    superseded_by: dict[str, list[str]] = field(default_factory=dict)
    retractions: dict[str, RetractionNode] = field(default_factory=dict)
    statuses: dict[str, str] = field(default_factory=dict)
    audit: list[AuditEntry] = field(default_factory=list)
    vectors: dict[RevisionKey, list[float]] = field(default_factory=dict)
    repairs: dict[tuple[str, str], RepairItem] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=dict)
    deliveries: dict[str, list[Delivery]] = field(default_factory=dict)
    # key -> tree ("" for revisions without a frontier) -> (*rank_key, record, revision),
    # one entry per frontier, kept sorted: the order a view ranks a key's revisions in; and
    # key -> (-seq, record, revision): the order of those without a frontier on the path
    by_key: dict[str, dict[str, list[tuple[int, int, int, str, int]]]] = field(default_factory=dict)
    by_key_seq: dict[str, list[tuple[int, str, int]]] = field(default_factory=dict)
    retractions_by_name: dict[str, set[str]] = field(default_factory=dict)  # target/key -> ids
    # what a one-tree view decides from without its path (questions.TreeIndex): tree -> (key,
    # scope) -> how many revisions place it there; tree -> revisions competing under no key
    # (*rank_key, record, revision), kept sorted
    groups: dict[str, dict[tuple[str, str | None], int]] = field(default_factory=dict)
    unkeyed: dict[str, list[tuple[int, int, int, str, int]]] = field(default_factory=dict)


def group_order(group: tuple[str, str | None]) -> tuple[str, bool, str]:
    return (group[0], group[1] is not None, group[1] or "")


class InMemoryStore(Store, KeyStore):
    """Process-local storage. Every mutation logs its inverse so a failed call rolls back."""

    process_local = True

    def __init__(self) -> None:
        self._spaces: dict[str, _Namespace] = {}
        self._api_keys: dict[str, ApiKeyRow] = {}
        self._keys_lock = threading.Lock()  # a key's check and insert are one step
        self._journal: list[Callable[[], None]] | None = None

    # -- journal -----------------------------------------------------------------------
    @contextmanager
    def reading(self, namespace: str) -> Iterator[None]:
        yield  # the caller's lock already excludes writers

    @contextmanager
    def transaction(self, namespace: str | None = None) -> Iterator[None]:
        outermost = self._journal is None
        if outermost:
            self._journal = []
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
            raise
        if outermost:
            self._journal = None

    def _undo(self, action: Callable[[], None]) -> None:
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

    def _index_add(self, index: dict[str, set[RevisionKey]], key: str, item: RevisionKey) -> None:
        bucket = index.setdefault(key, set())
        if item not in bucket:
            bucket.add(item)
            self._undo(lambda: bucket.discard(item))

    def _index_discard(
        self, index: dict[str, set[RevisionKey]], key: str, item: RevisionKey
    ) -> None:
        bucket = index.get(key)
        if bucket is not None and item in bucket:
            bucket.discard(item)
            self._undo(lambda: bucket.add(item))

    def _append(self, items: list[Any], item: Any) -> None:
        items.append(item)
        self._undo(items.pop)

    def _space(self, namespace: str) -> _Namespace:
        space = self._spaces.get(namespace)
        if space is None:
            space = self._spaces[namespace] = _Namespace()
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

    def prefetch(self, namespace: str, ids: Collection[str]) -> None:
        """Nothing to fetch: every read is a dict look-up."""

    # -- events ------------------------------------------------------------------------
    def get_event(self, namespace: str, event_id: str) -> EventNode | None:
        return self._space(namespace).events.get(event_id)

    def put_event(self, namespace: str, node: EventNode) -> None:
        space = self._space(namespace)
        if node.id not in space.events:
            self._append(space.event_order, node.id)
            if node.parent is not None:
                siblings = space.children.setdefault(node.parent, [])
                self._append(siblings, node.id)
        self._dict_set(space.events, node.id, node)

    def children(self, namespace: str, parent_id: str) -> list[str]:
        return list(self._space(namespace).children.get(parent_id, ()))

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
        space = self._space(namespace)
        for event_id in list(space.event_order):
            node = space.events[event_id]
            if tree is None or node.tree == tree:
                yield node

    def set_head(self, namespace: str, tree: str, event_id: str) -> None:
        self._dict_set(self._space(namespace).heads, tree, event_id)

    def heads(self, namespace: str) -> dict[str, str]:
        return dict(self._space(namespace).heads)

    def namespaces(self) -> list[str]:
        # a read makes an empty _Namespace too: only a drawn arrival number marks a write
        return sorted(name for name, space in self._spaces.items() if space.seq > 0)

    # -- records -----------------------------------------------------------------------
    def get_revisions(self, namespace: str, record_id: str) -> list[RevisionNode]:
        return list(self._space(namespace).revisions.get(record_id, ()))

    def put_revision(self, namespace: str, node: RevisionNode) -> None:
        check_text(node.kind, f"record {node.record_id!r}: kind")
        check_text(node.content, f"record {node.record_id!r}: content")
        space = self._space(namespace)
        revisions = space.revisions.get(node.record_id)
        if revisions is None:
            revisions = []
            self._dict_set(space.revisions, node.record_id, revisions)
            self._append(space.record_order, node.record_id)
        if node.revision <= len(revisions):
            self._unindex(space, revisions[node.revision - 1])
            old = revisions[node.revision - 1]
            revisions[node.revision - 1] = node
            self._undo(lambda: revisions.__setitem__(node.revision - 1, old))
        else:
            assert node.revision == len(revisions) + 1
            self._append(revisions, node)
        self._index(space, node)

    def _index(self, space: _Namespace, node: RevisionNode) -> None:
        key = (node.record_id, node.revision)
        if node.gate.frontiers:
            for frontier in node.gate.frontiers:
                self._index_add(space.at_frontier, frontier.event, key)
        else:
            if key not in space.ungated:
                space.ungated.add(key)
                self._undo(lambda: space.ungated.discard(key))
        for event_id in node.gate.detached:
            self._index_add(space.pending, event_id, key)
        for ref in node.refs or ():
            self._index_add(space.citing, ref.target, key)
            self._index_add(space.citing, ref.text, key)
        for name, tree, entry in self._key_entries(node):
            self._insort(space.by_key.setdefault(name, {}).setdefault(tree, []), entry)
            self._count_group(space.groups.setdefault(tree, {}), (name, node.scope), 1)
        for tree, entry in self._unkeyed_entries(node):
            self._insort(space.unkeyed.setdefault(tree, []), entry)
        if node.key is not None:
            latest = (-node.seq, node.record_id, node.revision)
            self._insort(space.by_key_seq.setdefault(node.key, []), latest)

    def _unindex(self, space: _Namespace, node: RevisionNode) -> None:
        key = (node.record_id, node.revision)
        for frontier in node.gate.frontiers:
            self._index_discard(space.at_frontier, frontier.event, key)
        if key in space.ungated:
            space.ungated.discard(key)
            self._undo(lambda: space.ungated.add(key))
        for event_id in node.gate.detached:
            self._index_discard(space.pending, event_id, key)
        for ref in node.refs or ():
            self._index_discard(space.citing, ref.target, key)
            self._index_discard(space.citing, ref.text, key)
        for name, tree, entry in self._key_entries(node):
            self._remove_sorted(space.by_key[name][tree], entry)
            self._count_group(space.groups[tree], (name, node.scope), -1)
        for tree, entry in self._unkeyed_entries(node):
            self._remove_sorted(space.unkeyed[tree], entry)
        if node.key is not None:
            latest = (-node.seq, node.record_id, node.revision)
            self._remove_sorted(space.by_key_seq[node.key], latest)

    @staticmethod
    def _key_entries(node: RevisionNode) -> list[tuple[str, str, tuple[int, int, int, str, int]]]:
        """Where a keyed revision sits in ``by_key``: once per frontier tree ("": none)."""
        if node.key is None:
            return []
        placed: list[tuple[str, int | None]] = [(f.tree, f.depth) for f in node.gate.frontiers]
        return [
            (node.key, tree, (*rank_key(depth, node.seq), node.record_id, node.revision))
            for tree, depth in placed or [("", None)]
        ]

    @staticmethod
    def _unkeyed_entries(node: RevisionNode) -> list[tuple[str, tuple[int, int, int, str, int]]]:
        """Where a revision competing under no key sits in ``unkeyed``: once per frontier."""
        if node.key is not None and node.kind != RETRACTION_KIND:
            return []
        return [
            (f.tree, (*rank_key(f.depth, node.seq), node.record_id, node.revision))
            for f in node.gate.frontiers
        ]

    def _count_group(
        self, groups: dict[tuple[str, str | None], int], group: tuple[str, str | None], step: int
    ) -> None:
        count = groups.get(group, 0) + step
        if count:
            self._dict_set(groups, group, count)
        else:
            self._dict_pop(groups, group)

    def _insort(self, ranked: list[Any], entry: Any) -> None:
        insort(ranked, entry)
        self._undo(lambda: ranked.remove(entry))

    def _remove_sorted(self, ranked: list[Any], entry: Any) -> None:
        ranked.remove(entry)
        self._undo(lambda: insort(ranked, entry))

    def _revision(self, space: _Namespace, key: RevisionKey) -> RevisionNode:
        return space.revisions[key[0]][key[1] - 1]

    def revisions_at(self, namespace: str, event_ids: Collection[str]) -> list[RevisionNode]:
        space = self._space(namespace)
        found: set[RevisionKey] = set()
        for event_id in event_ids:
            found |= space.at_frontier.get(event_id, set())
        return [self._revision(space, key) for key in sorted(found)]

    def ungated_revisions(self, namespace: str) -> list[RevisionNode]:
        space = self._space(namespace)
        return [self._revision(space, key) for key in sorted(space.ungated)]

    def record_ids(self, namespace: str) -> list[str]:
        return list(self._space(namespace).record_order)

    def key_candidates(
        self, namespace: str, key: str, tree: str, depth: int, cross_tree: bool = False
    ) -> Iterator[RevisionNode]:
        space = self._space(namespace)
        by_tree = space.by_key.get(key, {})
        placed = by_tree.get(tree, [])
        for index in range(bisect_left(placed, rank_key(depth, sys.maxsize)), len(placed)):
            yield self._revision(space, placed[index][3:])
        if not cross_tree:
            for entry in by_tree.get("", []):
                yield self._revision(space, entry[3:])
            return
        for latest in space.by_key_seq.get(key, []):
            node = self._revision(space, latest[1:])
            if node.gate.frontier_in(tree) is None:
                yield node

    def answer(self, namespace: str, questions: Questions) -> Facts:
        """From the per-item reads (each a dict look-up) and the tree's kept index."""
        return answer_item_by_item(
            self,
            namespace,
            questions,
            key_retractions=lambda key: self._key_retractions(namespace, key),
            tree_index=lambda tree, limit: self._tree_index(namespace, tree, limit),
        )

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
            unkeyed=(
                *(self._revision(space, entry[3:]) for entry in unkeyed),
                *self.ungated_revisions(namespace),
            ),
        )

    def revisions_newest_first(self, namespace: str, record_id: str) -> Iterator[RevisionNode]:
        yield from reversed(self._space(namespace).revisions.get(record_id, []))

    def citing(self, namespace: str, target: str) -> list[RevisionKey]:
        return sorted(self._space(namespace).citing.get(target, ()))

    def pending_on(self, namespace: str, event_id: str) -> list[RevisionKey]:
        return sorted(self._space(namespace).pending.get(event_id, ()))

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

    def erase_content(
        self, namespace: str, event_ids: Collection[str], record_ids: Collection[str]
    ) -> None:
        space = self._space(namespace)
        keys = {rev.key for rid in record_ids for rev in space.revisions.get(rid, ()) if rev.key}
        for event_id in event_ids:
            node = space.events.get(event_id)
            if node is not None:
                blank = replace(node, role=TOMBSTONE, content="", meta={})
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
        surviving = {rev.key for revs in space.revisions.values() for rev in revs if rev.key}
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
            for revision in list(space.revisions.get(record_id, ())):
                blank = replace(revision, content="", meta={}, key=None, scope=None)
                blank = blank if kind is None else replace(blank, kind=kind)
                self.put_revision(namespace, blank)
                self._dict_pop(space.vectors, (record_id, revision.revision))

    def _list_set(self, items: list[Any], position: int, item: Any) -> None:
        old = items[position]
        items[position] = item
        self._undo(lambda: items.__setitem__(position, old))

    def records_with_key(self, namespace: str, key: str) -> list[str]:
        revisions = self._space(namespace).revisions
        return sorted(rid for rid, revs in revisions.items() if any(r.key == key for r in revs))

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
        revisions = [rev for revs in space.revisions.values() for rev in revs]
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
