"""``Memory``: the public API, a facade over ``branchmem._engine``.

Each method checks its arguments, opens one transaction (the namespace name is checked once,
there), delegates the work to the engine module named for it and returns public values.
Audit attribution (``acting_as``) and the report's decision counts live here, per process.
The calls of several steps around their transactions keep their signatures here and run
in a module each: ``forget_calls.py`` (forget, the receipts' checks), ``repair_calls.py``,
``retrieval_calls.py`` (search, context: the query embedded before the transaction); what the
transactions are made of is in ``transactions.py``.
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any

from .._core.retraction import BRANCH, RETRACTION_SCOPES
from .._core.topology import SettledPlaces
from .._core.validation import (
    KEEP,
    Keep,
    check_id,
    check_mode,
    check_optional_str,
    check_placement,
    check_sources,
)
from .._engine import (
    asof,
    blame,
    conversations,
    corrections,
    deliveries,
    diff,
    history,
    records,
    repair,
    supersede,
    trees,
    views,
)
from .._engine import events as placement
from .._engine.namespace import Namespace
from .._engine.records import add_records as write_records
from .._engine.records import record_spec
from .._engine.telemetry import traced
from .._engine.viewcache import SearchViews
from ..api.protocol import takes_declared_docs
from ..audit import AuditEntry
from ..errors import InvalidInput
from ..model import (
    RETRACTION_KIND,
    Blame,
    Conversation,
    Delivery,
    Deriver,
    Diff,
    Event,
    Explanation,
    Hit,
    Record,
    RecordView,
    RepairItem,
    RepairResult,
    StaleDelivery,
    TreeEvents,
    TreeSummary,
)
from ..receipt import (
    ByteCheck,
    OutsideStore,
    Receipt,
    ReceiptCheck,
)
from ..search.context import Context
from ..search.embedding import Embedder
from ..search.tokens import DEFAULT_COUNTER, TokenCounter
from ..store import refuse_missing
from ..store.base import Store
from ..store.inmemory import InMemoryStore
from ..store.keys import ApiKeyRow, ApiKeys
from . import forget_calls, repair_calls, retrieval_calls
from .transactions import Acting, Reading, Writing, writing

if TYPE_CHECKING:
    from ..importers import ImportPlan, ImportSummary, ProgressCallback

DEFAULT_NAMESPACE = "default"
NAMESPACES_KEPT = 1024  # (namespace, actor) settings a Memory keeps between calls

__all__ = ["ApiKeyRow", "ApiKeys", "Memory", "refuse_missing"]


@takes_declared_docs
class Memory:
    """Branch-aware memory over one store. Thread-safe; every public call is atomic."""

    def __init__(
        self,
        mode: str = "strict",
        *,
        store: Store | None = None,
        embedder: Embedder | None = None,
        counter: TokenCounter | None = None,
        path_events_per_entry: int | None = views.PATH_EVENTS_PER_ENTRY,
    ) -> None:
        """``embedder`` turns on vector search (every record written is embedded once);
        ``counter`` measures context budgets (default: ``tokens.count_tokens``);
        ``path_events_per_entry`` is when ``visible()`` reads a tree's key index instead of
        the anchor's path: when the index has at most depth / this many entries (0: whenever
        the anchor allows, None: never; the answer is the same, only the cost differs)."""
        self.mode = check_mode(mode)
        self.path_events_per_entry = path_events_per_entry
        self._store: Store = store if store is not None else InMemoryStore()
        self.embedder = embedder
        self.counter: TokenCounter = counter if counter is not None else DEFAULT_COUNTER
        self._lock = threading.RLock()
        self._counts: dict[str, Counter[str]] = {}
        self._actor = Acting()
        self._generation = 0
        self._writes = 0  # open write transactions (nested ones counted), under the lock
        self._snapshots = 0  # open read snapshots, under the lock
        # places of attached events, kept across calls where each lookup is a statement
        self._places = (
            None if self._store.process_local else SettledPlaces(lambda: self._writes > 0)
        )
        self._namespaces: dict[tuple[str, str | None], Namespace] = {}
        # what searches decided, kept while nothing is committed (_engine/viewcache.py)
        self._views = SearchViews(Writing(self))

    @classmethod
    def open(
        cls,
        url: str | os.PathLike[str],
        mode: str = "strict",
        *,
        migrate: bool = False,
        create: bool = True,
        embedder: Embedder | None = None,
        counter: TokenCounter | None = None,
    ) -> Memory:
        """Open a durable store: a path or ``sqlite:///...`` (SQLite), ``postgresql://...``.

        A new database is created, unless ``create=False``: then a SQLite file that does not
        exist is refused (a typo in a path would otherwise open a new, empty store; whether a
        PostgreSQL database exists is its server's answer). One at an older schema version
        needs ``migrate=True`` (or ``branchmem migrate URL``); one written by a newer
        branchmem is refused.
        """
        from ..store import open_store

        where = os.fspath(url)
        if not create:
            refuse_missing(where)
        store = open_store(where, migrate=migrate)
        return cls(mode, store=store, embedder=embedder, counter=counter)

    @property
    def write_generation(self) -> int:
        """How many write calls this Memory has made: reads cached through it stay right
        while this is unchanged and nothing else writes its store (another process). For
        integrations that cache (LangGraph's store); not part of ``MemoryAPI``."""
        return self._generation

    @contextmanager
    def acting_as(self, actor: str) -> Iterator[None]:
        """Attribute the mutations of this thread to ``actor`` in the audit log."""
        check_id(actor, "actor")
        previous = self._actor.name
        self._actor.name = actor
        try:
            yield
        finally:
            self._actor.name = previous

    @property
    def store(self) -> Store:
        """The backend, for tests and benchmarks that look underneath; the library itself
        reaches it only from here and ``_engine/`` (docs/architecture.md, the door)."""
        return self._store

    # -- lifecycle ---------------------------------------------------------------------
    def close(self) -> None:
        with self._lock:
            self._store.close()

    def finish_cleanup(self) -> str | None:
        """Finish what an erase could not: remove erased bytes still held in the store's
        files (e.g. a write-ahead log another process was reading). None when nothing is
        left; otherwise why the cleanup is still pending (it survives a restart)."""
        with self._lock:
            return self._store.finish_cleanup()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the service's door (not MemoryAPI): what the server and the CLI need of a store --
    def schema_version(self) -> int | None:
        """The store's schema version (None for a store that has no schema: in memory)."""
        with self._lock:
            return self._store.schema_version()

    @property
    def process_local(self) -> bool:
        """True when nothing outside this process can write the store: a cache over this
        Memory may then trust ``write_generation`` alone (the LangGraph store does)."""
        return self._store.process_local

    def change_stamp(self, namespace: str = DEFAULT_NAMESPACE) -> int | None:
        """A number every write to the namespace moves, from any process (the store's arrival
        counter), read in the caller's snapshot; None when the backend keeps none (a
        process-local store, where ``write_generation`` is the stamp). For caching
        integrations (the LangGraph store); not part of ``MemoryAPI``."""
        if self._store.process_local:
            return None
        with self._read(namespace) as ns:
            return self._store.arrival_seq(ns.name)

    @contextmanager
    def when_free(self) -> Iterator[bool]:
        """Hold this Memory for the block if no other call holds it now (True), without
        waiting (False: nothing held): the service answers a short read on its event loop
        only when that cannot make the loop wait for a call in a thread."""
        if not self._lock.acquire(blocking=False):
            yield False
            return
        try:
            yield True  # the lock is reentrant: a call inside the block takes it again
        finally:
            self._lock.release()

    @contextmanager
    def snapshot(self, namespace: str = DEFAULT_NAMESPACE) -> Iterator[None]:
        """Run several reads in one consistent snapshot (an integration that reads an item
        set and its change stamp together). A write inside it is refused (ConflictError):
        the snapshot ends by rolling back, so the write would be lost."""
        with self._read(namespace):
            self._snapshots += 1
            try:
                yield
            finally:
                self._snapshots -= 1

    @contextmanager
    def transaction(self, namespace: str = DEFAULT_NAMESPACE) -> Iterator[None]:
        """Run several writes as one: all or nothing (a savepoint when nested)."""
        with self._write(namespace, adds=True):  # its calls say what they write
            yield

    def api_keys(self) -> ApiKeys:
        """The service's API keys kept in this store (``branchmem.server.keys``)."""
        return ApiKeys(self._store.api_keys(), self._lock)

    # -- transactions ------------------------------------------------------------------
    def _namespace(self, namespace: str) -> Namespace:
        """The one check of a call's namespace name, and what the engine works with (kept
        while the Memory's settings and the thread's actor stay the same)."""
        actor = self._actor.name
        if type(namespace) is str:
            known = self._namespaces.get((namespace, actor))
            if (
                known is not None
                and known.mode == self.mode
                and known.embedder is self.embedder
                and known.path_events_per_entry == self.path_events_per_entry
            ):
                return known
        name = check_id(namespace, "namespace")
        with self._lock:
            counts = self._counts.setdefault(name, Counter())
            ns = Namespace(
                self._store,
                name,
                self.mode,
                counts,
                actor,
                self.embedder,
                path_events_per_entry=self.path_events_per_entry,
                places=self._places,
                views=self._views,
            )
            if len(self._namespaces) >= NAMESPACES_KEPT:
                self._namespaces.clear()
            self._namespaces[(name, actor)] = ns
        return ns

    def _write(
        self, namespace: str | Namespace, *, adds: bool = False
    ) -> AbstractContextManager[Namespace]:
        """One all-or-nothing write transaction (a savepoint when nested); ``adds``: the call
        may only add, and the engine notes what (``_engine.viewcache.Appended``)."""
        ns = namespace if isinstance(namespace, Namespace) else self._namespace(namespace)
        return writing(self, ns, adds=adds)

    def _read(self, namespace: str | Namespace) -> AbstractContextManager[Namespace]:
        """One consistent read snapshot."""
        ns = namespace if isinstance(namespace, Namespace) else self._namespace(namespace)
        return Reading(self._lock, self._store, ns)

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
        with self._write(namespace, adds=True) as ns:
            placement.add_event(ns, id, parent, tree, role, content, meta, ts)
            return ns.event_node(id).to_event(ns.name)

    def add_events(
        self, events: Iterable[Mapping[str, Any] | Event], *, namespace: str = DEFAULT_NAMESPACE
    ) -> list[Event]:
        ns = self._namespace(namespace)
        specs = [placement.event_spec(item, index) for index, item in enumerate(events)]
        with self._write(ns, adds=True):
            placement.add_events(ns, specs)
            nodes = [ns.event_node(spec["event_id"]) for spec in specs]
        return [node.to_event(ns.name) for node in nodes]

    def get_event(self, id: str, *, namespace: str = DEFAULT_NAMESPACE) -> Event:
        with self._read(namespace) as ns:
            return ns.event_node(id).to_event(ns.name)

    def path(self, anchor: str, *, namespace: str = DEFAULT_NAMESPACE) -> list[Event]:
        with self._read(namespace) as ns:
            return placement.path(ns, anchor)

    def set_head(self, event_id: str, *, namespace: str = DEFAULT_NAMESPACE) -> None:
        with self._write(namespace) as ns:
            placement.set_head(ns, event_id)

    def head(self, tree: str, *, namespace: str = DEFAULT_NAMESPACE) -> str | None:
        with self._read(namespace) as ns:
            return self._store.heads(ns.name).get(check_id(tree, "tree"))

    def heads(self, *, namespace: str = DEFAULT_NAMESPACE) -> dict[str, str]:
        with self._read(namespace) as ns:
            return self._store.heads(ns.name)

    def namespaces(self) -> list[str]:
        with self._lock, self._store.reading(DEFAULT_NAMESPACE):
            return self._store.namespaces()

    def conversations(self, *, namespace: str = DEFAULT_NAMESPACE) -> list[Conversation]:
        with self._read(namespace) as ns:
            return conversations.conversations(ns)

    # -- trees (explorer reads) --------------------------------------------------------
    def trees(self, *, namespace: str = DEFAULT_NAMESPACE) -> list[TreeSummary]:
        with self._read(namespace) as ns:
            return trees.trees(ns)

    def tree_events(self, tree: str, *, namespace: str = DEFAULT_NAMESPACE) -> TreeEvents:
        with self._read(namespace) as ns:
            return trees.tree_events(ns, tree)

    def record_views(
        self,
        anchor: str | None,
        *,
        cross_tree: bool = False,
        mode: str | None = None,
        include_superseded: bool = False,
        include_stale: bool = False,
        tree: str | None = None,
        as_of: int | str | None = None,
        namespace: str = DEFAULT_NAMESPACE,
    ) -> list[RecordView]:
        with self._read(namespace) as ns:
            return trees.record_views(
                ns, anchor, cross_tree, mode, include_superseded, include_stale, tree,
                asof.point(ns, as_of),
            )  # fmt: skip

    def import_(
        self,
        plan: ImportPlan,
        *,
        namespace: str = DEFAULT_NAMESPACE,
        progress: ProgressCallback | None = None,
    ) -> ImportSummary:
        return plan.apply(self, namespace=namespace, progress=progress)

    # -- records -----------------------------------------------------------------------
    @traced("create_memory")
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
        check_id(kind, "kind")
        if kind == RETRACTION_KIND:
            raise InvalidInput("kind 'retraction' is reserved: use retract()")
        if isinstance(supersedes, str):
            raise InvalidInput("supersedes must be a list of record ids")
        with self._write(namespace, adds=True) as ns:
            node = records.add_record(
                ns, id, sources, content, kind, key, scope, meta, tuple(supersedes)
            )
            return ns.to_record(node)

    @traced("create_memory")
    def add_records(
        self, records: Iterable[Mapping[str, Any] | Record], *, namespace: str = DEFAULT_NAMESPACE
    ) -> list[Record]:
        ns = self._namespace(namespace)
        specs = [record_spec(item, index) for index, item in enumerate(records)]
        with self._write(ns, adds=True):
            return [ns.to_record(node) for node in write_records(ns, specs)]

    @traced("update_memory")
    def revise(
        self,
        id: str,
        *,
        content: str,
        sources: Iterable[str] | Keep | None = KEEP,
        meta: Mapping[str, Any] | None = None,
        namespace: str = DEFAULT_NAMESPACE,
    ) -> Record:
        with self._write(namespace) as ns:
            return ns.to_record(records.revise(ns, id, content, sources, meta))

    def get_record(
        self, id: str, *, revision: int | None = None, namespace: str = DEFAULT_NAMESPACE
    ) -> Record:
        with self._read(namespace) as ns:
            return records.get_record(ns, id, revision)

    # -- invalidation ------------------------------------------------------------------
    def supersede(self, new_id: str, old_id: str, *, namespace: str = DEFAULT_NAMESPACE) -> None:
        with self._write(namespace) as ns:
            supersede.supersede(ns, new_id, old_id)

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
        placed = check_sources(sources, f"retraction {id!r}")
        check_placement(id, placed, scope)
        with self._write(namespace) as ns:
            node = corrections.retract(ns, id, placed, target_ids, key, key_scope, scope, reason)
            return ns.to_record(node)

    # -- corrections -------------------------------------------------------------------
    def withdraw(self, id: str, *, reason: str = "", namespace: str = DEFAULT_NAMESPACE) -> None:
        with self._write(namespace) as ns:
            corrections.withdraw(ns, id, reason)

    @traced("delete_memory")
    def erase(self, id: str, *, reason: str = "", namespace: str = DEFAULT_NAMESPACE) -> set[str]:
        with self._write(namespace) as ns:
            erased = corrections.erase(ns, id, reason)
        if not erased:
            return erased
        with self._lock:  # after the commit: the files must not keep the old pages
            self._store.scrub()
        corrections.forget_text()
        return erased

    # -- forget and receipts -----------------------------------------------------------
    def forget(
        self, kind: str, id: str, *, dry_run: bool = False, namespace: str = DEFAULT_NAMESPACE
    ) -> Receipt:
        return forget_calls.forget(self, kind, id, dry_run, namespace, None)

    def forget_with(
        self,
        kind: str,
        id: str,
        *,
        also: OutsideStore,
        dry_run: bool = False,
        namespace: str = DEFAULT_NAMESPACE,
    ) -> Receipt:
        """``forget``, carried into a store outside branchmem that the caller wraps (Mem0's,
        a LangGraph saver): after the erase commits, ``also`` gets the receipt and the
        erased text, cleans its store and returns its sections; the receipt's content hash
        and audit entry cover them. In-process only: ``also`` is a Python function."""
        return forget_calls.forget(self, kind, id, dry_run, namespace, also)

    def verify_receipt(
        self, receipt: Receipt | Mapping[str, Any], *, namespace: str = DEFAULT_NAMESPACE
    ) -> ReceiptCheck:
        return forget_calls.verify_receipt(self, receipt, namespace)

    def scan_store(self, receipt: Receipt | Mapping[str, Any]) -> ByteCheck:
        """The operator's whole-store scan for a receipt's fingerprints: every file, table
        and statistic of the store, every namespace's bytes included, so no service route
        offers it (``verify_receipt`` is the tenant's). One scan at a time per store, in
        bounded memory; a SQLite store's files are read by a child process."""
        return forget_calls.scan_store(self, receipt)

    def restore(self, id: str, *, namespace: str = DEFAULT_NAMESPACE) -> None:
        with self._write(namespace) as ns:
            corrections.restore(ns, id)

    def dependents(self, id: str, *, namespace: str = DEFAULT_NAMESPACE) -> set[str]:
        with self._read(namespace) as ns:
            return corrections.dependents_of(ns, id)

    # -- views -------------------------------------------------------------------------
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
        as_of: int | str | None = None,
        namespace: str = DEFAULT_NAMESPACE,
    ) -> list[Record]:
        with self._read(namespace) as ns:
            point = asof.point(ns, as_of)
            at = ns.anchor_node(anchor)  # the one look-up of the anchor; its node goes down
            return views.visible(
                ns, at, cross_tree, mode, kind, key, scope, include_superseded, include_stale,
                point,
            )  # fmt: skip

    def explain(
        self,
        record_id: str,
        anchor: str | None,
        *,
        cross_tree: bool = False,
        mode: str | None = None,
        include_superseded: bool = False,
        include_stale: bool = False,
        as_of: int | str | None = None,
        namespace: str = DEFAULT_NAMESPACE,
    ) -> Explanation:
        with self._read(namespace) as ns:
            return views.explain(
                ns, record_id, anchor, cross_tree, mode, include_superseded, include_stale,
                asof.point(ns, as_of),
            )  # fmt: skip

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
        as_of: int | str | None = None,
        namespace: str = DEFAULT_NAMESPACE,
    ) -> Record | None:
        with self._read(namespace) as ns:
            point = None if as_of is None else asof.point(ns, as_of)  # the present: the usual
            return views.current(ns, key, anchor, scope, cross_tree, mode, point)

    def currents(
        self,
        anchor: str,
        *,
        prefix: str = "",
        cross_tree: bool = False,
        mode: str | None = None,
        namespace: str = DEFAULT_NAMESPACE,
    ) -> list[Record] | None:
        """``current(key, anchor)`` of every key starting with ``prefix`` that has a value
        there, by key, at the cost of the keys rather than of the history; None when only
        the whole view can answer (a detached anchor or head, a backend without a key
        index): then use ``visible``. In-process only: the None is a cost hint for a cache
        over this Memory (the LangGraph store), which a client has no use for."""
        with self._read(namespace) as ns:
            check_id(anchor, "anchor")
            return views.currents(ns, anchor, cross_tree, mode, lambda key: key.startswith(prefix))

    def stale(
        self,
        anchor: str | None,
        *,
        cross_tree: bool = False,
        mode: str | None = None,
        include_superseded: bool = False,
        as_of: int | str | None = None,
        namespace: str = DEFAULT_NAMESPACE,
    ) -> list[Record]:
        with self._read(namespace) as ns:
            point = asof.point(ns, as_of)
            return views.stale(ns, anchor, cross_tree, mode, include_superseded, point)

    # -- diff and promote --------------------------------------------------------------
    def diff(
        self,
        anchor_a: str,
        anchor_b: str,
        *,
        cross_tree: bool = False,
        mode: str | None = None,
        include_superseded: bool = False,
        include_stale: bool = False,
        namespace: str = DEFAULT_NAMESPACE,
    ) -> Diff:
        with self._read(namespace) as ns:
            return diff.diff(
                ns, anchor_a, anchor_b, cross_tree, mode, include_superseded, include_stale
            )

    def promote(
        self,
        record_id: str,
        *,
        onto: str | None,
        id: str | None = None,
        revision: int | None = None,
        meta: Mapping[str, Any] | None = None,
        namespace: str = DEFAULT_NAMESPACE,
    ) -> Record:
        with self._write(namespace) as ns:
            return ns.to_record(diff.promote(ns, record_id, onto, id, revision, meta))

    # -- reporting ---------------------------------------------------------------------
    def report(self, *, namespace: str = DEFAULT_NAMESPACE) -> dict[str, Any]:
        with self._read(namespace) as ns:
            return history.report(ns)

    def audit(
        self,
        *,
        id: str | None = None,
        op: str | None = None,
        since: float | None = None,
        until: float | None = None,
        namespace: str = DEFAULT_NAMESPACE,
    ) -> list[AuditEntry]:
        with self._read(namespace) as ns:
            return self._store.audit(ns.name, id=id, op=op, since=since, until=until)

    def history(
        self, record_id: str, *, namespace: str = DEFAULT_NAMESPACE
    ) -> list[dict[str, Any]]:
        with self._read(namespace) as ns:
            return history.history(ns, record_id)

    # -- repair ------------------------------------------------------------------------
    def repair_queue(self, *, namespace: str = DEFAULT_NAMESPACE) -> list[RepairItem]:
        with self._read(namespace) as ns:
            return [item for item, _ in repair.pending(ns)]

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
        return repair_calls.repair(self, deriver, anchor, limit, namespace)

    # -- retrieval ---------------------------------------------------------------------
    @traced("search_memory")
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
        as_of: int | str | None = None,
        namespace: str = DEFAULT_NAMESPACE,
    ) -> list[Hit]:
        return retrieval_calls.search(
            self, query, anchor, k, kind, key, scope, cross_tree, mode, as_of, namespace
        )

    @traced("search_memory")
    def context(
        self,
        anchor: str | None,
        *,
        query: str | None = None,
        budget: int | None = None,
        cite: bool = False,
        session: str | None = None,
        cross_tree: bool = False,
        mode: str | None = None,
        as_of: int | str | None = None,
        namespace: str = DEFAULT_NAMESPACE,
    ) -> Context:
        return retrieval_calls.context(
            self, anchor, query, budget, cite, session, cross_tree, mode, as_of, namespace
        )

    # -- deliveries --------------------------------------------------------------------
    def deliveries(
        self,
        session: str,
        *,
        as_of: int | str | None = None,
        namespace: str = DEFAULT_NAMESPACE,
    ) -> list[Delivery]:
        check_id(session, "session")
        with self._read(namespace) as ns:
            return asof.deliveries(ns, session, asof.point(ns, as_of))

    def stale_deliveries(
        self,
        session: str,
        anchor: str | None = None,
        *,
        as_of: int | str | None = None,
        namespace: str = DEFAULT_NAMESPACE,
    ) -> list[StaleDelivery]:
        check_id(session, "session")
        with self._read(namespace) as ns:
            return deliveries.stale_deliveries(ns, session, anchor, asof.point(ns, as_of))

    # -- citations and blame -----------------------------------------------------------
    def blame(
        self,
        session: str,
        delivery: int,
        line: int | None = None,
        *,
        namespace: str = DEFAULT_NAMESPACE,
    ) -> Blame:
        check_id(session, "session")
        with self._read(namespace) as ns:
            return blame.blame(ns, session, delivery, line)
