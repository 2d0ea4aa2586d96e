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
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from .._core.provenance import RevisionNode
from .._core.topology import EventNode
from ..search.terms import TermIndex

VIEWS_KEPT: Final = 8  # views kept per Memory, least recently used dropped first
RECORDS_KEPT: Final = 1 << 18  # ... and no more records than this across them
INDEX_AFTER: Final = 1  # searches of a view before it gets a term index (1: at the second)
CURRENTS_KEPT: Final = 4096  # ``current`` answers kept per Memory, least recently used first out

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
    vectors: Mapping[str, Sequence[float]] | None = field(default=None, repr=False)
    places: tuple[dict[str, int | None], dict[int, list[str]]] | None = field(
        default=None, repr=False
    )  # each candidate's path place, and the candidates at each (``provenance.path_places``)
    voices: dict[str, float] = field(default_factory=dict, repr=False)  # ``search.voice``
    quiet: bool = False  # a record of it was found quieter (``retrieval.QUIET_REACH``)
    route: Route = WHOLE
    # what the owner's writes added to its namespace since it was decided (``Appended``),
    # not yet in it: the events by id and the records in the order they were written
    added_events: dict[str, EventNode] = field(default_factory=dict, repr=False)
    added_records: list[RevisionNode] = field(default_factory=list, repr=False)

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


class SearchViews:
    """One Memory's kept views, by (namespace, anchor, cross_tree, mode, kind, key, scope),
    each with the commit stamp it was decided under. Callers hold the Memory's lock."""

    def __init__(self, writing: Callable[[], bool], *, index_after: int = INDEX_AFTER) -> None:
        self.writing = writing
        self.index_after = index_after
        self._views: OrderedDict[ViewKey, tuple[Hashable, SearchView]] = OrderedDict()
        self._records = 0
        # ``current`` answers: the revision (None: no value) and what deciding it counted
        self._currents: OrderedDict[
            CurrentKey, tuple[Hashable, RevisionNode | None, Counter[str]]
        ] = OrderedDict()
        self.appended: Appended | None = None  # the owner's outermost write, while it runs

    def usable(self) -> bool:
        """False inside a write transaction: nothing kept is used, nothing decided is kept."""
        return not self.writing()

    def get(self, key: ViewKey, stamp: Hashable) -> SearchView | None:
        """The view kept under ``key`` and ``stamp``, holding nothing added since."""
        kept = self._views.get(key)
        if kept is None:
            return None
        if kept[0] != stamp:
            self._drop(key)
            return None
        if kept[1].added_events or kept[1].added_records:
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

    def current(
        self, key: CurrentKey, stamp: Hashable
    ) -> tuple[RevisionNode | None, Counter[str]] | None:
        """A ``current`` answer kept under ``stamp`` (None: none, or kept under another)."""
        kept = self._currents.get(key)
        if kept is None:
            return None
        if kept[0] != stamp:
            del self._currents[key]
            return None
        self._currents.move_to_end(key)
        return kept[1], kept[2]

    def keep_current(
        self, key: CurrentKey, stamp: Hashable, revision: RevisionNode | None, counts: Counter[str]
    ) -> None:
        self._currents[key] = (stamp, revision, counts)
        self._currents.move_to_end(key)
        if len(self._currents) > CURRENTS_KEPT:
            self._currents.popitem(last=False)

    def base(self, key: ViewKey, stamp: Hashable, anchor: EventNode) -> SearchView | None:
        """A view kept under ``stamp`` for ``key`` but at an earlier anchor: one whose anchor
        is ``anchor`` or an ancestor of it reached through events added since (None: none)."""
        for other, (kept_stamp, view) in reversed(self._views.items()):
            if kept_stamp != stamp or other[:1] + other[2:] != key[:1] + key[2:]:
                continue
            if view.anchor is None:
                continue
            step = anchor.id
            while step != view.anchor.id:
                added = view.added_events.get(step)
                if added is None or added.parent is None:
                    break
                step = added.parent
            else:
                self._views.move_to_end(other)
                return view
        return None

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
        committed and the store vouches nothing else did; None otherwise). The views kept
        under the first stamp are kept under the second when all it did was add; every
        other view, and every ``current`` answer, goes."""
        appended, self.appended = self.appended, None
        if stamps is None or appended is None or not appended.clean:
            self.clear()
            return
        before, after = stamps
        self._currents.clear()
        for key, (stamp, view) in list(self._views.items()):
            if stamp != before:
                self._drop(key)
                continue
            namespace = key[0]
            view.added_events.update((e.id, e) for ns, e in appended.events if ns == namespace)
            view.added_records.extend(r for ns, r in appended.records if ns == namespace)
            self._views[key] = (after, view)

    def clear(self) -> None:
        self._views.clear()
        self._records = 0
        self._currents.clear()

    def __len__(self) -> int:
        return len(self._views)

    def _drop(self, key: ViewKey) -> None:
        _, view = self._views.pop(key)
        self._records -= len(view.nodes)
