"""The one storage protocol every backend implements.

The engine (``branchmem.memory``) composes these primitives; a backend only stores and
indexes. Every capability is abstract: the writer surface, the per-item reads, and one bulk
reader, ``answer`` (``branchmem._core.questions``), which every backend answers completely, its own
way. The few methods with a body are wrappers that only compose abstract ones (like
LangGraph's ``BaseStore.get`` over ``batch``); a backend may override them to read faster,
never to answer differently. Every method is namespace-bound: no call can read or write
across namespaces, except ``namespaces()``, which lists their names and nothing in them.
The public ``Memory`` method owns the transaction; these primitives run inside it.
"""

from __future__ import annotations

import itertools
import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Hashable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from typing import Any, ClassVar, Final, NamedTuple, Protocol

from .._core.keyed import KeyedReader
from .._core.provenance import RevisionNode
from .._core.questions import Facts, IndexTooLarge, Questions, TreeIndex
from .._core.resolution import RevisionKey
from .._core.retraction import RetractionNode
from .._core.rules import RankKey, rank_key
from .._core.topology import EventNode
from ..audit import AuditEntry
from ..errors import CleanupPending, InvalidInput
from ..model import ERASED, Delivery, RepairItem
from ..receipt import ResidueScope, StoreScan
from .keys import KeyStore

__all__ = [
    "TOMBSTONE",
    "WRAPPED_READS",
    "CleanupPending",
    "ItemByItemAnswers",
    "MessageRow",
    "PathMessage",
    "RevisionKey",
    "Store",
    "answer_by_reads",
    "reads_not_overridden",
]

# What a forget cannot clean in a backend that names nothing of its own (``cannot_clean``).
ELSEWHERE: Final = (
    "this backend's own storage (files, logs, backups, replicas): the check reads what the "
    "backend's residue_values gives, not its storage",
    "copies the application made outside branchmem (logs, prompts sent to a model, "
    "caches, integrations' own stores)",
)

# The role of an erased event and the kind of an erased record: both were the caller's text
# (SPEC §6: a tombstone keeps ids only), so an erase overwrites them with this fixed value.
TOMBSTONE: Final = ERASED


class PathMessage(Protocol):
    """One event of a path as a prompt may show it (``EventNode`` is one when shown)."""

    @property
    def id(self) -> str: ...
    @property
    def parent(self) -> str | None: ...
    @property
    def role(self) -> str: ...
    @property
    def content(self) -> str: ...
    @property
    def tokens(self) -> int | None:
        """What the store kept of ``EventNode.tokens`` (None: count ``content`` again)."""


class MessageRow(NamedTuple):
    """A ``PathMessage`` read without its topology, or a withdrawn/erased one emptied."""

    id: str
    parent: str | None
    role: str
    content: str
    tokens: int | None = None


class Store(ABC):
    """Storage primitives for events, revisions, relations, statuses and the audit log."""

    # True when no other process can write this store (it lives in this process): a
    # reader may then cache what it read until its own Memory writes again.
    process_local: ClassVar[bool] = False

    # the name receipts give the backend, which says what a byte check reads there
    backend: ClassVar[str] = "unknown"

    # -- lifecycle ---------------------------------------------------------------------
    @abstractmethod
    def transaction(self, namespace: str | None = None) -> AbstractContextManager[None]:
        """All-or-nothing unit of work that writes ``namespace``; nested calls are savepoints.

        Backends shared by several processes serialise writers per namespace here, before the
        first read, so a call's checks and its writes see one state.
        """

    @abstractmethod
    def reading(self, namespace: str) -> AbstractContextManager[None]:
        """A consistent snapshot for the reads of one call (a no-op inside a transaction)."""

    @abstractmethod
    def close(self) -> None:
        """Release files and connections."""

    @abstractmethod
    def next_seq(self, namespace: str) -> int:
        """The next arrival number in the namespace (strictly increasing)."""

    def commit_stamp(self) -> Hashable | None:
        """Read inside a snapshot: a value that two reads give alike only when nothing was
        committed to the store between their snapshots, by this process or any other, so a
        reader may keep what it derived from one snapshot while the stamp holds (the search
        views of ``_engine.viewcache``). None: the backend cannot tell, keep nothing. Inside
        a write transaction the value says nothing of the writes not yet committed."""
        return None

    def write_stamps(self) -> tuple[Hashable, Hashable] | None:
        """The commit stamps just before and just after this store's last outermost write
        transaction, when it committed and nothing else can have committed between them
        (so a reader that kept something under the first knows that only that write moved
        the stamp to the second). None: no such write, or the backend cannot tell."""
        return None

    @abstractmethod
    def prefetch(
        self,
        namespace: str,
        ids: Collection[str],
        *,
        children: bool = True,
        ancestry: Collection[str] | None = None,
        citing: Collection[str] = (),
    ) -> None:
        """A hint that the current call will look these ids up (as events and records, and
        with ``children`` their children), start ancestor tests from the events among
        ``ancestry`` (None: among ``ids``) and ask ``citing_any`` of ``citing`` next; a
        backend without round trips does nothing. It changes no answer, only its cost."""

    def before_placing(self, namespace: str, event_id: str, parent: str | None) -> None:  # noqa: B027 - a hint
        """A hint: one event is about to be placed under ``parent``. A backend where each
        statement is a round trip reads in bulk what placing it asks (PostgreSQL:
        ``prefetch``); the others read it item by item, which costs them less."""

    # -- events ------------------------------------------------------------------------
    def get_event(self, namespace: str, event_id: str) -> EventNode | None:
        """The event, or None. A wrapper over ``answer`` (``events``)."""
        return self.answer(namespace, Questions(events=frozenset((event_id,)))).events.get(event_id)

    @abstractmethod
    def put_event(self, namespace: str, node: EventNode) -> None:
        """Insert an event or update its topology fields (tree, attached, depth, jump)."""

    def children(self, namespace: str, parent_id: str) -> list[str]:
        """Ids of the events that name ``parent_id`` as parent, in arrival order. A wrapper
        over ``answer`` (``children``)."""
        asked = Questions(children=frozenset((parent_id,)))
        return list(self.answer(namespace, asked).children.get(parent_id, ()))

    def path_ids(self, namespace: str, anchor: str) -> list[str]:
        """Known ancestors-or-self of ``anchor``, root (or gap) first (empty: no such
        event). A wrapper over ``answer`` (``paths``)."""
        return list(
            self.answer(namespace, Questions(paths=frozenset((anchor,)))).paths.get(anchor, ())
        )

    def path_events(self, namespace: str, anchor: str) -> list[EventNode]:
        """``path_ids`` with the events themselves. A wrapper over ``path_ids`` and
        ``get_event`` (backends with round trips: one query)."""
        found = (
            self.get_event(namespace, event_id) for event_id in self.path_ids(namespace, anchor)
        )
        return [node for node in found if node is not None]

    def transcript(self, namespace: str, event_id: str, limit: int) -> list[PathMessage]:
        """``event_id`` and up to ``limit - 1`` of its ancestors, deepest first, as a prompt
        may show them: a withdrawn or erased event with empty content. The start of a path
        read from the anchor back. A wrapper over ``get_event`` and ``statuses`` (backends
        with round trips: one query for a page)."""
        found: list[EventNode] = []
        node = self.get_event(namespace, event_id)
        while node is not None and len(found) < limit:
            found.append(node)
            node = None if node.parent is None else self.get_event(namespace, node.parent)
        hidden = self.statuses(namespace, [node.id for node in found])
        return [MessageRow(n.id, n.parent, n.role, "") if n.id in hidden else n for n in found]

    @abstractmethod
    def iter_events(self, namespace: str, tree: str | None = None) -> Iterator[EventNode]:
        """Every event (of one tree), in arrival order."""

    @abstractmethod
    def set_head(self, namespace: str, tree: str, event_id: str) -> None: ...

    def heads(self, namespace: str) -> dict[str, str]:
        """Tree id -> head event id. A wrapper over ``answer`` (``heads``)."""
        return dict(self.answer(namespace, Questions(heads=True)).heads)

    @abstractmethod
    def namespaces(self) -> list[str]:
        """The namespaces anything was written to (an arrival number drawn), by name."""

    # -- records -----------------------------------------------------------------------
    def get_revisions(self, namespace: str, record_id: str) -> list[RevisionNode]:
        """Every revision of a record, oldest first; empty if the record is unknown. A
        wrapper over ``answer`` (``histories``)."""
        asked = Questions(histories=frozenset((record_id,)))
        return list(self.answer(namespace, asked).histories.get(record_id, ()))

    @abstractmethod
    def put_revision(self, namespace: str, node: RevisionNode) -> None:
        """Insert a revision or replace it (same record id and revision) with a new gate."""

    def put_revisions(self, namespace: str, nodes: Sequence[RevisionNode]) -> None:
        """``put_revision`` for many (``add_records``): a wrapper; backends with round trips
        batch it."""
        for node in nodes:
            self.put_revision(namespace, node)

    def revisions_at(self, namespace: str, event_ids: Collection[str]) -> list[RevisionNode]:
        """Revisions with a frontier at one of ``event_ids``: the index visibility reads. A
        wrapper over ``answer`` (``sourced_at``)."""
        asked = Questions(sourced_at=frozenset(event_ids))
        return list(self.answer(namespace, asked).sourced_at) if asked.sourced_at else []

    def ungated_revisions(self, namespace: str) -> list[RevisionNode]:
        """Revisions with no frontier at all (legacy, no sources, only missing sources). A
        wrapper over ``answer`` (``ungated``)."""
        return list(self.answer(namespace, Questions(ungated=True)).ungated)

    def record_ids(self, namespace: str) -> list[str]:
        """Every record id, in arrival order. A wrapper over ``answer`` (``record_ids``)."""
        return list(self.answer(namespace, Questions(record_ids=True)).record_ids)

    def citing(self, namespace: str, target: str) -> list[RevisionKey]:
        """Revisions whose sources name ``target`` (resolved or not). A wrapper over
        ``answer`` (``citing``)."""
        return list(
            self.answer(namespace, Questions(citing=frozenset((target,)))).citing.get(target, ())
        )

    def pending_on(self, namespace: str, event_id: str) -> list[RevisionKey]:
        """Revisions whose gate waits for the detached event ``event_id``. A wrapper over
        ``answer`` (``pending``)."""
        asked = Questions(pending=frozenset((event_id,)))
        return list(self.answer(namespace, asked).pending.get(event_id, ()))

    def pending_on_any(self, namespace: str, event_ids: Collection[str]) -> list[RevisionKey]:
        """``pending_on`` for many events at once: a wrapper (backends with round trips
        batch it)."""
        return [key for event_id in event_ids for key in self.pending_on(namespace, event_id)]

    def citing_any(self, namespace: str, targets: Collection[str]) -> list[tuple[str, RevisionKey]]:
        """(target, revision) for every revision citing one of ``targets``: a wrapper over
        ``citing``."""
        return [(t, key) for t in dict.fromkeys(targets) for key in self.citing(namespace, t)]

    # -- keyed reads (SPEC §7): cost of what is returned, not of the key's history -----
    # Wrappers: exact over ``records_with_key``, ``get_revisions``, ``retractions`` and
    # ``record_ids``, but they read the whole history of a key; a backend overrides them
    # with an index (every backend shipped here does).
    def key_candidates(
        self, namespace: str, key: str, tree: str, depth: int, cross_tree: bool = False
    ) -> Iterator[RevisionNode]:
        """Revisions with ``key`` a view anchored in ``tree`` at ``depth`` could show, in the
        order the view ranks them, best first: those with a frontier in ``tree`` at depth <=
        ``depth`` (deepest first, then latest seq), then those with no frontier in ``tree``
        (latest seq first) — for a one-tree view only those with no frontier at all, since it
        never shows one with a frontier in another tree. Backends page their index, so a
        reader that stops early pays only for what it read. A wrapper over
        ``records_with_key`` and ``get_revisions``."""
        ranked: list[tuple[RankKey, RevisionNode]] = []
        for record_id in self.records_with_key(namespace, key):
            for node in self.get_revisions(namespace, record_id):
                here = node.gate.frontier_in(tree)
                if node.key != key:
                    continue
                if here is not None:
                    if here.depth <= depth:
                        ranked.append((rank_key(here.depth, node.seq), node))
                elif cross_tree or not node.gate.frontiers:
                    ranked.append((rank_key(None, node.seq), node))
        ranked.sort(key=lambda item: item[0])  # the rule's ranking (``rules.rank_key``)
        yield from (node for _, node in ranked)

    def revisions_newest_first(self, namespace: str, record_id: str) -> Iterator[RevisionNode]:
        """A record's revisions, latest first, read lazily (the latest usually answers): a
        wrapper over ``get_revisions``."""
        yield from reversed(self.get_revisions(namespace, record_id))

    def retractions_naming(
        self, namespace: str, record_id: str, key: str | None
    ) -> list[RetractionNode]:
        """Retractions of both scopes that name ``record_id`` as a target or retract ``key``
        (any key scope); the caller applies ``RetractionNode.covers``. A wrapper over
        ``retractions`` and ``record_ids``."""
        every = self.retractions(namespace, self.record_ids(namespace))
        return sorted(
            (
                node
                for node in every.values()
                if record_id in node.targets or (key is not None and node.key == key)
            ),
            key=lambda node: node.seq,
        )

    def keyed_reads(self, namespace: str) -> KeyedReader:
        """The reader one keyed view (``keyed.KeyedView``) asks: the store itself, read item
        by item. A backend where every statement is a round trip overrides it with a
        ``store.readahead.ReadAhead``, which serves those reads from a few bulk answers
        (PostgreSQL does); every backend answers every question completely
        (``StoreConformance``), so the answers a read decides from are the same either way.
        In-process stores keep this: asking ahead there costs more Python than the reads it
        replaces."""
        return self

    def read_ahead(  # noqa: B027 - a hint: the store as its own reader has nothing to do
        self,
        namespace: str,
        anchor: EventNode,
        keys: Collection[str],
        revisions: Collection[RevisionNode] = (),
    ) -> None:
        """A hint from a keyed view at ``anchor``: it will rank ``keys``' candidates and
        decide the records of ``revisions``. The store itself as a reader reads per item and
        does nothing here (``ReadAhead`` asks ahead)."""

    # -- the bulk reader ---------------------------------------------------------------
    @abstractmethod
    def answer(self, namespace: str, questions: Questions) -> Facts:
        """Everything ``questions`` asks, complete for every id and key asked (see
        ``branchmem._core.questions``): a keyed read asks once per wave of ids it discovers, so a
        backend with round trips answers in one, and one without answers from its indexes
        (``answer_item_by_item`` composes the per-item reads)."""

    # -- relations ---------------------------------------------------------------------
    @abstractmethod
    def add_supersede(self, namespace: str, new_id: str, old_id: str) -> None: ...

    def superseders(self, namespace: str, old_ids: Collection[str]) -> dict[str, list[str]]:
        """old id -> ids of the records declared to supersede it. A wrapper over ``answer``
        (``superseders``)."""
        asked = Questions(superseders=frozenset(old_ids))
        if not asked.superseders:
            return {}
        found = self.answer(namespace, asked).superseders
        return {old: list(found[old]) for old in asked.superseders if found.get(old)}

    def superseded_by(self, namespace: str, new_id: str) -> list[str]:
        """Ids of the records ``new_id`` was declared to supersede. A wrapper over ``answer``
        (``superseded_by``)."""
        asked = Questions(superseded_by=frozenset((new_id,)))
        return list(self.answer(namespace, asked).superseded_by.get(new_id, ()))

    @abstractmethod
    def put_retraction(self, namespace: str, node: RetractionNode) -> None: ...

    def retractions(self, namespace: str, ids: Collection[str]) -> dict[str, RetractionNode]:
        """The retractions among ``ids``, by id. A wrapper over ``answer``
        (``retractions``)."""
        asked = Questions(retractions=frozenset(ids))
        return dict(self.answer(namespace, asked).retractions) if asked.retractions else {}

    def tree_retractions(self, namespace: str) -> list[RetractionNode]:
        """The tree-scope retractions, by ``seq``. A wrapper over ``answer``
        (``tree_retractions``)."""
        return list(self.answer(namespace, Questions(tree_retractions=True)).tree_retractions)

    # -- corrections -------------------------------------------------------------------
    @abstractmethod
    def set_status(self, namespace: str, item_id: str, status: str | None) -> None:
        """Mark an event or record ``withdrawn`` or ``erased`` (None clears)."""

    def statuses(self, namespace: str, ids: Collection[str]) -> dict[str, str]:
        """id -> status for the ids that have one. A wrapper over ``answer``
        (``statuses``)."""
        asked = Questions(statuses=frozenset(ids))
        if not asked.statuses:
            return {}
        found = self.answer(namespace, asked).statuses
        return {item: found[item] for item in asked.statuses if item in found}

    def event_roles(self, namespace: str, ids: Collection[str]) -> dict[str, str]:
        """event id -> its role, for the ids that are events: who said each, without its
        text (search weighs a record by it, ``search.voice``). A wrapper over ``answer``
        (``roles``)."""
        asked = Questions(roles=frozenset(ids))
        if not asked.roles:
            return {}
        found = self.answer(namespace, asked).roles
        return {item: found[item] for item in asked.roles if item in found}

    @abstractmethod
    def erase_content(
        self, namespace: str, event_ids: Collection[str], record_ids: Collection[str]
    ) -> None:
        """Blank the text of these events and of every revision of these records: content,
        meta, key and scope, and an event's role and a record's kind (both become
        ``TOMBSTONE``); delete their vectors and repair entries. Ids, parents and sources
        (ids too) stay as the tombstone.

        Text elsewhere that is about them goes too: the reason and detail of a retraction
        that targets them or retracts one of their keys, such a retraction's key when no
        other record holds it any more, and the reasons of audit entries that name them or
        those retractions. Records that the cleanup of the files is due (``finish_cleanup``).
        """

    def records_with_key(self, namespace: str, key: str) -> list[str]:
        """Ids of the records one of whose revisions has ``key`` (any scope), sorted. A
        wrapper over ``answer`` (``keyed_records``)."""
        asked = Questions(keyed_records=frozenset((key,)))
        return list(self.answer(namespace, asked).keyed_records.get(key, ()))

    # -- repair queue ------------------------------------------------------------------
    @abstractmethod
    def put_repair(self, namespace: str, item: RepairItem) -> None:
        """Insert or replace the entry of ``(item.record_id, item.cause)``."""

    @abstractmethod
    def repairs(self, namespace: str) -> list[RepairItem]:
        """The queue, oldest entry first."""

    @abstractmethod
    def remove_repairs(
        self, namespace: str, *, record_id: str | None = None, cause: str | None = None
    ) -> None:
        """Drop the entries of a record, or those a cause put there (both: that one entry)."""

    @abstractmethod
    def bump_counter(self, namespace: str, name: str) -> None: ...

    @abstractmethod
    def counters(self, namespace: str) -> dict[str, int]: ...

    # -- vectors ---------------------------------------------------------------------
    @abstractmethod
    def put_vector(self, namespace: str, key: RevisionKey, vector: Sequence[float]) -> None:
        """Store a new revision's embedding (once)."""

    @abstractmethod
    def vectors(
        self, namespace: str, keys: Collection[RevisionKey]
    ) -> dict[RevisionKey, list[float]]:
        """The stored vectors of these revisions (those that have one)."""

    # -- deliveries --------------------------------------------------------------------
    @abstractmethod
    def add_delivery(self, namespace: str, delivery: Delivery) -> None: ...

    @abstractmethod
    def deliveries(self, namespace: str, session: str) -> list[Delivery]:
        """A session's deliveries, oldest first."""

    # -- erase cleanup ---------------------------------------------------------------
    @abstractmethod
    def finish_cleanup(self) -> str | None:
        """Leave no copy of erased bytes in the store's files (write-ahead log, dead rows),
        for every erase whose cleanup is still due. Runs outside any transaction.

        None when nothing is left to clean; otherwise why the cleanup is still pending (it
        stays recorded in the store, so a later call or the next open resumes it).
        """

    @abstractmethod
    def residue_values(self, namespace: str, scope: ResidueScope) -> Iterator[tuple[str, object]]:
        """Every value stored in the rows ``scope`` names, as ``(location, value)``, read the
        way the store keeps them (a SQL backend's rows table by table, the index rows
        included): what a forget receipt's check looks in. Only ``namespace``'s rows, and
        none outside the scope, so the answer never depends on another tenant's data."""

    # -- optional ports: a default a backend overrides; the core calls them unconditionally
    def schema_version(self) -> int | None:
        """The version the store's schema is at (0: empty); None for a store without a
        schema (in memory). What ``branchmem migrate`` prints."""
        return None

    def api_keys(self) -> KeyStore:
        """Where this store keeps the service's API keys (``Memory.api_keys``). By default
        none: ``InvalidInput`` naming the backend."""
        raise InvalidInput(f"this store ({self.backend}) does not keep API keys")

    def cannot_clean(self) -> tuple[str, ...]:
        """What stays whatever a forget does, in this backend's storage (said in every
        receipt's ``cannot_clean``). By default: the backend's own storage, unnamed."""
        return ELSEWHERE

    def arrival_seq(self, namespace: str) -> int | None:
        """The last arrival number drawn in ``namespace``, read in the caller's snapshot:
        every write of any process moves it, so a cache over a shared store compares it
        (``Memory.change_stamp``). None: the backend keeps none (a process-local store)."""
        return None

    def scan_bytes(
        self, key: str, fingerprints: frozenset[str], lock: AbstractContextManager[Any]
    ) -> StoreScan:
        """The operator's whole-store scan (``Memory.scan_store``): fingerprint hits in every
        place the store keeps data, every namespace's included, read the way the backend
        can read them without disturbing itself (a SQLite store's files by a child process).
        Runs outside any transaction, one scan at a time per store; ``lock`` (the Memory's)
        is for a backend whose objects writers change in place. The default reads nothing
        and says so: a backend without one is never reported clean."""
        return StoreScan({}, (f"a {self.backend} store: no byte scan is known for this backend",))

    def cleanup_due(self, namespace: str) -> bool:
        """True while an erase of ``namespace`` waits for its cleanup of the files."""
        return False

    def scrub(self) -> None:
        """After an erasure has committed: clean up now, and say plainly if that could not
        complete (a ``CleanupPending`` warning; ``Memory.finish_cleanup()`` retries)."""
        reason = self.finish_cleanup()
        if reason is not None:
            warnings.warn(CleanupPending(reason), stacklevel=3)

    # -- audit and gauges --------------------------------------------------------------
    @abstractmethod
    def append_audit(self, entry: AuditEntry) -> None: ...

    @abstractmethod
    def audit(
        self,
        namespace: str,
        *,
        id: str | None = None,
        op: str | None = None,
        since: float | None = None,
        until: float | None = None,
    ) -> list[AuditEntry]: ...

    @abstractmethod
    def gauges(self, namespace: str) -> dict[str, int]:
        """Counts of what the namespace holds, for ``report()``."""


# The per-item reads ``Store`` defines as wrappers over ``answer``: a backend that answers
# with ``answer_by_reads`` (or ``ItemByItemAnswers``) reads with its own, so it overrides each.
WRAPPED_READS: Final = (
    "get_event", "children", "path_ids", "heads", "get_revisions", "revisions_at",
    "ungated_revisions", "record_ids", "citing", "pending_on", "records_with_key",
    "superseders", "superseded_by", "retractions", "tree_retractions", "statuses",
    "event_roles",
)  # fmt: skip


def reads_not_overridden(cls: type[Store]) -> list[str]:
    """The wrapped reads ``cls`` takes from ``Store`` itself (each would ask ``answer``)."""
    return [name for name in WRAPPED_READS if getattr(cls, name) is getattr(Store, name)]


# (question and fact, per-item read) for the questions asked one id at a time; not
# ``superseded_by``, which a search asks of a whole view's records at once: each ``answer``
# reads it in bulk (``ItemByItemAnswers._superseded_by_all``, a SQL statement per chunk)
PER_ID_READS: Final = (
    ("children", "children"), ("paths", "path_ids"), ("histories", "get_revisions"),
    ("citing", "citing"), ("pending", "pending_on"), ("keyed_records", "records_with_key"),
)  # fmt: skip


def answer_by_reads(store: Store, namespace: str, questions: Questions, facts: Facts) -> None:
    """Fill ``facts`` with what ``questions`` asks beyond a view's questions (``children`` to
    ``statuses``), each from the store's own per-item read of the same name."""
    for field_name, read_name in PER_ID_READS:
        read, answers = getattr(store, read_name), getattr(facts, field_name)
        for item in getattr(questions, field_name):
            if found := read(namespace, item):
                answers[item] = found
    if questions.heads:
        facts.heads.update(store.heads(namespace))
    if questions.sourced_at:
        facts.sourced_at.extend(store.revisions_at(namespace, questions.sourced_at))
    if questions.ungated:
        facts.ungated.extend(store.ungated_revisions(namespace))
    if questions.record_ids:
        facts.record_ids.extend(store.record_ids(namespace))
    if questions.superseders:
        facts.superseders.update(store.superseders(namespace, questions.superseders))
    if questions.retractions:
        facts.retractions.update(store.retractions(namespace, questions.retractions))
    if questions.tree_retractions:
        facts.tree_retractions.extend(store.tree_retractions(namespace))
    if questions.statuses:
        facts.statuses.update(store.statuses(namespace, questions.statuses))
    if questions.roles:
        facts.roles.update(store.event_roles(namespace, questions.roles))


class ItemByItemAnswers(Store):
    """``Store.answer`` composed from the store's per-item reads, for a backend without round
    trips (each read costs a look-up, so asking one at a time costs what asking in bulk
    would); ``_key_retractions``, ``_tree_index`` and ``_superseded_by_all`` are the
    backend's own reads of those.
    Pages of one candidate (the usual winner), the newest revision only, and no events
    beyond those asked: with no round trip to save, the rest is cheaper read lazily, only if
    the rule gets that far. Put it first among a store's bases: its ``answer`` wins."""

    # the backend's own reads (declared, not defined: the store's methods are found by MRO)
    _key_retractions: Callable[[str, str], list[RetractionNode]]
    _superseded_by_all: Callable[[str, Collection[str]], dict[str, list[str]]]
    _tree_index: Callable[[str, str, int], TreeIndex | IndexTooLarge]

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if missing := reads_not_overridden(cls):  # each would ask answer, which asks it
            raise TypeError(f"{cls.__name__} answers item by item but does not read {missing}")

    def answer(self, namespace: str, questions: Questions) -> Facts:
        facts = Facts()
        answer_by_reads(self, namespace, questions, facts)
        if questions.superseded_by:
            facts.superseded_by.update(self._superseded_by_all(namespace, questions.superseded_by))
        for event_id in questions.events:
            node = self.get_event(namespace, event_id)
            if node is not None:
                facts.events[event_id] = node
        if questions.records or questions.events:
            facts.statuses.update(self.statuses(namespace, [*questions.records, *questions.events]))
        if questions.records:
            facts.superseders.update(self.superseders(namespace, questions.records))
        for record_id in questions.records:
            found = list(itertools.islice(self.revisions_newest_first(namespace, record_id), 1))
            if found:
                facts.revisions[record_id] = tuple(reversed(found))
            naming = [
                node
                for node in self.retractions_naming(namespace, record_id, None)
                if record_id in node.targets
            ]
            if naming:
                facts.retracting[record_id] = naming
        for key in questions.keys:
            of_key = self._key_retractions(namespace, key)
            if of_key:
                facts.retracting_key[key] = of_key
        for key in questions.pages:
            page: list[RevisionNode] = []
            ranked = self.key_candidates(namespace, key, questions.page_tree, questions.page_depth)
            for candidate in itertools.islice(ranked, 1):  # read no further than asked
                if candidate.gate.frontier_in(questions.page_tree) is None:
                    break
                page.append(candidate)
            if page:
                facts.pages[key] = tuple(page)
        if questions.index_tree is None:
            return facts
        return replace(
            facts,
            tree_index=self._tree_index(namespace, questions.index_tree, questions.index_limit),
        )
