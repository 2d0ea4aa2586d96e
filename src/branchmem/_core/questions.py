"""What a read asks a store in one go (``Questions``), and the complete answer (``Facts``).

``Store.answer`` is the one bulk reader of the storage contract: every backend answers every
question, each its own way (dicts, SQLite statements, one PostgreSQL round trip), so a
reader never branches on what a backend supports. An answer is complete for every id and
key asked: an id or key missing from a field means "none" (no status, no superseder, no
such event), never "not known". The one bounded answer, a tree index over its limit, says
so explicitly (``IndexTooLarge``).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from .provenance import RevisionNode
from .resolution import RevisionKey
from .retraction import RetractionNode
from .topology import EventNode

__all__ = ["PAGE_SIZE", "Facts", "IndexTooLarge", "Questions", "TreeIndex"]

# The most candidates a key page holds: a keyed read usually stops at its first.
PAGE_SIZE = 8


@dataclass(frozen=True, slots=True)
class TreeIndex:
    """What a one-tree view can decide from without walking the anchor's path.

    ``groups``: every ``(key, scope)`` with a revision placed in the tree or placed nowhere
    (no frontier), by key then scope; each group's winner is its first competing candidate.
    ``unkeyed``: the revisions that compete under no key (no key, or a retraction) with a
    frontier in the tree, deepest first, plus those with no frontier at all.
    """

    groups: tuple[tuple[str, str | None], ...]
    unkeyed: tuple[RevisionNode, ...]


@dataclass(frozen=True, slots=True)
class IndexTooLarge:
    """The answer for a tree whose index has more than ``limit`` entries: walking the path
    is then the shorter read, so the store does not read the index past the limit."""

    tree: str
    limit: int


@dataclass(frozen=True, slots=True)
class Questions:
    """One bulk read: every read of the history a store answers, asked together.

    A view's questions (the ones a backend with round trips answers in one): ``events``:
    these events and their statuses (a backend with round trips adds the events one step
    above each: the next an ancestor test reads). ``records``: each record's newest
    revisions, its status, its superseders and the retractions naming it as a target.
    ``keys``: the retractions of each key (any key scope). ``pages``: for each key, the first
    candidates a view anchored in ``page_tree`` at ``page_depth`` ranks
    (``Store.key_candidates`` with a frontier in that tree). ``index_tree``: that tree's
    ``TreeIndex``, or ``IndexTooLarge`` past ``index_limit`` entries.

    The rest of the history, one field per read the store's per-item methods wrap
    (``Store.children`` asks ``children``, and so on): ``children`` (of these parents),
    ``paths`` (to these anchors), ``heads``, ``histories`` (every revision of these
    records), ``sourced_at`` (revisions with a frontier at these events), ``ungated``
    (revisions with no frontier), ``record_ids``, ``citing`` (revisions whose sources name
    these targets), ``pending`` (revisions waiting for these detached events),
    ``keyed_records`` (records with one of these keys), ``superseders`` (of these old ids),
    ``superseded_by`` (these new ids), ``retractions`` (these ids), ``tree_retractions``,
    ``statuses`` (of these ids), ``roles`` (of these events: who said each).
    """

    events: frozenset[str] = frozenset()
    records: frozenset[str] = frozenset()
    keys: frozenset[str] = frozenset()
    pages: frozenset[str] = frozenset()
    page_tree: str = ""
    page_depth: int = 0
    index_tree: str | None = None
    index_limit: int = sys.maxsize
    children: frozenset[str] = frozenset()
    paths: frozenset[str] = frozenset()
    heads: bool = False
    histories: frozenset[str] = frozenset()
    sourced_at: frozenset[str] = frozenset()
    ungated: bool = False
    record_ids: bool = False
    citing: frozenset[str] = frozenset()
    pending: frozenset[str] = frozenset()
    keyed_records: frozenset[str] = frozenset()
    superseders: frozenset[str] = frozenset()
    superseded_by: frozenset[str] = frozenset()
    retractions: frozenset[str] = frozenset()
    tree_retractions: bool = False
    statuses: frozenset[str] = frozenset()
    roles: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        """Whether anything is asked (an empty question needs no read)."""
        return (
            any(
                getattr(self, name)
                for name in self.__slots__
                if name not in ("page_tree", "page_depth", "index_limit", "index_tree")
            )
            or self.index_tree is not None
        )


@dataclass(frozen=True, slots=True)
class Facts:
    """The complete answer to ``Questions``: for every id or key asked, an absent entry
    means "none".

    ``revisions``: by record id asked, a non-empty run of its newest revisions ending at the
    latest, oldest first (a record revised on every turn has a long history: the store picks
    how many; older ones are read when needed); absent: no such record. ``statuses``: of the
    record, event and status ids asked. ``superseders``: new ids by old record id asked (in
    ``records`` or ``superseders``), in arrival order. ``retracting``: retractions naming a
    record id asked as a target, by ``seq``. ``retracting_key``: retractions of a key asked,
    by ``seq``. ``events``: the event ids asked that exist; a backend may add others (the
    events one step above them, which a round trip saves), each as ``get_event`` reads it.
    ``pages``: by key asked, a prefix of its ranked candidates with a frontier in
    ``page_tree`` (at least the first when there is one; ``PAGE_SIZE`` at most).
    ``tree_index``: None only when no tree was asked.

    The rest, each as the per-item read of the same name returns it: ``children`` (ids in
    arrival order, by parent), ``paths`` (known ancestors-or-self, root or gap first, by
    anchor), ``heads`` (tree -> head event), ``histories`` (every revision oldest first, by
    record), ``sourced_at`` and ``ungated`` (revisions), ``record_ids`` (arrival order),
    ``citing`` and ``pending`` (revision keys, by target and by event), ``keyed_records``
    (record ids by key, sorted), ``superseded_by`` (old ids by new id), ``retractions`` (by
    id), ``tree_retractions`` (by ``seq``), ``roles`` (by event id asked that exists).
    """

    revisions: dict[str, tuple[RevisionNode, ...]] = field(default_factory=dict)
    statuses: dict[str, str] = field(default_factory=dict)
    superseders: dict[str, list[str]] = field(default_factory=dict)
    retracting: dict[str, list[RetractionNode]] = field(default_factory=dict)
    retracting_key: dict[str, list[RetractionNode]] = field(default_factory=dict)
    events: dict[str, EventNode] = field(default_factory=dict)
    pages: dict[str, tuple[RevisionNode, ...]] = field(default_factory=dict)
    tree_index: TreeIndex | IndexTooLarge | None = None
    children: dict[str, list[str]] = field(default_factory=dict)
    paths: dict[str, list[str]] = field(default_factory=dict)
    heads: dict[str, str] = field(default_factory=dict)
    histories: dict[str, list[RevisionNode]] = field(default_factory=dict)
    sourced_at: list[RevisionNode] = field(default_factory=list)
    ungated: list[RevisionNode] = field(default_factory=list)
    record_ids: list[str] = field(default_factory=list)
    citing: dict[str, list[RevisionKey]] = field(default_factory=dict)
    pending: dict[str, list[RevisionKey]] = field(default_factory=dict)
    keyed_records: dict[str, list[str]] = field(default_factory=dict)
    superseded_by: dict[str, list[str]] = field(default_factory=dict)
    retractions: dict[str, RetractionNode] = field(default_factory=dict)
    tree_retractions: list[RetractionNode] = field(default_factory=list)
    roles: dict[str, str] = field(default_factory=dict)
