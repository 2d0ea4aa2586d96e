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
    """One bulk read.

    ``events``: these events and their statuses (a backend with round trips adds the
    events one step above each: the next an ancestor test reads). ``records``: each
    record's newest revisions, its status, its superseders and the retractions naming it as
    a target. ``keys``: the retractions of each key (any key scope). ``pages``: for each
    key, the first candidates a view anchored in ``page_tree`` at ``page_depth`` ranks
    (``Store.key_candidates`` with a frontier in that tree). ``index_tree``: that tree's
    ``TreeIndex``, or ``IndexTooLarge`` past ``index_limit`` entries.
    """

    events: frozenset[str] = frozenset()
    records: frozenset[str] = frozenset()
    keys: frozenset[str] = frozenset()
    pages: frozenset[str] = frozenset()
    page_tree: str = ""
    page_depth: int = 0
    index_tree: str | None = None
    index_limit: int = sys.maxsize

    def __bool__(self) -> bool:
        """Whether anything is asked (an empty question needs no read)."""
        return bool(
            self.events or self.records or self.keys or self.pages or self.index_tree is not None
        )


@dataclass(frozen=True, slots=True)
class Facts:
    """The complete answer to ``Questions``: for every id or key asked, an absent entry
    means "none".

    ``revisions``: by record id asked, a non-empty run of its newest revisions ending at the
    latest, oldest first (a record revised on every turn has a long history: the store picks
    how many; older ones are read when needed); absent: no such record. ``statuses``: of the
    record and event ids asked. ``superseders``: new ids by old record id asked, in arrival
    order. ``retracting``: retractions naming a record id asked as a target, by ``seq``.
    ``retracting_key``: retractions of a key asked, by ``seq``. ``events``: the event ids
    asked that exist; a backend may add others (the events one step above them, which a
    round trip saves), each as ``get_event`` reads it. ``pages``: by key
    asked, a prefix of its ranked candidates with a frontier in ``page_tree`` (at least the
    first when there is one; ``PAGE_SIZE`` at most). ``tree_index``: None only when no tree
    was asked.
    """

    revisions: dict[str, tuple[RevisionNode, ...]] = field(default_factory=dict)
    statuses: dict[str, str] = field(default_factory=dict)
    superseders: dict[str, list[str]] = field(default_factory=dict)
    retracting: dict[str, list[RetractionNode]] = field(default_factory=dict)
    retracting_key: dict[str, list[RetractionNode]] = field(default_factory=dict)
    events: dict[str, EventNode] = field(default_factory=dict)
    pages: dict[str, tuple[RevisionNode, ...]] = field(default_factory=dict)
    tree_index: TreeIndex | IndexTooLarge | None = None
