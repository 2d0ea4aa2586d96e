"""``Memory``: the public API. Each method validates, opens one transaction, composes the
store's primitives with the core rules, and appends to the audit log."""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .audit import AuditEntry
from .corrections import (
    REVISED,
    Delivery,
    Deriver,
    RepairItem,
    RepairResult,
    RepairView,
    StaleDelivery,
    happened,
    stale_reason,
)
from .errors import (
    BranchmemError,
    ConflictError,
    CycleError,
    ErasedError,
    InvalidInput,
    NotFoundError,
)
from .keyed import KeyedView
from .model import (
    ERASED,
    RETRACTED,
    RETRACTION_KIND,
    STALE,
    SUPERSEDED,
    WITHDRAWN,
    Event,
    Explanation,
    Hit,
    Record,
)
from .provenance import RevisionNode, SourceRef
from .resolution import Resolution
from .retraction import BRANCH, RETRACTION_SCOPES, RetractionNode
from .search.context import Context, assemble_context
from .search.embedding import Embedder, hybrid_rank
from .search.lexical import check_k, normalize, query_terms, rank
from .search.tokens import DEFAULT_COUNTER, TokenCounter, check_budget, count_tokens
from .store.base import Store
from .store.inmemory import InMemoryStore
from .topology import (
    EventNode,
    Lookup,
    attach_below,
    check_event_input,
    placement,
    same_event,
    walk_up,
)
from .validation import check_id, check_meta, check_mode, check_optional_str, check_sources
from .visibility import Decision, View

if TYPE_CHECKING:
    from .importers import ImportPlan, ImportSummary, ProgressCallback

DEFAULT_NAMESPACE = "default"


def forget_text() -> None:
    """Empty the process's caches keyed by text, so an erased text is not kept in memory.
    (The store's decoded-row caches are emptied by the store itself.)"""
    normalize.cache_clear()
    query_terms.cache_clear()
    count_tokens.cache_clear()


DEFAULT_BUDGET = 2000  # tokens of context when the caller names no budget


class Memory:
    """Branch-aware memory over one store. Thread-safe; every public call is atomic."""

    def __init__(
        self,
        mode: str = "strict",
        *,
        store: Store | None = None,
        embedder: Embedder | None = None,
        counter: TokenCounter | None = None,
    ) -> None:
        """``embedder`` turns on vector search (every record written is embedded once);
        ``counter`` measures context budgets (default: ``tokens.count_tokens``)."""
        self.mode = check_mode(mode)
        self._store: Store = store if store is not None else InMemoryStore()
        self.embedder = embedder
        self.counter: TokenCounter = counter if counter is not None else DEFAULT_COUNTER
        self._lock = threading.RLock()
        self._counts: dict[str, Counter[str]] = {}
        self._actor = threading.local()

    @classmethod
    def open(
        cls,
        url: str | os.PathLike[str],
        mode: str = "strict",
        *,
        migrate: bool = False,
        embedder: Embedder | None = None,
        counter: TokenCounter | None = None,
    ) -> Memory:
        """Open a durable store: a path or ``sqlite:///...`` (SQLite), ``postgresql://...``.

        A new database is created; one at an older schema version needs ``migrate=True``
        (or ``branchmem migrate URL``); one written by a newer branchmem is refused.
        """
        from .store import open_store

        store = open_store(os.fspath(url), migrate=migrate)
        return cls(mode, store=store, embedder=embedder, counter=counter)

    @contextmanager
    def acting_as(self, actor: str) -> Iterator[None]:
        """Attribute the mutations of this thread to ``actor`` in the audit log."""
        check_id(actor, "actor")
        previous = getattr(self._actor, "name", None)
        self._actor.name = actor
        try:
            yield
        finally:
            self._actor.name = previous

    @property
    def store(self) -> Store:
        return self._store

    # -- lifecycle ---------------------------------------------------------------------
    def close(self) -> None:
        with self._lock:
            self._store.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _write(self, namespace: str) -> Iterator[None]:
        check_id(namespace, "namespace")
        with self._lock, self._store.transaction(namespace):
            yield

    @contextmanager
    def _read(self, namespace: str) -> Iterator[None]:
        check_id(namespace, "namespace")
        with self._lock, self._store.reading(namespace):
            yield

    def _audit(
        self,
        namespace: str,
        op: str,
        ids: Iterable[str],
        *,
        reason: str = "",
        revision: int | None = None,
        actor: str | None = None,
    ) -> None:
        self._store.append_audit(
            AuditEntry(
                seq=self._store.next_seq(namespace),
                time=time.time(),
                namespace=namespace,
                op=op,
                ids=tuple(ids),
                actor=actor if actor is not None else getattr(self._actor, "name", None),
                reason=reason,
                revision=revision,
            )
        )

    def _resolution(self, namespace: str) -> Resolution:
        return Resolution(self._store, namespace)

    def _lookup(self, namespace: str) -> Lookup:
        store = self._store

        def lookup(event_id: str) -> EventNode | None:
            return store.get_event(namespace, event_id)

        return lookup

    # -- events ------------------------------------------------------------------------
    def add_event(
        self,
        id: str,
        parent: str | None = None,
        *,
        tree: str | None = None,
        role: str = "user",
        content: str = "",
        meta: Mapping[str, Any] | None = None,
        ts: float | None = None,
        namespace: str = DEFAULT_NAMESPACE,
    ) -> Event:
        """Add one event; a child may arrive before its parent (it stays detached)."""
        check_id(namespace, "namespace")
        with self._write(namespace):
            arrived = self._add_event(namespace, id, parent, tree, role, content, meta, ts)
            if arrived:
                self._audit(namespace, "add_event", (id,))
                self._resolution(namespace).events_arrived(arrived)
            node = self._event_node(namespace, id)
        return node.to_event(namespace)

    def add_events(
        self, events: Iterable[Mapping[str, Any] | Event], *, namespace: str = DEFAULT_NAMESPACE
    ) -> list[Event]:
        """Add many events in one all-or-nothing call, in any order."""
        check_id(namespace, "namespace")
        specs = [self._event_spec(item, index) for index, item in enumerate(events)]
        with self._write(namespace):
            self._store.prefetch(
                namespace,
                [s["event_id"] for s in specs if isinstance(s["event_id"], str)]
                + [s["parent"] for s in specs if isinstance(s["parent"], str)],
            )
            added: list[str] = []
            arrived: list[str] = []
            for spec in specs:
                settled = self._add_event(namespace, **spec)
                if settled:
                    added.append(spec["event_id"])
                    arrived.extend(settled)
            if added:
                self._audit(namespace, "add_events", added)
                self._resolution(namespace).events_arrived(arrived)
            nodes = [self._event_node(namespace, spec["event_id"]) for spec in specs]
        return [node.to_event(namespace) for node in nodes]

    @staticmethod
    def _event_spec(item: Mapping[str, Any] | Event, index: int) -> dict[str, Any]:
        if isinstance(item, Event):
            return {
                "event_id": item.id,
                "parent": item.parent,
                "tree": item.tree,
                "role": item.role,
                "content": item.content,
                "meta": item.meta,
                "ts": item.ts,
            }
        if not isinstance(item, Mapping):
            raise InvalidInput(f"events[{index}]: expected a mapping or Event, got {item!r}")
        allowed = {"id", "parent", "tree", "role", "content", "meta", "ts"}
        extra = set(item) - allowed
        if extra:
            raise InvalidInput(f"events[{index}]: unknown field(s) {sorted(extra)}")
        if "id" not in item:
            raise InvalidInput(f"events[{index}]: missing field 'id'")
        return {
            "event_id": item["id"],
            "parent": item.get("parent"),
            "tree": item.get("tree"),
            "role": item.get("role", "user"),
            "content": item.get("content", ""),
            "meta": item.get("meta"),
            "ts": item.get("ts"),
        }

    def _add_event(
        self,
        namespace: str,
        event_id: str,
        parent: str | None,
        tree: str | None,
        role: str,
        content: str,
        meta: Mapping[str, Any] | None,
        ts: float | None,
    ) -> list[str]:
        """Write one event; return it and the waiting events it attached ([] for a re-add)."""
        check_event_input(event_id, parent, tree, role, content)
        if ts is not None and (isinstance(ts, bool) or not isinstance(ts, int | float)):
            raise InvalidInput(f"event {event_id!r}: ts must be a number or None")
        store = self._store
        lookup = self._lookup(namespace)
        checked_meta = check_meta(meta, f"event {event_id!r}")
        existing = store.get_event(namespace, event_id)
        if existing is not None:
            if store.statuses(namespace, [event_id]).get(event_id) == ERASED:
                if existing.parent != parent:  # its text is gone; its place in the tree is not
                    raise ConflictError(f"erased event {event_id!r} had another parent")
                return []
            same_event(existing, event_id, parent, tree, role, content)
            return []
        if store.get_revisions(namespace, event_id):
            raise ConflictError(f"id {event_id!r} is already a record in namespace {namespace!r}")
        parent_node = store.get_event(namespace, parent) if parent is not None else None
        if parent_node is not None and tree is not None and parent_node.tree not in (None, tree):
            raise ConflictError(
                f"event {event_id!r}: tree {tree!r} differs from its parent "
                f"{parent!r}'s tree {parent_node.tree!r}"
            )
        attached = parent is None or (parent_node is not None and parent_node.attached)
        if attached:
            placed_tree, depth, jump = placement(event_id, tree, parent_node, lookup)
            where: tuple[str | None, int | None, str | None] = (placed_tree, depth, jump)
        else:
            if parent_node is not None:
                for ancestor in walk_up(parent_node, lookup):
                    if ancestor.parent == event_id:
                        raise CycleError(
                            f"event {event_id!r} with parent {parent!r} closes a cycle "
                            f"through {ancestor.id!r}"
                        )
            where = (tree or (parent_node.tree if parent_node else None), None, None)
        node = EventNode(
            event_id, parent, where[0], tree, role, content, checked_meta,
            None if ts is None else float(ts), store.next_seq(namespace), attached, where[1],
            where[2],
        )  # fmt: skip
        store.put_event(namespace, node)
        return [event_id, *self._settle_descendants(namespace, node)]

    def _settle_descendants(self, namespace: str, node: EventNode) -> list[str]:
        """Attach (or pass the tree down to) detached events waiting below ``node``."""
        store = self._store
        lookup = self._lookup(namespace)
        attached: list[str] = []
        stack = [node]
        while stack:
            parent = stack.pop()
            for child_id in store.children(namespace, parent.id):
                child = store.get_event(namespace, child_id)
                assert child is not None
                if child.explicit_tree is not None and parent.tree not in (
                    None,
                    child.explicit_tree,
                ):
                    raise ConflictError(
                        f"event {parent.id!r} (tree {parent.tree!r}) cannot be the parent of "
                        f"{child_id!r}, which names tree {child.explicit_tree!r}"
                    )
                if parent.attached:
                    child = attach_below(child, parent, lookup)
                    attached.append(child_id)
                elif child.tree is None and parent.tree is not None:
                    child = replace(child, tree=parent.tree)
                else:
                    continue
                store.put_event(namespace, child)
                stack.append(child)
        return attached

    def get_event(self, id: str, *, namespace: str = DEFAULT_NAMESPACE) -> Event:
        with self._read(namespace):
            return self._event_node(namespace, id).to_event(namespace)

    def _event_node(self, namespace: str, event_id: str) -> EventNode:
        check_id(event_id, "event id")
        node = self._store.get_event(namespace, event_id)
        if node is None:
            raise NotFoundError(f"event {event_id!r} not found in namespace {namespace!r}")
        return node

    def path(self, anchor: str, *, namespace: str = DEFAULT_NAMESPACE) -> list[Event]:
        """Events from the root (or, while ancestry is missing, the gap) down to ``anchor``."""
        with self._read(namespace):
            self._event_node(namespace, anchor)
            return [node.to_event(namespace) for node in self._store.path_events(namespace, anchor)]

    def set_head(self, event_id: str, *, namespace: str = DEFAULT_NAMESPACE) -> None:
        """Make ``event_id`` its tree's current node (used by cross-tree views)."""
        with self._write(namespace):
            node = self._event_node(namespace, event_id)
            if node.tree is None:
                raise InvalidInput(
                    f"event {event_id!r} is detached and its tree is unknown; cannot be a head"
                )
            self._store.set_head(namespace, node.tree, event_id)
            self._audit(namespace, "set_head", (event_id,))

    def head(self, tree: str, *, namespace: str = DEFAULT_NAMESPACE) -> str | None:
        with self._read(namespace):
            return self._store.heads(namespace).get(check_id(tree, "tree"))

    def heads(self, *, namespace: str = DEFAULT_NAMESPACE) -> dict[str, str]:
        with self._read(namespace):
            return self._store.heads(namespace)

    def import_(
        self,
        plan: ImportPlan,
        *,
        namespace: str = DEFAULT_NAMESPACE,
        progress: ProgressCallback | None = None,
    ) -> ImportSummary:
        """Write an import plan (``branchmem.importers.load``): one atomic ``add_events`` per
        conversation, then its head; a broken conversation is reported, not raised."""
        return plan.apply(self, namespace=namespace, progress=progress)

    # -- records -----------------------------------------------------------------------
    def add_record(
        self,
        id: str,
        *,
        sources: Iterable[str] | None,
        content: str = "",
        kind: str = "fact",
        key: str | None = None,
        scope: str | None = None,
        meta: Mapping[str, Any] | None = None,
        supersedes: Iterable[str] = (),
        namespace: str = DEFAULT_NAMESPACE,
    ) -> Record:
        """Add a derived memory built from ``sources`` (None marks it legacy)."""
        check_id(kind, "kind")
        if kind == RETRACTION_KIND:
            raise InvalidInput("kind 'retraction' is reserved: use retract()")
        if isinstance(supersedes, str):
            raise InvalidInput("supersedes must be a list of record ids")
        with self._write(namespace):
            node = self._add_record(
                namespace, id, sources, content, kind, key, scope, meta, tuple(supersedes)
            )
        return self._to_record(namespace, node)

    def _add_record(
        self,
        namespace: str,
        record_id: str,
        sources: object,
        content: object,
        kind: str,
        key: object,
        scope: object,
        meta: object,
        supersedes: tuple[str, ...],
    ) -> RevisionNode:
        check_id(record_id, "record id")
        what = f"record {record_id!r}"
        checked_sources = check_sources(sources, what)
        if not isinstance(content, str):
            raise InvalidInput(f"{what}: content must be a string")
        checked_key = check_optional_str(key, f"{what}: key")
        checked_scope = check_optional_str(scope, f"{what}: scope")
        checked_meta = check_meta(meta, what)
        store = self._store
        existing = store.get_revisions(namespace, record_id)
        if existing and store.statuses(namespace, [record_id]).get(record_id) == ERASED:
            raise ErasedError(f"record {record_id!r} was erased; its id cannot be reused")
        if existing:
            first = existing[0]
            same = (first.content, first.sources, first.kind, first.key, first.scope) == (
                content,
                checked_sources,
                kind,
                checked_key,
                checked_scope,
            )
            if same and not supersedes:
                return existing[-1]
            raise ConflictError(f"{what} already exists with different fields; use revise()")
        if store.get_event(namespace, record_id) is not None:
            raise ConflictError(f"id {record_id!r} is already an event in namespace {namespace!r}")
        refs = self._resolution(namespace).refs(checked_sources)
        self._resolution(namespace).check_cycle(record_id, refs)
        node = RevisionNode(
            record_id=record_id,
            revision=1,
            kind=kind,
            content=content,
            sources=checked_sources,
            refs=refs,
            key=checked_key,
            scope=checked_scope,
            meta=checked_meta,
            seq=store.next_seq(namespace),
            gate=self._resolution(namespace).gate(refs),
        )
        store.put_revision(namespace, node)
        self._index(namespace, node)
        self._audit(namespace, "add_record", (record_id,), revision=1)
        for old_id in supersedes:
            self._supersede(namespace, record_id, old_id)
        self._resolution(namespace).record_arrived(record_id, 1)
        return node

    def revise(
        self,
        id: str,
        *,
        content: str,
        sources: Iterable[str] | None,
        meta: Mapping[str, Any] | None = None,
        namespace: str = DEFAULT_NAMESPACE,
    ) -> Record:
        """Write a new revision under the same id, with its own sources."""
        with self._write(namespace):
            latest = self._latest(namespace, id)
            if latest.kind == RETRACTION_KIND:
                raise InvalidInput(f"retraction {id!r} cannot be revised; withdraw it instead")
            what = f"record {id!r}"
            checked_sources = check_sources(sources, what)
            if not isinstance(content, str):
                raise InvalidInput(f"{what}: content must be a string")
            refs = self._resolution(namespace).refs(checked_sources)
            self._resolution(namespace).check_cycle(id, refs)
            node = replace(
                latest,
                revision=latest.revision + 1,
                content=content,
                sources=checked_sources,
                refs=refs,
                meta=latest.meta if meta is None else check_meta(meta, what),
                seq=self._store.next_seq(namespace),
                gate=self._resolution(namespace).gate(refs),
            )
            self._put_new_revision(namespace, node, "revise")
        return self._to_record(namespace, node)

    def _put_new_revision(self, namespace: str, node: RevisionNode, op: str) -> None:
        """Store, index and announce a revision; what cited the old one goes stale."""
        self._store.put_revision(namespace, node)
        self._index(namespace, node)
        self._audit(namespace, op, (node.record_id,), revision=node.revision)
        self._resolution(namespace).record_arrived(node.record_id, node.revision)
        self._mark_stale(namespace, node.record_id, REVISED)

    def _index(self, namespace: str, node: RevisionNode) -> None:
        vector = None
        if self.embedder is not None and node.content:
            vector = self.embedder.embed([node.content])[0]
        key = (node.record_id, node.revision)
        self._store.put_search(namespace, key, normalize(node.content), vector)

    def _check_not_built_on_erased(
        self, namespace: str, what: str, refs: tuple[SourceRef, ...] | None
    ) -> None:
        """A repair derived while its sources were being erased would write erased text back
        (erasure cascades only over what existed when it ran): refuse it. A caller's own
        add_record/revise citing an erased id is allowed; the record is simply never shown."""
        targets = [ref.target for ref in refs or ()]
        for target, status in self._store.statuses(namespace, targets).items():
            if status == ERASED:
                raise ErasedError(f"{what}: source {target!r} was erased")

    def _latest(self, namespace: str, record_id: str) -> RevisionNode:
        check_id(record_id, "record id")
        revisions = self._store.get_revisions(namespace, record_id)
        if not revisions:
            raise NotFoundError(f"record {record_id!r} not found in namespace {namespace!r}")
        if self._store.statuses(namespace, [record_id]).get(record_id) == ERASED:
            raise ErasedError(f"record {record_id!r} was erased")
        return revisions[-1]

    def get_record(
        self, id: str, *, revision: int | None = None, namespace: str = DEFAULT_NAMESPACE
    ) -> Record:
        """The latest (or a named) revision, whatever any view would decide."""
        with self._read(namespace):
            latest = self._latest(namespace, id)
            if revision is None:
                return self._to_record(namespace, latest)
            revisions = self._store.get_revisions(namespace, id)
            if not isinstance(revision, int) or not 1 <= revision <= len(revisions):
                raise NotFoundError(f"record {id!r} has no revision {revision!r}")
            return self._to_record(namespace, revisions[revision - 1])

    @staticmethod
    def _to_record(namespace: str, node: RevisionNode) -> Record:
        return Record(
            id=node.record_id,
            revision=node.revision,
            kind=node.kind,
            content=node.content,
            sources=node.sources,
            key=node.key,
            scope=node.scope,
            meta=dict(node.meta),
            seq=node.seq,
            namespace=namespace,
        )

    # -- invalidation ------------------------------------------------------------------
    def supersede(self, new_id: str, old_id: str, *, namespace: str = DEFAULT_NAMESPACE) -> None:
        """Declare that ``new_id`` replaces ``old_id`` wherever ``new_id`` is visible."""
        with self._write(namespace):
            self._supersede(namespace, new_id, old_id)

    def _supersede(self, namespace: str, new_id: str, old_id: str) -> None:
        self._latest(namespace, new_id)
        self._latest(namespace, old_id)
        if new_id == old_id:
            raise CycleError(f"record {new_id!r} cannot supersede itself")
        stack, seen = [old_id], set()
        while stack:  # old_id must not (transitively) supersede new_id
            current = stack.pop()
            if current == new_id:
                raise CycleError(f"{new_id!r} superseding {old_id!r} would close a cycle")
            if current not in seen:
                seen.add(current)
                stack.extend(self._store.superseded_by(namespace, current))
        self._store.add_supersede(namespace, new_id, old_id)
        self._audit(namespace, "supersede", (new_id, old_id))
        self._mark_stale(
            namespace, old_id, SUPERSEDED, cause_anchor=self._home_of(namespace, new_id)
        )

    def retract(
        self,
        id: str,
        *,
        sources: Iterable[str] | None,
        targets: Iterable[str] = (),
        key: str | None = None,
        key_scope: str | None = None,
        scope: str = BRANCH,
        reason: str = "",
        namespace: str = DEFAULT_NAMESPACE,
    ) -> Record:
        """Write a retraction record; it hides its targets where it acts (SPEC §5)."""
        if scope not in RETRACTION_SCOPES:
            raise InvalidInput(f"retraction scope must be one of {RETRACTION_SCOPES}: {scope!r}")
        if isinstance(targets, str):
            raise InvalidInput("targets must be a list of record ids")
        target_ids = tuple(targets)
        check_optional_str(key, "key")
        check_optional_str(key_scope, "key_scope")
        if not isinstance(reason, str):
            raise InvalidInput("reason must be a string")
        if not target_ids and key is None:
            raise InvalidInput(f"retraction {id!r} needs targets or a key")
        with self._write(namespace):
            for target in target_ids:
                if self._latest(namespace, target).kind == RETRACTION_KIND:
                    raise InvalidInput(
                        f"retraction {id!r} targets retraction {target!r}: withdraw it instead"
                    )
            detail = {
                "scope": scope,
                "targets": list(target_ids),
                "key": key,
                "key_scope": key_scope,
                "reason": reason,
            }
            described = reason or "retracted " + (
                ", ".join(target_ids) if target_ids else f"key {key!r}"
            )
            node = self._add_record(
                namespace, id, sources, described, RETRACTION_KIND, None, None,
                {"retraction": detail}, (),
            )  # fmt: skip
            self._store.put_retraction(
                namespace,
                RetractionNode(id, scope, target_ids, key, key_scope, node.seq),
            )
            self._audit(namespace, "retract", (id, *target_ids), reason=reason)
            hit = set(target_ids)
            if key is not None:
                hit.update(self._store.records_with_key(namespace, key))
            hit.discard(id)
            cited = {t for t, _ in self._store.citing_any(namespace, hit)} if hit else set()
            home = self._home(node) if scope == BRANCH else None
            for target in sorted(cited):
                self._mark_stale(namespace, target, RETRACTED, cause_anchor=home)
        return self._to_record(namespace, node)

    # -- corrections -------------------------------------------------------------------
    def withdraw(self, id: str, *, reason: str = "", namespace: str = DEFAULT_NAMESPACE) -> None:
        """Take an event or record out of every view; its dependents go stale. Reversible."""
        with self._write(namespace):
            status = self._status_of(namespace, id)
            if status == ERASED:
                raise ErasedError(f"{id!r} was erased and cannot be withdrawn")
            self._store.set_status(namespace, id, WITHDRAWN)
            self._audit(namespace, "withdraw", (id,), reason=reason)
            self._mark_stale(namespace, id, WITHDRAWN)

    def erase(self, id: str, *, reason: str = "", namespace: str = DEFAULT_NAMESPACE) -> set[str]:
        """Irreversibly remove the text of ``id`` and of every record built on it.

        Ids, parents and sources stay as a tombstone (the audit log never held text); the
        erased items leave every view. Returns the ids erased. Erasing again is a no-op.
        """
        with self._write(namespace):
            if self._status_of(namespace, id) == ERASED:
                return set()
            erased = {id} | self._dependents(namespace, id)
            store = self._store
            gone = store.statuses(namespace, erased)
            erased = {item for item in erased if gone.get(item) != ERASED}
            events = {item for item in erased if store.get_event(namespace, item) is not None}
            store.erase_content(namespace, events, erased - events)
            for item in sorted(erased):
                store.set_status(namespace, item, ERASED)
            self._audit(namespace, "erase", sorted(erased), reason=reason)
        with self._lock:
            self._store.scrub()
        forget_text()
        return erased

    def restore(self, id: str, *, namespace: str = DEFAULT_NAMESPACE) -> None:
        """Undo ``withdraw``; a no-op for an item that is not withdrawn."""
        with self._write(namespace):
            status = self._status_of(namespace, id)
            if status == ERASED:
                raise ErasedError(f"{id!r} was erased and cannot be restored")
            if status == WITHDRAWN:
                self._store.set_status(namespace, id, None)
                self._store.remove_repairs(namespace, cause=id)
                self._audit(namespace, "restore", (id,))

    def _status_of(self, namespace: str, item_id: str) -> str | None:
        check_id(item_id, "id")
        store = self._store
        if store.get_event(namespace, item_id) is None and not store.get_revisions(
            namespace, item_id
        ):
            raise NotFoundError(f"no event or record {item_id!r} in namespace {namespace!r}")
        return store.statuses(namespace, [item_id]).get(item_id)

    def dependents(self, id: str, *, namespace: str = DEFAULT_NAMESPACE) -> set[str]:
        """Every record built, directly or transitively, on the event or record ``id``."""
        with self._read(namespace):
            self._status_of(namespace, id)
            return self._dependents(namespace, id)

    def _dependents(self, namespace: str, item_id: str) -> set[str]:
        found: set[str] = set()
        stack = [item_id]
        while stack:
            for record_id, _ in self._store.citing(namespace, stack.pop()):
                if record_id not in found:
                    found.add(record_id)
                    stack.append(record_id)
        found.discard(item_id)
        return found

    # -- views -------------------------------------------------------------------------
    def _view(self, namespace: str, anchor: str | None, cross_tree: bool, mode: str | None) -> View:
        check_id(namespace, "namespace")
        if anchor is not None:
            self._event_node(namespace, anchor)
        return View(
            self._store,
            namespace,
            anchor,
            self.mode if mode is None else check_mode(mode),
            cross_tree=bool(cross_tree),
        )

    def _tally(self, view: View, decisions: Iterable[Decision]) -> None:
        view.count(decisions)
        self._counts.setdefault(view.namespace, Counter()).update(view.counts)

    def visible(
        self,
        anchor: str | None,
        *,
        kind: str | None = None,
        key: str | None = None,
        scope: str | None = None,
        cross_tree: bool = False,
        mode: str | None = None,
        include_superseded: bool = False,
        include_stale: bool = False,
        namespace: str = DEFAULT_NAMESPACE,
    ) -> list[Record]:
        """Records visible at ``anchor``, in path order. No anchor: nothing (strict)."""
        with self._read(namespace):
            nodes = self._visible_nodes(
                namespace, anchor, cross_tree, mode, kind, key, scope,
                include_superseded, include_stale,
            )  # fmt: skip
            return [self._to_record(namespace, node) for node in nodes]

    def _visible_nodes(
        self,
        namespace: str,
        anchor: str | None,
        cross_tree: bool,
        mode: str | None,
        kind: str | None = None,
        key: str | None = None,
        scope: str | None = None,
        include_superseded: bool = False,
        include_stale: bool = False,
    ) -> list[RevisionNode]:
        """The revisions ``visible()`` returns, counted in the report."""
        view = self._view(namespace, anchor, cross_tree, mode)
        chosen = self._chosen(view, kind, key, scope, include_superseded, include_stale)
        self._tally(view, chosen)
        return [d.revision for d in chosen if d.revision is not None]

    @staticmethod
    def _chosen(
        view: View,
        kind: str | None,
        key: str | None,
        scope: str | None,
        include_superseded: bool,
        include_stale: bool,
    ) -> list[Decision]:
        chosen = [
            d
            for d in view.decisions().values()
            if d.revision is not None
            and d.returned(include_superseded, include_stale)
            and (kind is None or d.revision.kind == kind)
            and (key is None or d.revision.key == key)
            and (scope is None or d.revision.scope == scope)
        ]
        chosen.sort(key=lambda d: view.sort_key(d.revision) if d.revision else ((0, 0, 0), ""))
        return chosen

    def explain(
        self,
        record_id: str,
        anchor: str | None,
        *,
        cross_tree: bool = False,
        mode: str | None = None,
        include_superseded: bool = False,
        include_stale: bool = False,
        namespace: str = DEFAULT_NAMESPACE,
    ) -> Explanation:
        """Why ``record_id`` is or is not visible at ``anchor``."""
        with self._read(namespace):
            check_id(record_id, "record id")
            if not self._store.get_revisions(namespace, record_id):
                raise NotFoundError(f"record {record_id!r} not found in namespace {namespace!r}")
            view = self._view(namespace, anchor, cross_tree, mode)
            decision = view.decide(record_id)
            self._tally(view, [decision])
            return Explanation(
                record_id=record_id,
                anchor=anchor,
                visible=decision.returned(include_superseded, include_stale),
                reason=decision.reason,
                revision=decision.revision.revision if decision.revision else None,
                source=decision.source,
                fork=decision.fork,
            )

    def is_visible(self, record_id: str, anchor: str | None, **options: Any) -> bool:
        return self.explain(record_id, anchor, **options).visible

    def current(
        self,
        key: str,
        anchor: str | None,
        *,
        scope: str | None = None,
        cross_tree: bool = False,
        mode: str | None = None,
        namespace: str = DEFAULT_NAMESPACE,
    ) -> Record | None:
        """The value of ``(scope, key)`` that holds at ``anchor``, or None.

        At an attached anchor in a one-tree view this reads the key's frontier-ordered index
        (``keyed.KeyedView``): its cost follows the answer, not the path or the key's
        superseded history. Other views build the whole ``View``."""
        check_id(key, "key")
        if anchor is not None and not cross_tree:
            with self._read(namespace):
                node = self._event_node(namespace, anchor)
                if node.attached:
                    chosen = self.mode if mode is None else check_mode(mode)
                    keyed = KeyedView(self._store, namespace, node, chosen)
                    revision = keyed.current(key, scope)
                    self._counts.setdefault(namespace, Counter()).update(keyed.counts)
                    return None if revision is None else self._to_record(namespace, revision)
        found = self.visible(
            anchor, key=key, scope=scope, cross_tree=cross_tree, mode=mode, namespace=namespace
        )
        return found[-1] if found else None

    def stale(
        self,
        anchor: str | None,
        *,
        cross_tree: bool = False,
        mode: str | None = None,
        include_superseded: bool = False,
        namespace: str = DEFAULT_NAMESPACE,
    ) -> list[Record]:
        """Records hidden at ``anchor`` only because something they were built on changed."""
        with self._read(namespace):
            view = self._view(namespace, anchor, cross_tree, mode)
            chosen = self._chosen(view, None, None, None, include_superseded, True)
            chosen = [d for d in chosen if d.stale]
            self._tally(view, chosen)
            return [self._to_record(namespace, d.revision) for d in chosen if d.revision]

    # -- reporting ---------------------------------------------------------------------
    def report(self, *, namespace: str = DEFAULT_NAMESPACE) -> dict[str, Any]:
        """Decision counts by reason (every case of missing information) and store gauges."""
        with self._read(namespace):
            counts = self._counts.get(namespace, Counter())
            pending = self._pending_repairs(namespace)
            counters = self._store.counters(namespace)
            return {
                "mode": self.mode,
                "decisions": {reason: counts[reason] for reason in sorted(counts)},
                "store": self._store.gauges(namespace),
                "repairs": {
                    "pending": len({item.record_id for item, _ in pending}),
                    **{name: counters.get(name, 0) for name in ("repaired", "dropped", "failed")},
                },
            }

    def audit(
        self,
        *,
        id: str | None = None,
        op: str | None = None,
        since: float | None = None,
        until: float | None = None,
        namespace: str = DEFAULT_NAMESPACE,
    ) -> list[AuditEntry]:
        """Mutations in arrival order, filtered by id, op and time; ids only, never content."""
        with self._read(namespace):
            return self._store.audit(namespace, id=id, op=op, since=since, until=until)

    def history(
        self, record_id: str, *, namespace: str = DEFAULT_NAMESPACE
    ) -> list[dict[str, Any]]:
        """What happened to a record, oldest first: one entry per audit row naming it, with
        ``happened`` (added, revised, superseded, retracted, withdrawn, went_stale, repaired,
        delivered, erased, ...) and the revision it happened to."""
        with self._read(namespace):
            check_id(record_id, "record id")
            revisions = self._store.get_revisions(namespace, record_id)
            if not revisions:
                raise NotFoundError(f"record {record_id!r} not found in namespace {namespace!r}")
            entries = []
            for entry in self._store.audit(namespace, id=record_id):
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

    # -- repair ------------------------------------------------------------------------
    @staticmethod
    def _home(node: RevisionNode) -> str | None:
        """The deepest source event of a revision: the view it was written for."""
        frontiers = node.gate.frontiers
        return max(frontiers, key=lambda f: (f.depth, f.event)).event if frontiers else None

    def _home_of(self, namespace: str, record_id: str) -> str | None:
        return self._home(self._store.get_revisions(namespace, record_id)[-1])

    def _stale_view(
        self,
        namespace: str,
        record_id: str,
        anchors: Iterable[str | None],
        views: dict[str, View],
    ) -> tuple[str, View] | None:
        """The first of ``anchors`` where the record is stale, with that view (``views``
        caches one view per anchor for the length of a call)."""
        for anchor in dict.fromkeys(anchors):
            if anchor is None:
                continue
            view = views.get(anchor)
            if view is None:
                if self._store.get_event(namespace, anchor) is None:
                    continue
                view = views[anchor] = View(self._store, namespace, anchor, self.mode)
            decision = view.decide(record_id)
            if (
                decision.revision is not None
                and decision.stale
                and not (decision.retracted or decision.superseded)
            ):
                return anchor, view
        return None

    def _mark_stale(
        self, namespace: str, cause: str, reason: str, *, cause_anchor: str | None = None
    ) -> None:
        """Queue every record built on ``cause``. Whether, and in which view, each went stale
        is decided when the queue is read: a write pays for an index lookup, not a view."""
        store = self._store
        dependents = self._dependents(namespace, cause)
        if not dependents:
            return
        erased = store.statuses(namespace, dependents)
        marked = [record_id for record_id in sorted(dependents) if erased.get(record_id) != ERASED]
        if not marked:
            return
        seq = store.next_seq(namespace)
        for record_id in marked:
            latest = store.get_revisions(namespace, record_id)[-1]
            anchor = cause_anchor if cause_anchor is not None else self._home(latest)
            item = RepairItem(record_id, latest.revision, reason, cause, anchor, seq)
            store.put_repair(namespace, item)
        self._audit(namespace, "mark_stale", (cause, *marked), reason=reason)

    def _where_stale(
        self, namespace: str, item: RepairItem, views: dict[str, View]
    ) -> tuple[RepairItem, View] | None:
        """Where a queued record is stale now: at its own deepest source event, or else at
        the anchor the cause acted from; None once nothing there leaves it stale."""
        revisions = self._store.get_revisions(namespace, item.record_id)
        if not revisions:
            return None
        home = self._home(revisions[-1])
        found = self._stale_view(namespace, item.record_id, (home, item.anchor), views)
        if found is None:
            return None
        return replace(item, anchor=found[0]), found[1]

    def repair_queue(self, *, namespace: str = DEFAULT_NAMESPACE) -> list[RepairItem]:
        """Records a correction made stale that are still stale, oldest first, each with
        the anchor of a view where it is (entries a later change settled are left out)."""
        with self._read(namespace):
            return [item for item, _ in self._pending_repairs(namespace)]

    def _pending_repairs(self, namespace: str) -> list[tuple[RepairItem, View]]:
        views: dict[str, View] = {}
        pending = []
        for item in self._store.repairs(namespace):
            found = self._where_stale(namespace, item, views)
            if found is not None:
                pending.append(found)
        return pending

    def repair(
        self,
        deriver: Deriver,
        *,
        anchor: str | None = None,
        limit: int | None = None,
        namespace: str = DEFAULT_NAMESPACE,
    ) -> RepairResult:
        """Rebuild stale records with ``deriver(stale_record, view) -> (content, sources)``.

        Works through the repair queue; with ``anchor``, through every record stale in that
        view instead, queued or not (a newer keyed record outcompeting an older one is not
        queued). Each result becomes a new revision of the stale record, gated like any other.
        The deriver runs outside any transaction (it may call a model); a record that changed
        meanwhile is left for the next pass. ``None`` leaves the record hidden and drops its
        entry; an exception leaves everything as it was but the entry's attempt count.
        """
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)):
            raise InvalidInput(f"limit must be an int or None, got {limit!r}")
        result = RepairResult()
        with self._write(namespace):
            stored = self._store.repairs(namespace)
            queued = self._pending_repairs(namespace)
            settled = {(i.record_id, i.cause) for i in stored} - {
                (i.record_id, i.cause) for i, _ in queued
            }
            pending = queued if anchor is None else self._stale_at(namespace, anchor, queued)
            for record_id, cause in sorted(settled):
                self._store.remove_repairs(namespace, record_id=record_id, cause=cause)
                result.cleared.append(record_id)
            work: dict[str, tuple[RepairItem, Record, RepairView]] = {}
            for item, view in pending:
                if item.record_id in work or (limit is not None and len(work) >= limit):
                    continue
                latest = self._store.get_revisions(namespace, item.record_id)[-1]
                chosen = self._chosen(view, None, None, None, False, False)
                records = [self._to_record(namespace, d.revision) for d in chosen if d.revision]
                shown = RepairView(item.anchor, item.reason, item.cause, records)
                work[item.record_id] = (item, self._to_record(namespace, latest), shown)
        for record_id, (item, stale_record, shown) in work.items():
            try:
                derived = deriver(stale_record, shown)
            except Exception as error:
                self._repair_failed(namespace, item, f"{type(error).__name__}: {error}")
                result.failed[record_id] = f"{type(error).__name__}: {error}"
                continue
            try:
                self._repair_done(namespace, item, stale_record, derived, result)
            except BranchmemError as error:  # an unusable result: counted like a failure
                self._repair_failed(namespace, item, f"{type(error).__name__}: {error}")
                result.failed[record_id] = f"{type(error).__name__}: {error}"
        with self._read(namespace):
            pending_after = self._pending_repairs(namespace)
        return replace(result, pending=len({item.record_id for item, _ in pending_after}))

    def _stale_at(
        self, namespace: str, anchor: str, queued: list[tuple[RepairItem, View]]
    ) -> list[tuple[RepairItem, View]]:
        """Every record stale at ``anchor``, with its queue entry when it has one."""
        view = self._view(namespace, anchor, False, None)
        entries = {item.record_id: item for item, _ in reversed(queued)}
        found = []
        for decision in self._chosen(view, None, None, None, False, True):
            if not decision.stale or decision.revision is None:
                continue
            node = decision.revision
            item = entries.get(node.record_id) or RepairItem(
                node.record_id, node.revision, STALE, "", anchor, 0
            )
            found.append((replace(item, anchor=anchor), view))
        return found

    def _repair_failed(self, namespace: str, item: RepairItem, error: str) -> None:
        with self._write(namespace):
            entries = [e for e in self._store.repairs(namespace) if e.record_id == item.record_id]
            if not entries:  # found by anchor, not queued: queue it with the failure
                entries = [replace(item, cause=item.cause, seq=self._store.next_seq(namespace))]
            for entry in entries:
                self._store.put_repair(
                    namespace, replace(entry, attempts=entry.attempts + 1, last_error=error)
                )
            self._store.bump_counter(namespace, "failed")
            self._audit(namespace, "repair_failed", (item.record_id,), reason=item.reason)

    def _repair_done(
        self,
        namespace: str,
        item: RepairItem,
        stale_record: Record,
        derived: tuple[str, Iterable[str]] | None,
        result: RepairResult,
    ) -> None:
        with self._write(namespace):
            revisions = self._store.get_revisions(namespace, item.record_id)
            status = self._store.statuses(namespace, [item.record_id]).get(item.record_id)
            if status is not None or revisions[-1].revision != stale_record.revision:
                return  # changed while the deriver ran: the next pass sees the new state
            if derived is None:
                self._store.remove_repairs(namespace, record_id=item.record_id)
                self._store.bump_counter(namespace, "dropped")
                self._audit(namespace, "repair_dropped", (item.record_id,), reason=item.reason)
                result.dropped.append(item.record_id)
                return
            if not isinstance(derived, tuple) or len(derived) != 2:
                raise InvalidInput(
                    f"deriver for {item.record_id!r} must return (content, sources) or None"
                )
            content, sources = derived
            what = f"repair of record {item.record_id!r}"
            if not isinstance(content, str):
                raise InvalidInput(f"{what}: content must be a string")
            checked_sources = check_sources(sources, what)
            resolution = self._resolution(namespace)
            refs = resolution.refs(checked_sources)
            resolution.check_cycle(item.record_id, refs)
            self._check_not_built_on_erased(namespace, what, refs)
            latest = revisions[-1]
            node = replace(
                latest,
                revision=latest.revision + 1,
                content=content,
                sources=checked_sources,
                refs=refs,
                seq=self._store.next_seq(namespace),
                gate=resolution.gate(refs),
            )
            self._store.remove_repairs(namespace, record_id=item.record_id)
            self._put_new_revision(namespace, node, "repair")
            self._store.bump_counter(namespace, "repaired")
            result.repaired.append(item.record_id)

    # -- retrieval ---------------------------------------------------------------------
    def search(
        self,
        query: str,
        anchor: str | None,
        *,
        k: int = 10,
        kind: str | None = None,
        key: str | None = None,
        scope: str | None = None,
        cross_tree: bool = False,
        mode: str | None = None,
        namespace: str = DEFAULT_NAMESPACE,
    ) -> list[Hit]:
        """The ``k`` records visible at ``anchor`` that best match ``query``.

        Only visible records are candidates, so ``k`` hits come back whenever ``k`` visible
        records match, and nothing on another branch moves a score. Lexical BM25 over the
        candidates (docs/retrieval.md); with an embedder, fused with cosine ranking by RRF.
        """
        if not isinstance(query, str):
            raise InvalidInput(f"query must be a string, got {type(query).__name__}")
        k = check_k(k)
        query_vector = self.embedder.embed([query])[0] if self.embedder is not None else None
        with self._read(namespace):
            nodes = self._visible_nodes(namespace, anchor, cross_tree, mode, kind, key, scope)
            by_id = {node.record_id: node for node in nodes}
            return self._rank(namespace, query, query_vector, by_id, k)

    def _rank(
        self,
        namespace: str,
        query: str,
        query_vector: list[float] | None,
        nodes: Mapping[str, RevisionNode],
        k: int,
    ) -> list[Hit]:
        documents = {record_id: node.content for record_id, node in nodes.items()}
        if query_vector is None:
            ranked = [(h.doc_id, h.score, h.why) for h in rank(query, documents, k)]
        else:
            keys = [(record_id, node.revision) for record_id, node in nodes.items()]
            stored = self._store.vectors(namespace, keys)
            vectors = {record_id: vector for (record_id, _), vector in stored.items()}
            fused = hybrid_rank(query, documents, query_vector, vectors, k)
            ranked = [(h.doc_id, h.score, h.why) for h in fused]
        return [
            Hit(self._to_record(namespace, nodes[doc_id]), score, why)
            for doc_id, score, why in ranked
        ]

    def context(
        self,
        anchor: str | None,
        *,
        query: str | None = None,
        budget: int | None = None,
        session: str | None = None,
        cross_tree: bool = False,
        mode: str | None = None,
        namespace: str = DEFAULT_NAMESPACE,
    ) -> Context:
        """What a prompt at ``anchor`` gets within ``budget`` tokens: the branch's recent
        messages and the visible records (see docs/retrieval.md). With ``session`` the
        delivered (record id, revision) pairs are remembered for ``stale_deliveries``."""
        budget = check_budget(DEFAULT_BUDGET if budget is None else budget)
        if query is not None and not isinstance(query, str):
            raise InvalidInput(f"query must be a string or None, got {type(query).__name__}")
        if session is not None:
            check_id(session, "session")
        query_vector = None
        if query is not None and self.embedder is not None:
            query_vector = self.embedder.embed([query])[0]
        with self._write(namespace) if session is not None else self._read(namespace):
            nodes = self._visible_nodes(namespace, anchor, cross_tree, mode)
            records = [self._to_record(namespace, node) for node in nodes]
            ranking = None
            if query is not None:
                by_id = {node.record_id: node for node in nodes}
                hits = self._rank(namespace, query, query_vector, by_id, max(1, len(by_id)))
                ranking = [hit.record.id for hit in hits]
            events = [] if anchor is None else self._path_events(namespace, anchor)
            built = assemble_context(
                anchor=anchor,
                path_events=events,
                records=records,
                query=query,
                budget=budget,
                counter=self.counter,
                ranking=ranking,
            )
            if session is not None:
                delivery = Delivery(
                    session, self._store.next_seq(namespace), anchor, time.time(), built.items
                )
                self._store.add_delivery(namespace, delivery)
                self._audit(namespace, "deliver", [i for i, _ in built.items], reason=session)
            return built

    def _path_events(self, namespace: str, anchor: str) -> list[Event]:
        nodes = self._store.path_events(namespace, anchor)
        statuses = self._store.statuses(namespace, [node.id for node in nodes])
        return [node.to_event(namespace) for node in nodes if node.id not in statuses]

    # -- deliveries --------------------------------------------------------------------
    def deliveries(self, session: str, *, namespace: str = DEFAULT_NAMESPACE) -> list[Delivery]:
        """What ``context(..., session=session)`` handed out, oldest first (ids only)."""
        check_id(session, "session")
        with self._read(namespace):
            return self._store.deliveries(namespace, session)

    def stale_deliveries(
        self, session: str, anchor: str | None = None, *, namespace: str = DEFAULT_NAMESPACE
    ) -> list[StaleDelivery]:
        """Every delivered record the session would not be given now, and why (each record
        judged by the revision it was given last).

        Judged at ``anchor``; without one, at the head of the tree of the session's latest
        delivery (so a branch switch made with ``set_head`` shows as ``off_path``), else at
        that delivery's anchor.
        """
        check_id(session, "session")
        with self._read(namespace):
            delivered = self._store.deliveries(namespace, session)
            if not delivered:
                return []
            if anchor is None:
                anchor = self._judging_anchor(namespace, delivered[-1].anchor)
            view = self._view(namespace, anchor, False, None)
            found: list[StaleDelivery] = []
            seen: set[str] = set()
            for delivery in reversed(delivered):  # a record's newest delivery is what counts
                for record_id, revision in delivery.items:
                    if record_id in seen:
                        continue
                    seen.add(record_id)
                    decision = view.decide(record_id)
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

    def _judging_anchor(self, namespace: str, delivered_at: str | None) -> str | None:
        if delivered_at is None:
            return None
        node = self._store.get_event(namespace, delivered_at)
        if node is None or node.tree is None:
            return delivered_at
        return self._store.heads(namespace).get(node.tree, delivered_at)
