"""``MemoryAPI``: the public API that ``Memory`` (embedded) and ``Client`` (HTTP) both offer.

mypy checks that both classes satisfy it (the assignments at the end). Each routed method
carries its HTTP route (``@http``); ``operations.py`` turns these declarations into the table
that the server, the client and the CLI are built from. The docstrings here are the help
text of the HTTP operations and the CLI commands.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

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
from ..validation import KEEP, Keep
from .operations import http

if TYPE_CHECKING:
    from ..importers import ImportPlan, ImportSummary, ProgressCallback

DEFAULT_NAMESPACE = "default"

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

    def close(self) -> None: ...

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
        read). Not under one namespace, so not in the operation table: ``GET /v1/namespaces``."""
        ...

    @http("GET", "/conversations")
    def conversations(self, *, namespace: str = DEFAULT_NAMESPACE) -> list[Conversation]:
        """Every conversation (tree) with its root, head and title, newest first."""
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
        namespace: str = DEFAULT_NAMESPACE,
    ) -> list[RecordView]:
        """Every record decided at the anchor with its text, by id, from one snapshot; with
        a tree, only those built from it, each with the tree's events it draws on."""
        ...

    def import_(
        self,
        plan: ImportPlan,
        *,
        namespace: str = DEFAULT_NAMESPACE,
        progress: ProgressCallback | None = None,
    ) -> ImportSummary: ...

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
        """Add many records in one all-or-nothing call; each may cite those before it."""
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
        """A new revision under the same id; without sources it keeps the current ones."""
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
        """A retraction record hiding targets or a key where it is itself visible."""
        ...

    @http("POST", "/items/{id}/withdraw", repeatable=True)
    def withdraw(self, id: str, *, reason: str = "", namespace: str = DEFAULT_NAMESPACE) -> None:
        """Take an event or record out of every view; dependents go stale (reversible)."""
        ...

    @http("POST", "/items/{id}/erase", envelope="erased")
    def erase(self, id: str, *, reason: str = "", namespace: str = DEFAULT_NAMESPACE) -> set[str]:
        """Irreversibly remove the text of an item and of everything built on it."""
        ...

    @http("POST", "/items/{id}/restore", repeatable=True)
    def restore(self, id: str, *, namespace: str = DEFAULT_NAMESPACE) -> None:
        """Undo a withdrawal."""
        ...

    @http("GET", "/items/{id}/dependents")
    def dependents(self, id: str, *, namespace: str = DEFAULT_NAMESPACE) -> set[str]:
        """Every record built, directly or not, on an event or record."""
        ...

    # -- forget and receipts -----------------------------------------------------------
    @http("POST", "/forget")
    def forget(
        self, kind: str, id: str, *, dry_run: bool = False, namespace: str = DEFAULT_NAMESPACE
    ) -> Receipt:
        """Erase a message, branch, conversation or subject and all built on it; a receipt."""
        ...

    @http("POST", "/receipts/verify")
    def verify_receipt(
        self, receipt: Receipt | Mapping[str, Any], *, namespace: str = DEFAULT_NAMESPACE
    ) -> ReceiptCheck:
        """Re-check a forget receipt: its hash, the audit, the ids, the stored bytes."""
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
        namespace: str = DEFAULT_NAMESPACE,
    ) -> Explanation:
        """Why a record is or is not visible at the anchor."""
        ...

    def is_visible(self, record_id: str, anchor: str | None, **options: Any) -> bool: ...

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
        namespace: str = DEFAULT_NAMESPACE,
    ) -> list[Record]:
        """Records hidden at the anchor only because something they were built on changed."""
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
        """Records visible at one anchor and not the other, with why, and the keys whose
        current value differs."""
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
        """Copy a record onto the branch of event ONTO as a new record citing ONTO (meta
        copied_from names the original, which is untouched)."""
        ...

    # -- reporting ---------------------------------------------------------------------
    @http("GET", "/report")
    def report(self, *, namespace: str = DEFAULT_NAMESPACE) -> dict[str, Any]:
        """Decision counts by reason (this worker's), store gauges and repair counts."""
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
        """What happened to a record, oldest first."""
        ...

    @http("GET", "/repair-queue")
    def repair_queue(self, *, namespace: str = DEFAULT_NAMESPACE) -> list[RepairItem]:
        """Records a correction made stale that are still stale, oldest first."""
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
        namespace: str = DEFAULT_NAMESPACE,
    ) -> list[Hit]:
        """The k records visible at the anchor that best match the query."""
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
        """The prompt text at the anchor within the token budget; with a session, remembered;
        with cite, each memory line marked [n] and its record and messages listed.
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
        self, session: str, anchor: str | None = None, *, namespace: str = DEFAULT_NAMESPACE
    ) -> list[StaleDelivery]:
        """Every delivered record the session would not be given now, and why."""
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
        source messages and the branch it was given on."""
        ...


# Checked by mypy: Memory satisfies the protocol (a missing or mistyped method fails);
# client.py checks Client the same way at its end.
if TYPE_CHECKING:
    from ..memory import Memory

    _embedded: type[MemoryAPI] = Memory
