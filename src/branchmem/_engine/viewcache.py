"""Search views kept between calls, for as long as nothing was committed.

Deciding which records an anchor sees is most of a search's cost once a view holds thousands
of records (docs/retrieval.md "Speed"); an agent asks many questions of one view between
writes. A ``SearchView`` keeps what a search decided (the records, what lends its rank) and,
once the view is asked again, a term index over it (``search.terms``). It is kept under the
store's commit stamp (``Store.commit_stamp``), which moves with every commit of any process,
and is used only while the stamp is unchanged. Nothing is kept or used inside a write
transaction (its writes may still roll back) or for a read ``as_of`` an earlier point.

After each of the owner's own writes every view is dropped, so text a forget erased is not
held here past the call that erased it — unless all that write did was add new events and
new records under no key that cite events only, with nothing waiting for them (``Appended``),
and the store vouches that no other commit came between (``Store.write_stamps``). Then the
views kept under the stamp before it are kept under the stamp after it, holding what was
added, and a search at such a view's anchor or at an event added below it derives its view
from the kept one (``_engine.derive``) instead of deciding every record again.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Final

from .._core.provenance import RevisionNode
from .._core.topology import EventNode
from ..search.embedding import VectorTable
from ..search.terms import TermIndex

VIEWS_KEPT: Final = 8  # views kept per Memory, least recently used dropped first
RECORDS_KEPT: Final = 1 << 18  # ... and no more records than this across them
INDEX_AFTER: Final = 1  # searches of a view before it gets a term index (1: at the second)
CURRENTS_KEPT: Final = 4096  # ``current`` answers kept per Memory, least recently used first out
JOURNAL_KEPT: Final = 4096  # events and records added past the oldest stamp, before all goes

ViewKey = tuple[str, str | None, bool, str, str | None, str | None, str | None]
# How a view was decided, and what that says of the tree's index size (``_engine.derive``
# asks, to know a later anchor would be decided the same way): ("index", n) read the index,
# which had at most n entries; ("past", n) walked the path, the index having more than n;
# ("whole", 0) walked the path without asking the index (never read, or not one tree at an
# attached anchor)
Route = tuple[str, int]
WHOLE: Final[Route] = ("whole", 0)
Superseded = dict[str, tuple[RevisionNode, str]]
# (namespace, key, anchor, scope, cross_tree, mode) of a ``current`` read
CurrentKey = tuple[str, str, str | None, str | None, bool, str]


@dataclass(slots=True)
class SearchView:
    """The records one search view shows (``views.decided``) and what was derived from
    them. ``counts``: what deciding it added to the namespace's report counts, added again at
    every use, so ``report`` counts a search the same whether its view was kept or not."""

    anchor: EventNode | None
    nodes: Sequence[RevisionNode]
    by_id: dict[str, RevisionNode]
    counts: Counter[str]
    uses: int = 0
    superseded: Superseded | None = None
    index: TermIndex | None = field(default=None, repr=False)
    vectors: VectorTable | None = field(default=None, repr=False)
    places: tuple[dict[str, int | None], dict[int, list[str]]] | None = field(
        default=None, repr=False
    )  # each candidate's path place, and the candidates at each (``provenance.path_places``)
    voices: dict[str, float] = field(default_factory=dict, repr=False)  # ``search.voice``
    quiet: bool = False  # a record of it was found quieter (``retrieval.QUIET_REACH``)
    route: Route = WHOLE

    def term_index(self, after: int) -> TermIndex | None:
        """The view's term index, built at its ``after``-th use or later (None before)."""
        if self.index is None and self.uses > after:
            self.index = TermIndex({rid: node.content for rid, node in self.by_id.items()})
        return self.index


@dataclass(slots=True)
class Appended:
    """What one outermost write of the owner added, per namespace, while it only added
    (``clean``): any other write, or an addition that changed something already there
    (late topology, a reference resolved, a key, a supersede), makes it unclean."""

    events: list[tuple[str, EventNode]] = field(default_factory=list)
    records: list[tuple[str, RevisionNode]] = field(default_factory=list)
    clean: bool = True


def _group(key: CurrentKey) -> tuple[object, ...]:
    """A ``current`` read's key without its anchor."""
    return key[:2] + key[3:]


class Journal:
    """What the owner's writes that only added have added, in order, since the oldest stamp
    that still stands: a chain of stamps, each with how much had been added under it, so
    that something kept under any of them knows what came after it (and costs nothing to
    carry past a write)."""

    __slots__ = ("events", "head", "records", "stamps")

    def __init__(self) -> None:
        self.stamps: dict[Hashable, tuple[int, int]] = {}
        self.head: Hashable | None = None
        self.events: dict[tuple[str, str], tuple[int, EventNode]] = {}  # (ns, id) -> order
        self.records: list[tuple[str, RevisionNode]] = []

    def since(self, kept: Hashable, stamp: Hashable) -> tuple[int, int] | None:
        """How many events and records had been added when ``kept`` was the stamp, if what
        was kept under it still stands at ``stamp``, the stamp now (None: it does not)."""
        if kept == stamp:
            return len(self.events), len(self.records)
        if stamp == self.head:
            return self.stamps.get(kept)
        return None

    def add(self, before: Hashable, after: Hashable, appended: Appended) -> bool:
        """Chain ``after`` to ``before`` with what was added between (False: the journal
        would grow past ``JOURNAL_KEPT``, so nothing is carried)."""
        if self.head != before:  # a chain from before: nothing kept under another stands
            self.stamps, self.events, self.records = {before: (0, 0)}, {}, []
        for namespace, event in appended.events:
            self.events[namespace, event.id] = (len(self.events), event)
        self.records.extend(appended.records)
        self.stamps[after] = (len(self.events), len(self.records))
        self.head = after
        return len(self.events) + len(self.records) <= JOURNAL_KEPT

    def reaches(self, namespace: str, start: str, anchor: str, since: int) -> bool:
        """Whether ``start`` is ``anchor`` or below it through events added since ``since``."""
        step = start
        while step != anchor:
            found = self.events.get((namespace, step))
            if found is None or found[0] < since or found[1].parent is None:
                return False
            step = found[1].parent
        return True

    def records_since(self, namespace: str, since: int) -> list[RevisionNode]:
        return [node for ns, node in self.records[since:] if ns == namespace]


class SearchViews:
    """One Memory's kept views, by (namespace, anchor, cross_tree, mode, kind, key, scope),
    each with the commit stamp it was decided under. Callers hold the Memory's lock."""

    def __init__(self, writing: Callable[[], bool], *, index_after: int = INDEX_AFTER) -> None:
        self.writing = writing
        self.index_after = index_after
        self._views: OrderedDict[ViewKey, tuple[Hashable, SearchView]] = OrderedDict()
        self._records = 0
        # ``current`` answers: the stamp, the revision (None: no value) and what deciding it
        # counted
        self._currents: OrderedDict[
            CurrentKey, tuple[Hashable, RevisionNode | None, Counter[str]]
        ] = OrderedDict()
        # each read's (a ``current`` key but its anchor) anchors with an answer kept, oldest
        # first
        self._anchors: dict[tuple[object, ...], dict[str, None]] = {}
        self.appended: Appended | None = None  # the owner's outermost write, while it runs
        self.journal = Journal()

    def usable(self) -> bool:
        """False inside a write transaction: nothing kept is used, nothing decided is kept."""
        return not self.writing()

    def get(self, key: ViewKey, stamp: Hashable) -> SearchView | None:
        """The view kept under ``key`` that still stands at ``stamp`` with no record added
        to its namespace since (added events move nothing at its anchor)."""
        kept = self._views.get(key)
        if kept is None:
            return None
        since = self.journal.since(kept[0], stamp)
        if since is None:
            self._drop(key)
            return None
        if self.journal.records_since(key[0], since[1]):
            return None  # ``base`` hands it over, to derive from
        self._views.move_to_end(key)
        kept[1].uses += 1
        return kept[1]

    def keep(self, key: ViewKey, stamp: Hashable, view: SearchView) -> None:
        if key in self._views:
            self._drop(key)
        if len(view.nodes) > RECORDS_KEPT:
            return
        view.uses = max(view.uses, 1)
        self._views[key] = (stamp, view)
        self._records += len(view.nodes)
        while len(self._views) > VIEWS_KEPT or self._records > RECORDS_KEPT:
            self._drop(next(iter(self._views)))

    def base(
        self, key: ViewKey, stamp: Hashable, anchor: EventNode
    ) -> tuple[SearchView, list[RevisionNode]] | None:
        """A view kept for ``key`` at ``anchor`` or at an anchor above it reached through
        events added since, standing at ``stamp``; and the records added to its namespace
        since it was decided (None: none)."""
        journal = self.journal
        for other, (kept_stamp, view) in reversed(self._views.items()):
            if view.anchor is None or other[:1] + other[2:] != key[:1] + key[2:]:
                continue
            since = journal.since(kept_stamp, stamp)
            if since is not None and journal.reaches(key[0], anchor.id, view.anchor.id, since[0]):
                self._views.move_to_end(other)
                return view, journal.records_since(key[0], since[1])
        return None

    def current(
        self, key: CurrentKey, stamp: Hashable
    ) -> tuple[RevisionNode | None, Counter[str]] | None:
        """A ``current`` answer kept for ``key`` that still stands at ``stamp`` (None: none).
        What the owner added since cannot change it: no added record is under a key, and
        no added event is on its anchor's path."""
        kept = self._currents.get(key)
        if kept is None:
            return None
        if self.journal.since(kept[0], stamp) is None:
            self._forget_current(key)
            return None
        self._currents.move_to_end(key)
        return kept[1], kept[2]

    def current_above(
        self, key: CurrentKey, stamp: Hashable
    ) -> tuple[RevisionNode | None, Counter[str]] | None:
        """A ``current`` answer for ``key`` kept at an anchor above its own, reached from it
        through events added since that answer was decided: the same answer (a one-tree
        read; what was added names no key and is on no earlier anchor's path), kept for
        ``key`` too (None: none). Only the answers of ``key``'s own read are looked at."""
        anchor, journal = key[2], self.journal
        if anchor is None or key[4] or journal.head != stamp:
            return None
        namespace, name, _, scope, cross_tree, mode = key
        for above in reversed(list(self._anchors.get(_group(key), ()))):
            kept_stamp, revision, counts = self._currents[
                (namespace, name, above, scope, cross_tree, mode)
            ]
            since = journal.since(kept_stamp, stamp)
            if since is not None and journal.reaches(namespace, anchor, above, since[0]):
                self.keep_current(key, stamp, revision, counts)
                return revision, counts
        return None

    def keep_current(
        self, key: CurrentKey, stamp: Hashable, revision: RevisionNode | None, counts: Counter[str]
    ) -> None:
        self._currents[key] = (stamp, revision, counts)
        self._currents.move_to_end(key)
        if key[2] is not None:  # the anchors each read is kept at (``current_above``)
            anchors = self._anchors.setdefault(_group(key), {})
            anchors.pop(key[2], None)
            anchors[key[2]] = None
        if len(self._currents) > CURRENTS_KEPT:
            self._forget_current(next(iter(self._currents)))

    def _forget_current(self, key: CurrentKey) -> None:
        del self._currents[key]
        anchors = self._anchors.get(_group(key))
        if anchors is not None and key[2] is not None:
            anchors.pop(key[2], None)
            if not anchors:
                del self._anchors[_group(key)]

    def begin_write(self) -> None:
        """The owner's outermost write starts: what it adds is noted from now on."""
        self.appended = Appended()

    def added_event(self, namespace: str, node: EventNode) -> None:
        """The write in progress placed a new event that moved nothing already there."""
        if self.appended is not None:
            self.appended.events.append((namespace, node))

    def added_record(self, namespace: str, node: RevisionNode) -> None:
        """The write in progress wrote a record's first revision that nothing waited for."""
        if self.appended is not None:
            self.appended.records.append((namespace, node))

    def not_only_adding(self) -> None:
        """The write in progress does more than add: every view goes now (no text a forget
        erases outlives the call), and nothing is kept past the write."""
        if self.appended is not None:
            self.appended.clean = False
        self.clear()

    def end_write(self, stamps: tuple[Hashable, Hashable] | None) -> None:
        """The owner's outermost write ended (``stamps``: before and after it, when it
        committed and the store vouches nothing else did; None otherwise). When all it did
        was add, what was kept under the first stamp still stands under the second, with
        what it added noted (``Journal``); else nothing kept stands."""
        appended, self.appended = self.appended, None
        if stamps is None or appended is None or not appended.clean:
            self.clear()
            return
        if not self.journal.add(stamps[0], stamps[1], appended):
            self.clear()

    def clear(self) -> None:
        self._views.clear()
        self._records = 0
        self._currents.clear()
        self._anchors.clear()
        self.journal = Journal()

    def __len__(self) -> int:
        return len(self._views)

    def _drop(self, key: ViewKey) -> None:
        _, view = self._views.pop(key)
        self._records -= len(view.nodes)
