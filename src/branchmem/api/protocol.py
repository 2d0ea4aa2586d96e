"""``MemoryAPI``: the public API that ``Memory`` (embedded) and ``Client`` (HTTP) both offer.

mypy checks that both classes satisfy it (the assignments at the end). Each routed method
carries its HTTP route (``@http``); ``operations.py`` turns these declarations into the table
that the server, the client and the CLI are built from. The docstrings here are the help
text of the HTTP operations and the CLI commands, and the only ones of the API methods: every
face (``Memory``, ``Client``, ``AsyncClient``, ``AsyncMemory``) takes them from here
(``takes_declared_docs``, or ``functools.wraps`` of the declaration).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from .._core.validation import KEEP, Keep
from ..audit import AuditEntry
from ..model import (
    Blame,
    Conversation,
    Delivery,
    Diff,
    DiffEntry,
    Event,
    Explanation,
    Hit,
    KeyChange,
    Record,
    RecordView,
    RepairItem,
    StaleDelivery,
    TreeEvents,
    TreeSummary,
)
from ..receipt import Receipt, ReceiptCheck
from ..search.context import Context
from .operations import http

if TYPE_CHECKING:
    from ..importers import ImportPlan, ImportSummary, ProgressCallback

DEFAULT_NAMESPACE = "default"
T = TypeVar("T")

__all__ = [
    "AuditEntry",
    "Blame",
    "Context",
    "Conversation",
    "Delivery",
    "Diff",
    "DiffEntry",
    "Event",
    "Explanation",
    "Hit",
    "KeyChange",
    "MemoryAPI",
    "Receipt",
    "ReceiptCheck",
    "Record",
    "RecordView",
    "RepairItem",
    "StaleDelivery",
    "TreeEvents",
    "TreeSummary",
]


class MemoryAPI(Protocol):
    """Branch-aware memory: events form trees, records are gated by their source events."""

    def close(self) -> None:
        """Release what this face holds (the store's connection, a client's HTTP pool)."""
        ...

    # -- events ------------------------------------------------------------------------
    @http("POST", "/events", repeatable=True)
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
        ...

    @http("POST", "/events/batch", repeatable=True)
    def add_events(
        self, events: Iterable[Mapping[str, Any] | Event], *, namespace: str = DEFAULT_NAMESPACE
    ) -> list[Event]:
        """Add many events in one all-or-nothing call, in any order."""
        ...

    @http("GET", "/events/{id}")
    def get_event(self, id: str, *, namespace: str = DEFAULT_NAMESPACE) -> Event:
        """One event by id."""
        ...

    @http("GET", "/events/{anchor}/path", limit=1000)
    def path(self, anchor: str, *, namespace: str = DEFAULT_NAMESPACE) -> list[Event]:
        """Events from the root (or, while ancestry is missing, the gap) down to the anchor."""
        ...

    @http("POST", "/heads", repeatable=True)
    def set_head(self, event_id: str, *, namespace: str = DEFAULT_NAMESPACE) -> None:
        """Make the event its tree's current node (used by cross-tree views)."""
        ...

    @http("GET", "/heads/{tree}", envelope="head")
    def head(self, tree: str, *, namespace: str = DEFAULT_NAMESPACE) -> str | None:
        """The current node of a tree, or None."""
        ...

    @http("GET", "/heads", envelope="heads")
    def heads(self, *, namespace: str = DEFAULT_NAMESPACE) -> dict[str, str]:
        """Every tree's current node."""
        ...

    def namespaces(self) -> list[str]:
        """Every namespace something was written to, by name (a client: those its key may
        read): where the data is when ``default`` shows nothing (an import with ``-n alice``
        went to ``alice``). Not under one namespace, so not in the operation table:
        ``GET /v1/namespaces``."""
        ...

    @http("GET", "/conversations")
    def conversations(self, *, namespace: str = DEFAULT_NAMESPACE) -> list[Conversation]:
        """Every conversation (tree) with its root, head, title and size, most recently active
        first."""
        ...

    # -- trees (explorer reads) --------------------------------------------------------
    @http("GET", "/trees")
    def trees(self, *, namespace: str = DEFAULT_NAMESPACE) -> list[TreeSummary]:
        """Every tree with its roots, size and head, by tree id (the explorer's list)."""
        ...

    @http("GET", "/trees/{tree}")
    def tree_events(self, tree: str, *, namespace: str = DEFAULT_NAMESPACE) -> TreeEvents:
        """One tree's attached events in arrival order, and its head."""
        ...

    @http("GET", "/explanations", limit=1000)
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
        """Every record decided at the anchor with its text, by id, all in one view of one
        snapshot; with a tree, only those built from it, each with the tree's events it draws on
        (``tree_sources``). AS_OF: the records written by then, decided as they stood then."""
        ...

    def import_(
        self,
        plan: ImportPlan,
        *,
        namespace: str = DEFAULT_NAMESPACE,
        progress: ProgressCallback | None = None,
    ) -> ImportSummary:
        """Write an import plan (``branchmem.importers.load``): one atomic ``add_events`` per
        conversation, then its head; a broken conversation is reported, not raised."""
        ...

    # -- records -----------------------------------------------------------------------
    @http("POST", "/records", repeatable=True)  # unless it supersedes: see Client
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
        """A derived memory built from its source events (sources=None: legacy)."""
        ...

    @http("POST", "/records/batch", repeatable=True)
    def add_records(
        self, records: Iterable[Mapping[str, Any] | Record], *, namespace: str = DEFAULT_NAMESPACE
    ) -> list[Record]:
        """Add many records in one all-or-nothing call; each may cite those before it.

        Items carry ``add_record``'s fields (``id``, ``sources`` required). One transaction and one
        audit entry for the batch: the way to write records at ingest speed."""
        ...

    @http("POST", "/records/{id}/revisions")
    def revise(
        self,
        id: str,
        *,
        content: str,
        sources: Iterable[str] | Keep | None = KEEP,
        meta: Mapping[str, Any] | None = None,
        namespace: str = DEFAULT_NAMESPACE,
    ) -> Record:
        """A new revision under the same id. Without sources it keeps the current revision's
        (pinned as they were): fixing a typo must not move a fact to every branch."""
        ...

    @http("GET", "/records/{id}")
    def get_record(
        self, id: str, *, revision: int | None = None, namespace: str = DEFAULT_NAMESPACE
    ) -> Record:
        """The latest (or a named) revision, whatever any view would decide."""
        ...

    # -- corrections -------------------------------------------------------------------
    @http("POST", "/supersede")
    def supersede(self, new_id: str, old_id: str, *, namespace: str = DEFAULT_NAMESPACE) -> None:
        """NEW_ID replaces OLD_ID wherever NEW_ID is visible."""
        ...

    @http("POST", "/retractions")
    def retract(
        self,
        id: str,
        *,
        sources: Iterable[str] | None,
        targets: Iterable[str] = (),
        key: str | None = None,
        key_scope: str | None = None,
        scope: str = "branch",
        reason: str = "",
        namespace: str = DEFAULT_NAMESPACE,
    ) -> Record:
        """A retraction record hiding targets or a key where it is itself visible (SPEC §5).

        A branch-scope one acts at and below its sources, so ``sources=[]`` is refused: it would
        hide nothing that has a source (``scope="tree"`` acts on every branch)."""
        ...

    @http("POST", "/items/{id}/withdraw", repeatable=True)
    def withdraw(self, id: str, *, reason: str = "", namespace: str = DEFAULT_NAMESPACE) -> None:
        """Take an event or record out of every view; dependents go stale (reversible)."""
        ...

    @http("POST", "/items/{id}/erase", envelope="erased")
    def erase(self, id: str, *, reason: str = "", namespace: str = DEFAULT_NAMESPACE) -> set[str]:
        """Irreversibly remove the text of an item and of everything built on it.

        Ids, parents and sources stay as a tombstone (the audit log never held text); the erased
        items leave every view. Returns the ids erased. Erasing again is a no-op."""
        ...

    @http("POST", "/items/{id}/restore", repeatable=True)
    def restore(self, id: str, *, namespace: str = DEFAULT_NAMESPACE) -> None:
        """Undo a withdrawal; a no-op for an item that is not withdrawn."""
        ...

    @http("GET", "/items/{id}/dependents")
    def dependents(self, id: str, *, namespace: str = DEFAULT_NAMESPACE) -> set[str]:
        """Every record built, directly or transitively, on an event or record."""
        ...

    # -- forget and receipts -----------------------------------------------------------
    @http("POST", "/forget")
    def forget(
        self, kind: str, id: str, *, dry_run: bool = False, namespace: str = DEFAULT_NAMESPACE
    ) -> Receipt:
        """Erase a message, branch, conversation or subject and all built on it; a receipt.

        KIND: ``message`` (event id), ``branch`` (an event and every event below it),
        ``conversation`` (tree id) or ``subject`` (records whose key, scope or a meta value names
        the id). The receipt lists per table what went, the sessions that had been shown it, a byte
        check of the store for fingerprints of the text, and what the backend cannot clean; its
        hash goes into the audit log. DRY_RUN erases and records nothing."""
        ...

    @http("POST", "/receipts/verify")
    def verify_receipt(
        self, receipt: Receipt | Mapping[str, Any], *, namespace: str = DEFAULT_NAMESPACE
    ) -> ReceiptCheck:
        """Re-check a forget receipt: its hash, its entry in the audit log, that everything it
        erased is still erased, and (unless redacted) the byte check of the stored bytes again."""
        ...

    # -- views -------------------------------------------------------------------------
    @http("GET", "/visible")
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
        """Records visible at the anchor, in path order. No anchor: nothing (strict).
        AS_OF (a seq or an ISO 8601 time): as the memory stood then."""
        ...

    @http("GET", "/records/{record_id}/explain")
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
        """Why a record is or is not visible at the anchor. AS_OF (a seq or an ISO 8601 time):
        as the memory stood then (a record not yet written then is not found)."""
        ...

    def is_visible(self, record_id: str, anchor: str | None, **options: Any) -> bool:
        """Whether a record is visible at the anchor: ``explain(...).visible``."""
        ...

    @http("GET", "/current")
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
        """The value of (scope, key) that holds at the anchor (AS_OF: held then), or None."""
        ...

    @http("GET", "/stale")
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
        """Records hidden at the anchor only because something they were built on changed.
        AS_OF: as the memory stood then."""
        ...

    # -- diff and promote --------------------------------------------------------------
    @http("GET", "/diff")
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
        """Records visible at one anchor and not the other, each with why not there (off-path
        source and fork, superseded, retracted, stale, ...), and the keys whose current value
        differs (both values). Nothing is written."""
        ...

    @http("POST", "/records/{record_id}/promote", repeatable=True)
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
        """Copy a record onto the branch of event ONTO as a new record citing only ONTO (id
        default ``RECORD~ONTO``; meta ``copied_from`` names the original, which is untouched, so
        switching back still shows the other branch as it was). ONTO is required: a copy needs a
        source on the target path."""
        ...

    # -- reporting ---------------------------------------------------------------------
    @http("GET", "/report")
    def report(self, *, namespace: str = DEFAULT_NAMESPACE) -> dict[str, Any]:
        """Decision counts by reason (this worker's; every case of missing information), store
        gauges and repair counts."""
        ...

    @http("GET", "/audit")
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
        ...

    @http("GET", "/records/{record_id}/history")
    def history(
        self, record_id: str, *, namespace: str = DEFAULT_NAMESPACE
    ) -> list[dict[str, Any]]:
        """What happened to a record, oldest first: one entry per audit row naming it, with
        ``happened`` (added, revised, superseded, retracted, withdrawn, went_stale, repaired,
        delivered, erased, ...) and the revision it happened to."""
        ...

    @http("GET", "/repair-queue")
    def repair_queue(self, *, namespace: str = DEFAULT_NAMESPACE) -> list[RepairItem]:
        """Records a correction made stale that are still stale, oldest first, each with the
        anchor of a view where it is (entries a later change settled are left out)."""
        ...

    # -- retrieval and deliveries ------------------------------------------------------
    @http("GET", "/search", page=False)
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
        """The k records visible at the anchor that best match the query.

        Only visible records are candidates, so k hits come back whenever k visible records match,
        and nothing on another branch moves a score. Lexical BM25 over the candidates
        (docs/retrieval.md); with an embedder, fused with cosine ranking by RRF. AS_OF (a seq or
        an ISO 8601 time): the candidates as the memory stood then."""
        ...

    @http("POST", "/context")
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
        """The prompt text at the anchor within the token budget: the branch's recent messages
        and the visible records (docs/retrieval.md). With a session, the delivered (record id,
        revision) pairs are remembered for ``stale_deliveries``; with cite, each memory line marked
        [n] and its record, source messages and conversation listed (docs/semantics.md, citations).
        AS_OF: the prompt as it stood then (never delivered: no session with it)."""
        ...

    @http("GET", "/deliveries")
    def deliveries(
        self,
        session: str,
        *,
        as_of: int | str | None = None,
        namespace: str = DEFAULT_NAMESPACE,
    ) -> list[Delivery]:
        """What context(..., session=) handed out (AS_OF: by then), oldest first (ids only)."""
        ...

    @http("GET", "/stale-deliveries")
    def stale_deliveries(
        self,
        session: str,
        anchor: str | None = None,
        *,
        as_of: int | str | None = None,
        namespace: str = DEFAULT_NAMESPACE,
    ) -> list[StaleDelivery]:
        """Every delivered record the session would not be given now, and why (each record
        judged by the revision it was given last).

        Judged at the anchor; without one, at the head of the tree of the session's latest delivery
        (so a branch switch made with ``set_head`` shows as ``off_path``), else at that delivery's
        anchor. AS_OF: the deliveries made by then, judged as the memory stood then (the head
        of then)."""
        ...

    # -- citations and blame -----------------------------------------------------------
    @http("GET", "/blame")
    def blame(
        self,
        session: str,
        delivery: int,
        line: int | None = None,
        *,
        namespace: str = DEFAULT_NAMESPACE,
    ) -> Blame:
        """A delivered context (or its memory line [LINE]) traced back to its records, their
        source messages and the branch it was given on.

        DELIVERY is its ``seq`` in ``deliveries(session)``; each memory line (only LINE, counted
        from 1 like the ``[n]`` markers, when given) comes with its record revision, its source
        messages (a shortened text unless erased) and the branch (tree and anchor path)."""
        ...


def takes_declared_docs(face: type[T]) -> type[T]:
    """Give each ``MemoryAPI`` method of ``face`` that has no docstring the declaration's, so
    the text is written once, here, and ``help(Memory.visible)`` still shows it. A face that
    writes its own is left as it is: ``tests/test_client_api.py`` fails on it."""
    for name, declared in vars(MemoryAPI).items():
        method = vars(face).get(name)
        if name.startswith("_") or not callable(declared) or method is None:
            continue
        if getattr(method, "__doc__", None) is None:
            method.__doc__ = declared.__doc__
    return face


# Checked by mypy: Memory satisfies the protocol (a missing or mistyped method fails);
# client.py checks Client the same way at its end.
if TYPE_CHECKING:
    from ..memory import Memory

    _embedded: type[MemoryAPI] = Memory
