"""Keyed reads whose cost follows what they return, not the history (SPEC §7).

An agent adds an event and rewrites a key on every turn, so the anchor's path and the
superseded revisions of a key grow together. ``View`` answers for every record on the path;
``KeyedView`` answers one question — which record of ``(scope, key)`` is current at an
attached anchor (cross-tree: with every head attached) — from a per-key index that lists
the key's revisions in the order the view ranks them (frontier depth in the anchor's tree
first, then latest ``seq``; revisions without a frontier there last, latest first). The
first candidate that competes is the winner: everything after it ranks lower. "Is this
frontier on the path?" is a jump-pointer ancestor test (``topology.AnchorPath``), never a
walk. The §5 rules are applied to the few records the answer depends on (the winner, the
retractions and superseders naming it, what it was built from), each decided exactly as
``View`` would.

A view reads item by item and tells its reader, unconditionally, what it is about to decide
(``read_ahead``: every key of a view with the records it will decide first). The reader is
the backend's choice (``Store.keyed_reads``): an in-process store is its own reader and
ignores the hint; PostgreSQL, where every statement is a round trip, gives each view a
reader that asks the store's one bulk reader ahead of need and serves the per-item reads
from its answers (``branchmem.store.readahead``). Either way the answers are the same.

Cases this cannot decide without the whole view (no anchor, a detached anchor or head, whose
partial path makes "undecided" depend on its whole known chain) stay with ``View``;
``_engine.views.current`` chooses.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Iterator
from functools import partial
from typing import Protocol

from ..model import DETACHED, NO_VIEW, RETRACTION_KIND, STALE, VISIBLE
from .provenance import Gate, RevisionNode
from .questions import TreeIndex
from .retraction import TREE, RetractionNode
from .rules import Position, competes, key_group, retracts
from .rules import explicitly_superseded as shown_superseder
from .rules import gate as rule_gate
from .rules import position as rule_position
from .rules import stale as rule_stale
from .topology import AnchorPath, EventNode, Lookup


class _AnyScope:
    """Marks a read over every scope of a key (``scope=None`` in the public API)."""

    def __repr__(self) -> str:
        return "ANY_SCOPE"


ANY_SCOPE = _AnyScope()


class KeyedReader(Protocol):
    """The reads a keyed view makes of a store (``branchmem.store.base.Store`` is one)."""

    def keyed_reads(self, namespace: str) -> KeyedReader:
        """The reader one keyed view asks (the store itself, or one that reads ahead)."""
        ...

    def read_ahead(
        self,
        namespace: str,
        anchor: EventNode,
        keys: Collection[str],
        revisions: Collection[RevisionNode] = (),
    ) -> None:
        """A hint: a view at ``anchor`` will rank ``keys``' candidates and decide the records
        of ``revisions``. It changes no answer, only its cost."""
        ...

    def get_event(self, namespace: str, event_id: str) -> EventNode | None: ...
    def key_candidates(
        self, namespace: str, key: str, tree: str, depth: int, cross_tree: bool = False
    ) -> Iterator[RevisionNode]: ...
    def revisions_newest_first(self, namespace: str, record_id: str) -> Iterator[RevisionNode]: ...
    def retractions_naming(
        self, namespace: str, record_id: str, key: str | None
    ) -> list[RetractionNode]: ...
    def superseders(self, namespace: str, old_ids: Collection[str]) -> dict[str, list[str]]: ...
    def statuses(self, namespace: str, ids: Collection[str]) -> dict[str, str]: ...


class KeyedView:
    """§3–§5 for the records one keyed read depends on, at one attached anchor (plus, in a
    cross-tree view, the attached head of every other tree)."""

    def __init__(
        self,
        reader: KeyedReader,
        namespace: str,
        anchor: EventNode,
        mode: str,
        heads: dict[str, EventNode] | None = None,
        lookup: Lookup | None = None,
        path_of: Callable[[EventNode, Lookup], AnchorPath] = AnchorPath,
        counts: Counter[str] | None = None,
    ) -> None:
        """``lookup``: how the view reads an event's place (default: ``get_event``); only
        places are read through it, never text. ``path_of``: an attached event's path for
        ancestor tests over a lookup (one that remembers earlier calls' ancestors).
        ``counts``: where the decisions are counted (default: a new ``Counter``)."""
        assert anchor.attached and anchor.tree is not None
        self.reader = reader.keyed_reads(namespace)  # the backend's: it may read ahead
        self.namespace = namespace
        self._lookup: Lookup = lookup or partial(reader.get_event, namespace)
        self.mode = mode
        self.tree: str = anchor.tree
        self.path = path_of(anchor, self._lookup)
        self.cross_tree = heads is not None
        self.paths = {self.tree: self.path}
        for tree, head in sorted(heads.items()) if heads else ():
            if tree != self.tree:
                self.paths[tree] = path_of(head, self._lookup)
        self.counts: Counter[str] = Counter() if counts is None else counts
        self.missing: dict[str, tuple[str, ...]] = {}
        self._shown: dict[str, RevisionNode | None] = {}
        self._retracted: dict[str, bool] = {}
        self._explicit: dict[str, bool] = {}
        self._winners: dict[tuple[str | None, str], str | None] = {}
        self._stale: dict[str, bool] = {}
        self._passed: dict[int, tuple[Gate, tuple[bool, tuple[str, ...]]]] = {}

    def learn_keys(self, keys: Collection[str], unkeyed: Collection[RevisionNode] = ()) -> None:
        """Tell the reader this view will rank every one of ``keys`` and decide ``unkeyed``
        (a backend with round trips reads them ahead; the others do nothing)."""
        self.reader.read_ahead(self.namespace, self.path.anchor, keys, unkeyed)

    def _status(self, ids: Collection[str]) -> dict[str, str]:
        return self.reader.statuses(self.namespace, ids)

    def _superseders_of(self, record_id: str) -> list[str]:
        return self.reader.superseders(self.namespace, (record_id,)).get(record_id, [])

    def _candidates(self, key: str) -> Iterator[RevisionNode]:
        """``key_candidates`` in rank order."""
        return self.reader.key_candidates(
            self.namespace, key, self.tree, self.path.anchor.depth or 0, self.cross_tree
        )

    # -- the gate's questions (``rules.PathAnswers``), answered by ancestor tests --------
    open_anchor = False  # the anchor is attached

    def path_attached(self, tree: str | None) -> bool | None:
        return True if tree in self.paths else None

    def on_path(self, tree: str | None, event_id: str) -> bool:
        return tree is not None and self.paths[tree].contains(event_id)

    def detached_status(self, event_id: str) -> tuple[str, str | None]:
        """Every path here is attached, so an open chain meets none of them: NO_VIEW when
        its tree has no anchor here, else undecided."""
        node = self._lookup(event_id)
        if node is not None and node.tree is not None and node.tree not in self.paths:
            return NO_VIEW, None
        return DETACHED, None

    # -- the rule (§3, §4) on attached paths ------------------------------------------
    def passes(self, gate: Gate) -> tuple[bool, tuple[str, ...]]:
        """``rules.gate`` reduced to its answer, and the missing information compat let
        through."""
        known = self._passed.get(id(gate))
        if known is not None and known[0] is gate:
            return known[1]
        decision = rule_gate(gate, self.mode, self)
        answer = decision.reason == VISIBLE, decision.missing
        self._passed[id(gate)] = (gate, answer)  # the gate held: its id stays its own
        return answer

    def position(self, revision: RevisionNode) -> Position:
        """``rules.position`` for a revision that passes: its frontier is on the path."""
        frontier = revision.gate.frontier_in(self.tree)
        return rule_position(None if frontier is None else frontier.depth, revision.seq)

    def shown(self, record_id: str) -> RevisionNode | None:
        """The highest revision passing the rule, unless the record is withdrawn or erased."""
        if record_id in self._shown:
            return self._shown[record_id]
        found: RevisionNode | None = None
        if not self._status([record_id]):
            for revision in self.reader.revisions_newest_first(self.namespace, record_id):
                ok, missing = self.passes(revision.gate)
                if ok:
                    found = revision
                    self.missing[record_id] = missing
                    break
        self._shown[record_id] = found
        return found

    # -- invalidation (§5) --------------------------------------------------------------
    def retracted(self, record_id: str) -> bool:
        """A retraction acting here covers it: branch scope when the retraction is shown at
        or below it on the path, tree scope when written after it."""
        known = self._retracted.get(record_id)
        if known is not None:
            return known
        revision = self.shown(record_id)
        found = False
        if revision is not None and revision.kind != RETRACTION_KIND:
            for node in self.reader.retractions_naming(self.namespace, record_id, revision.key):
                if not node.covers(record_id, revision.key, revision.scope):
                    continue  # asks nothing more of the store
                gone, acting = False, None
                if node.scope == TREE:
                    gone = bool(self._status([node.id]))
                else:
                    shown = self.shown(node.id)
                    acting = None if shown is None else self.position(shown)
                if retracts(node, revision, self.position(revision), acting, gone):
                    found = True
                    break
        self._retracted[record_id] = found
        return found

    def explicitly_superseded(self, record_id: str) -> bool:
        known = self._explicit.get(record_id)
        if known is None:
            known = shown_superseder(
                self._superseders_of(record_id), lambda new: self.shown(new) is not None
            )
            self._explicit[record_id] = known
        return known

    def _competes(self, candidate: RevisionNode) -> bool:
        """The candidate is its record's shown revision and that record is in the running
        for its key (not retracted, not explicitly superseded)."""
        if key_group(candidate) is None or not self.passes(candidate.gate)[0]:
            return False
        record_id = candidate.record_id
        shown = self.shown(record_id)
        if shown is None or shown.revision != candidate.revision:
            return False  # the record ranks where its shown revision stands
        retracted = self.retracted(record_id)  # read lazily: explicit only if not retracted
        return competes(
            candidate, retracted, not retracted and self.explicitly_superseded(record_id)
        )

    def _winners_of(self, key: str, scope: object) -> Iterator[tuple[str | None, str]]:
        """(scope, winning record id) per scope group of ``key``, best-ranked first;
        ``scope`` ANY_SCOPE for every group."""
        decided: set[str | None] = set()
        for candidate in self._candidates(key):
            group = candidate.scope
            if (scope is not ANY_SCOPE and group != scope) or group in decided:
                continue
            if candidate.key != key or not self._competes(candidate):
                continue
            decided.add(group)
            self._winners[(group, key)] = candidate.record_id
            yield group, candidate.record_id

    def winner(self, scope: str | None, key: str) -> str | None:
        """The record of ``(scope, key)`` that holds here, stale or not (None: none)."""
        if (scope, key) not in self._winners:
            for _ in self._winners_of(key, scope):
                break
            self._winners.setdefault((scope, key), None)
        return self._winners[(scope, key)]

    def superseded(self, record_id: str) -> bool:
        revision = self.shown(record_id)
        if revision is None:
            return False
        if self.explicitly_superseded(record_id):
            return True
        group = key_group(revision)
        if group is None or self.retracted(record_id):
            return False
        return self.winner(*group) != record_id

    def stale(self, record_id: str) -> bool:
        """Built on something this view does not show as it was when it was built."""
        known = self._stale.get(record_id)
        if known is not None:
            return known
        self._stale[record_id] = False  # provisional; sources never cycle back (CycleError)
        revision = self.shown(record_id)
        assert revision is not None
        found = rule_stale(
            revision,
            lambda events: bool(self._status(events)),
            self._shown_number,
            lambda source: self.retracted(source) or self.superseded(source) or self.stale(source),
        )
        self._stale[record_id] = found
        return found

    # -- the reads ----------------------------------------------------------------------
    def visible(self, index: TreeIndex, include_stale: bool) -> list[RevisionNode]:
        """What ``visible(anchor)`` returns (``include_stale``: stale ones too), in its order:
        the winner of every group, and every record shown under no key that nothing retracts
        or supersedes. Costs what the tree's groups and unkeyed records are, not the path."""
        self.learn_keys([key for key, _ in index.groups], index.unkeyed)
        returned: list[RevisionNode] = []
        for key, scope in index.groups:
            record_id = self.winner(scope, key)
            if record_id is not None:
                returned.append(self._shown_revision(record_id))
        seen: set[str] = set()
        for candidate in index.unkeyed:
            record_id = candidate.record_id
            if record_id in seen:
                continue
            seen.add(record_id)
            shown = self.shown(record_id)
            if shown is None or (shown.key is not None and shown.kind != RETRACTION_KIND):
                continue  # hidden, or a keyed record: its group decides it
            if not (self.retracted(record_id) or self.superseded(record_id)):
                returned.append(shown)
        returned = [r for r in returned if include_stale or not self.stale(r.record_id)]
        return sorted(returned, key=lambda r: (self.position(r), r.record_id))

    def count(self, returned: list[RevisionNode]) -> None:
        """Count the outcome of each record a caller was given (and the missing information
        compat let through for it), as ``View.count`` does for a whole view."""
        for revision in returned:
            self.counts[STALE if self.stale(revision.record_id) else VISIBLE] += 1
            for reason in self.missing.get(revision.record_id, ()):
                self.counts[reason] += 1

    def _shown_number(self, record_id: str) -> int | None:
        shown = self.shown(record_id)
        return None if shown is None else shown.revision

    def _shown_revision(self, record_id: str) -> RevisionNode:
        revision = self.shown(record_id)
        assert revision is not None
        return revision

    def current(self, key: str, scope: str | None) -> RevisionNode | None:
        """What ``visible(anchor, key=key, scope=scope)[-1]`` returns: the best-ranked group
        winner that is not stale (``scope`` None: any scope)."""
        wanted: object = ANY_SCOPE if scope is None else scope
        self.learn_keys([key])
        for _, record_id in self._winners_of(key, wanted):
            if not self.stale(record_id):
                revision = self.shown(record_id)
                assert revision is not None
                self.counts[VISIBLE] += 1
                for reason in self.missing.get(record_id, ()):
                    self.counts[reason] += 1
                return revision
        return None
