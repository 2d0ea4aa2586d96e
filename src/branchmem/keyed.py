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

On a store that reads ahead (``Store.reads_ahead``: a round trip per statement), a read asks
in bulk first (``Store.answer``, which every backend answers completely): the first page
of candidates of every group in one question, then what the rules ask about those records
(revisions, statuses, superseders, retractions naming them, the events of their ancestor
tests) in one question per wave of records discovered, a wave being what those answers name
(a superseder, a retraction, a record source). A backend with round trips answers each
question in one; one without answers from its indexes. Whatever the waves do not cover
(older revisions, a later candidate, a deeper wave) is read one item at a time.

Cases this cannot decide without the whole view (no anchor, a detached anchor or head, whose
partial path makes "undecided" depend on its whole known chain) stay with ``View``;
``engine.views.current`` chooses.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Iterator
from functools import partial
from typing import Protocol

from .model import DETACHED, NO_VIEW, RETRACTION_KIND, STALE, VISIBLE
from .provenance import Gate, RevisionNode
from .questions import Facts, Questions, TreeIndex
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


# Waves of bulk answers a read asks before it asks one at a time: the candidates, then what
# they name, then what that names (a record built on a record that a retraction names).
FACT_WAVES = 3


class KeyedReader(Protocol):
    """The read side of ``branchmem.store.base.Store`` a keyed read needs."""

    @property
    def reads_ahead(self) -> bool:
        """Ask in bulk ahead of need (``Store.reads_ahead``)."""
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
    def answer(self, namespace: str, questions: Questions) -> Facts: ...


class _Learned:
    """The events bulk answers brought, else the store. Apart from the view, so the paths
    that hold it hold no reference back to the view (a cycle only the collector frees)."""

    __slots__ = ("events", "read")

    def __init__(self, events: dict[str, EventNode | None], read: Lookup) -> None:
        self.events, self.read = events, read

    def __call__(self, event_id: str) -> EventNode | None:
        if event_id in self.events:
            return self.events[event_id]
        return self.read(event_id)


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
        self.reader = reader
        self.namespace = namespace
        self._read_event: Lookup = lookup or partial(reader.get_event, namespace)
        self.mode = mode
        self.tree: str = anchor.tree
        self._events: dict[str, EventNode | None] = {}
        # a store that does not read ahead never fills ``_events``: its lookup is the view's
        self._lookup: Lookup = (
            _Learned(self._events, self._read_event) if reader.reads_ahead else self._read_event
        )
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
        # bulk answers (``learn``): complete for the ids and keys they hold
        self._pages: dict[str, list[RevisionNode]] = {}
        self._revisions: dict[str, tuple[RevisionNode, ...]] = {}
        self._statuses: dict[str, str | None] = {}
        self._superseders: dict[str, list[str]] = {}
        self._retracting: dict[str, list[RetractionNode]] = {}
        self._retracting_key: dict[str, list[RetractionNode]] = {}

    # -- bulk answers (one request each on a backend with round trips) -------------------
    def learn_keys(self, keys: Collection[str], unkeyed: Collection[RevisionNode] = ()) -> None:
        """Read the first page of candidates of every key, and what the rules ask about each
        key's first (usually its winner) and about ``unkeyed``, in a few questions; nothing
        where the store does not read ahead (its per-item reads are the cheaper path)."""
        if not self.reader.reads_ahead:
            return
        asked = frozenset(keys) - self._pages.keys()
        if asked:
            depth = self.path.anchor.depth or 0
            facts = self.reader.answer(
                self.namespace, Questions(pages=asked, page_tree=self.tree, page_depth=depth)
            )
            for key in asked:
                self._pages[key] = list(facts.pages.get(key, ()))
        firsts = [self._pages[key][0] for key in asked if self._pages[key]]
        self.learn([*firsts, *unkeyed])

    def learn(self, revisions: Collection[RevisionNode]) -> None:
        """Read in bulk what deciding these revisions' records asks, then what those answers
        name, in at most ``FACT_WAVES`` questions (only where the store reads ahead)."""
        if not self.reader.reads_ahead:
            return
        anchor = self.path.anchor
        record_ids = {node.record_id for node in revisions}
        known = [*revisions]
        steps = {s for s in (anchor.jump, anchor.parent) if s is not None}
        for _ in range(FACT_WAVES):
            record_ids = {i for i in record_ids if i not in self._revisions}
            keys = {node.key for node in known if node.key is not None}
            keys -= self._retracting_key.keys()
            events = {e for node in known for e in _events_of(node)} | steps
            events = {e for e in events if e not in self._statuses or e not in self._events}
            if not (record_ids or keys or events):
                return
            facts = self.reader.answer(
                self.namespace,
                Questions(
                    events=frozenset(events), records=frozenset(record_ids), keys=frozenset(keys)
                ),
            )
            steps = set()
            for event_id, node in facts.events.items():  # steps above the events asked
                self._events.setdefault(event_id, node)
            for item in (*record_ids, *events):
                self._statuses[item] = facts.statuses.get(item)
            for event_id in events:
                self._events[event_id] = facts.events.get(event_id)
            for item in record_ids:
                self._revisions[item] = facts.revisions.get(item, ())
                self._superseders[item] = facts.superseders.get(item, [])
                self._retracting[item] = facts.retracting.get(item, [])
            for key in keys:
                self._retracting_key[key] = facts.retracting_key.get(key, [])
            known = [node for i in record_ids for node in self._revisions[i]]
            record_ids = {
                *(new for i in record_ids for new in self._superseders[i]),
                *(r.id for i in record_ids for r in self._retracting[i]),
                *(r.id for k in keys for r in self._retracting_key[k]),
                *(ref.target for node in known for ref in node.record_refs),
            }

    def _status(self, ids: Collection[str]) -> dict[str, str]:
        if self._statuses and all(item in self._statuses for item in ids):
            return {i: s for i in ids if (s := self._statuses[i]) is not None}
        return self.reader.statuses(self.namespace, ids)

    def _newest_first(self, record_id: str) -> Iterator[RevisionNode]:
        """The record's revisions, newest first: those read in bulk (its newest few), then
        the older ones from the store, only if the rule gets that far."""
        known = self._revisions.get(record_id)
        if known is None:
            yield from self.reader.revisions_newest_first(self.namespace, record_id)
            return
        yield from reversed(known)
        if known and known[0].revision > 1:
            for node in self.reader.revisions_newest_first(self.namespace, record_id):
                if node.revision < known[0].revision:
                    yield node

    def _retractions_naming(self, record_id: str, key: str | None) -> list[RetractionNode]:
        by_target = self._retracting.get(record_id)
        by_key = [] if key is None else self._retracting_key.get(key)
        if by_target is None or by_key is None:
            return self.reader.retractions_naming(self.namespace, record_id, key)
        found = {node.id: node for node in (*by_target, *by_key)}
        return sorted(found.values(), key=lambda node: node.seq)

    def _superseders_of(self, record_id: str) -> list[str]:
        known = self._superseders.get(record_id)
        if known is not None:
            return known
        return self.reader.superseders(self.namespace, [record_id]).get(record_id, [])

    def _candidates(self, key: str) -> Iterator[RevisionNode]:
        """``key_candidates`` in rank order: the page read in bulk, if any, then the rest."""
        everything = self.reader.key_candidates(
            self.namespace, key, self.tree, self.path.anchor.depth or 0, self.cross_tree
        )
        page = self._pages.get(key)
        return everything if page is None else self._after_page(page, everything)

    def _after_page(
        self, page: list[RevisionNode], everything: Iterator[RevisionNode]
    ) -> Iterator[RevisionNode]:
        for index, node in enumerate(page):
            if index == 1:  # the first did not win: the rest of the page, in one request
                self.learn(page[1:])
            yield node
        seen = {(node.record_id, node.revision) for node in page}
        for node in everything:  # a generator: nothing is read unless the page was not enough
            if (node.record_id, node.revision) not in seen:
                yield node

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
            for revision in self._newest_first(record_id):
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
            for node in self._retractions_naming(record_id, revision.key):
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


def _events_of(revision: RevisionNode) -> set[str]:
    """The events deciding a revision asks about: its frontiers (ancestor tests), detached
    sources (their tree) and event sources (their status, for ``stale``)."""
    gate = revision.gate
    return {
        *(frontier.event for frontier in gate.frontiers),
        *gate.detached,
        *(ref.target for ref in revision.event_refs),
    }
