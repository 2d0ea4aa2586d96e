"""Search views kept between calls, for as long as nothing was committed.

Deciding which records an anchor sees is most of a search's cost once a view holds thousands
of records (docs/retrieval.md "Speed"); an agent asks many questions of one view between
writes. A ``SearchView`` keeps what a search decided (the records, what lends its rank) and,
once the view is asked again, a term index over it (``search.terms``). It is kept under the
store's commit stamp (``Store.commit_stamp``), which moves with every commit of any process,
and is used only while the stamp is unchanged. Nothing is kept or used inside a write
transaction (its writes may still roll back) or for a read ``as_of`` an earlier point, and
the owner drops every view after each of its own writes, so text a forget erased is not held
here past the call that erased it.
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

    def term_index(self, after: int) -> TermIndex | None:
        """The view's term index, built at its ``after``-th use or later (None before)."""
        if self.index is None and self.uses > after:
            self.index = TermIndex({rid: node.content for rid, node in self.by_id.items()})
        return self.index


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

    def usable(self) -> bool:
        """False inside a write transaction: nothing kept is used, nothing decided is kept."""
        return not self.writing()

    def get(self, key: ViewKey, stamp: Hashable) -> SearchView | None:
        kept = self._views.get(key)
        if kept is None:
            return None
        if kept[0] != stamp:
            self._drop(key)
            return None
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

    def clear(self) -> None:
        self._views.clear()
        self._records = 0
        self._currents.clear()

    def __len__(self) -> int:
        return len(self._views)

    def _drop(self, key: ViewKey) -> None:
        _, view = self._views.pop(key)
        self._records -= len(view.nodes)
