"""The rule (SPEC §3–§5) evaluated for one whole view.

A ``View`` answers for one anchor (plus, cross-tree, each other tree's head). It reads the
frontier index over the view's paths, so its cost is O(path depth + results): records whose
frontier lies off the path are never touched. The decisions are ``branchmem._core.rules``' (the
rule written once, shared with ``keyed.KeyedView``); this module says where a whole view's
candidates come from and answers the gate's questions from its materialised paths. The
reads come first (candidates, one status read, superseders, retractions), then deciding is
one pass over the records shown.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ..model import (
    DETACHED,
    ERASED,
    NO_ANCHOR,
    NO_VIEW,
    OFF_PATH,
    RETRACTED,
    RETRACTION_KIND,
    STALE,
    SUPERSEDED,
    VISIBLE,
    WITHDRAWN,
)
from .provenance import EVENT, Gate, RevisionNode
from .retraction import TREE, RetractionNode
from .rules import (
    COMPAT,
    MISSING_INFORMATION,
    STRICT,
    VISIBLE_GATE,
    GateDecision,
    Position,
    explicitly_superseded,
    retracts,
    stale_in_one_pass,
    superseded_by_key,
)
from .rules import gate as rule_gate
from .rules import position as rule_position
from .topology import EventNode, fork_point, walk_up

__all__ = [
    "COMPAT",
    "MISSING_INFORMATION",
    "STRICT",
    "Decision",
    "GateDecision",
    "Position",
    "View",
    "ViewPath",
    "ViewReader",
]


class ViewReader(Protocol):
    """The read side of ``branchmem.store.base.Store`` that a view needs."""

    def get_event(self, namespace: str, event_id: str) -> EventNode | None: ...
    def path_ids(self, namespace: str, anchor: str) -> list[str]: ...
    def heads(self, namespace: str) -> dict[str, str]: ...
    def get_revisions(self, namespace: str, record_id: str) -> list[RevisionNode]: ...
    def revisions_at(self, namespace: str, event_ids: Collection[str]) -> list[RevisionNode]: ...
    def ungated_revisions(self, namespace: str) -> list[RevisionNode]: ...
    def record_ids(self, namespace: str) -> list[str]: ...
    def pending_on(self, namespace: str, event_id: str) -> list[tuple[str, int]]: ...
    def superseders(self, namespace: str, old_ids: Collection[str]) -> dict[str, list[str]]: ...
    def retractions(self, namespace: str, ids: Collection[str]) -> dict[str, RetractionNode]: ...
    def tree_retractions(self, namespace: str) -> list[RetractionNode]: ...
    def statuses(self, namespace: str, ids: Collection[str]) -> dict[str, str]: ...


@dataclass(frozen=True, slots=True)
class ViewPath:
    """One tree's path in a view: root (or, when detached, the gap) down to its anchor."""

    tree: str | None
    anchor: str
    attached: bool
    ids: tuple[str, ...]
    position: dict[str, int]


@dataclass(slots=True)
class Decision:
    """The outcome for one record in one view."""

    record_id: str
    reason: str
    revision: RevisionNode | None
    source: str | None = None
    fork: str | None = None
    retracted: bool = False
    superseded: bool = False
    stale: bool = False
    missing: tuple[str, ...] = ()

    def returned(self, include_superseded: bool, include_stale: bool) -> bool:
        if self.revision is None or self.reason in (WITHDRAWN, ERASED) or self.retracted:
            return False
        if self.reason not in (VISIBLE, SUPERSEDED, STALE):
            return False
        return (include_superseded or not self.superseded) and (include_stale or not self.stale)


@dataclass
class View:
    """Decisions for every record of one view, computed once and reused."""

    reader: ViewReader
    namespace: str
    anchor: str | None
    mode: str
    cross_tree: bool = False
    counts: Counter[str] = field(default_factory=Counter)
    # the anchor's path ids, root first, when the caller has read them already (a context
    # reads the path's messages anyway): not read again
    anchor_path: Sequence[str] | None = None
    # the anchor's event, when the caller has read it already: not looked up again
    anchor_node: EventNode | None = None

    def __post_init__(self) -> None:
        self.paths: dict[str | None, ViewPath] = {}
        self.main: ViewPath | None = None
        self._shown: dict[str, RevisionNode] | None = None
        self._missing: dict[str, tuple[str, ...]] = {}
        self._decisions: dict[str, Decision] = {}
        self._decided = False
        self._positions: dict[str, Position] = {}
        self._tree_wide: list[RetractionNode] = []
        self._gone: dict[str, str] = {}  # status of every id the view asked about at once
        self.everything = self.anchor is None and self.mode == COMPAT
        if self.anchor is None:
            self.counts[NO_ANCHOR] += 1
            return
        self.main = self._view_path(self.anchor, self.anchor_path, self.anchor_node)
        self.paths[self.main.tree] = self.main
        if self.cross_tree:
            for tree, head in sorted(self.reader.heads(self.namespace).items()):
                if tree != self.main.tree:
                    self.paths[tree] = self._view_path(head)

    # -- paths -------------------------------------------------------------------------
    def lookup(self, event_id: str) -> EventNode | None:
        return self.reader.get_event(self.namespace, event_id)

    def _view_path(
        self, anchor: str, known: Sequence[str] | None = None, node: EventNode | None = None
    ) -> ViewPath:
        if node is None or node.id != anchor:
            node = self.lookup(anchor)
        assert node is not None
        ids = tuple(self.reader.path_ids(self.namespace, anchor) if known is None else known)
        return ViewPath(
            tree=node.tree,
            anchor=anchor,
            attached=node.attached,
            ids=ids,
            position={event_id: index for index, event_id in enumerate(ids)},
        )

    @property
    def partial(self) -> bool:
        return any(not path.attached for path in self.paths.values())

    # -- the gate's questions (``rules.PathAnswers``), answered from materialised paths --
    @property
    def open_anchor(self) -> bool:
        return self.main is not None and self.main.tree is None

    def path_attached(self, tree: str | None) -> bool | None:
        path = self.paths.get(tree)
        return None if path is None else path.attached

    def on_path(self, tree: str | None, event_id: str) -> bool:
        return event_id in self.paths[tree].position

    def detached_status(self, event_id: str) -> tuple[str, str | None]:
        """ON, OFF_PATH, NO_VIEW or DETACHED (undecided) for a source whose ancestry is open."""
        node = self.lookup(event_id)
        assert node is not None
        partial = [path for path in self.paths.values() if not path.attached]
        for path in partial:  # an open chain can never meet a path that reaches a root
            if event_id in path.position:
                return VISIBLE, path.tree
        if partial:  # on no partial path: off it if its chain meets one (sibling evidence)
            chain = {n.id for n in walk_up(node, self.lookup)}
            for path in partial:
                if not chain.isdisjoint(path.position):
                    return OFF_PATH, path.tree
        assert self.main is not None
        if node.tree is None or node.tree in self.paths or self.main.tree is None:
            return DETACHED, None
        return NO_VIEW, None

    # -- the rule (§3, §4) -------------------------------------------------------------
    def gate_decision(self, gate: Gate) -> GateDecision:
        """``rules.gate`` in this view (no anchor: nothing, or everything in compat)."""
        if self.everything:
            return VISIBLE_GATE
        if self.main is None:
            return GateDecision(NO_ANCHOR)
        return rule_gate(gate, self.mode, self)

    def position(self, revision: RevisionNode) -> Position:
        """Where a visible revision stands on the anchor's path: path order, then arrival."""
        main = self.main
        if main is None:
            return rule_position(None, revision.seq)
        best = -1
        if main.attached:
            for frontier in revision.gate.frontiers:
                if frontier.tree == main.tree:
                    best = main.position.get(frontier.event, -1)
                    break
        else:
            for event_id in revision.gate.detached:
                best = max(best, main.position.get(event_id, -1))
        return rule_position(best if best >= 0 else None, revision.seq)

    # -- candidates --------------------------------------------------------------------
    def _candidates(self) -> Iterable[RevisionNode]:
        reader, ns = self.reader, self.namespace
        if self.everything or (self.partial and self.mode == COMPAT):
            for record_id in reader.record_ids(ns):
                yield from reader.get_revisions(ns, record_id)
            return
        attached_ids = [i for p in self.paths.values() if p.attached for i in p.ids]
        yield from reader.revisions_at(ns, attached_ids)
        yield from reader.ungated_revisions(ns)
        seen: set[tuple[str, int]] = set()
        for path in self.paths.values():
            if not path.attached:
                for event_id in path.ids:
                    for key in reader.pending_on(ns, event_id):
                        if key not in seen:
                            seen.add(key)
                            yield reader.get_revisions(ns, key[0])[key[1] - 1]

    def shown(self) -> dict[str, RevisionNode]:
        """record id -> the revision the view shows (highest revision passing the rule).

        One status read answers for the records shown, the tree-wide retractions and the
        event sources of what is shown (withdrawn or erased), so deciding reads no more."""
        if self._shown is not None:
            return self._shown
        shown: dict[str, RevisionNode] = {}
        if self.main is not None or self.everything:
            counts, missing_of = self.counts, self._missing
            for revision in self._candidates():
                held = shown.get(revision.record_id)
                if held is not None and held.revision >= revision.revision:
                    continue
                decision = self.gate_decision(revision.gate)
                for reason in decision.missing:
                    counts[reason] += 1
                if decision.reason != VISIBLE:
                    counts[decision.reason] += 1
                else:
                    shown[revision.record_id] = revision
                    missing_of[revision.record_id] = decision.missing
        if shown:
            self._tree_wide = self.reader.tree_retractions(self.namespace)
        asked = {*shown, *(node.id for node in self._tree_wide)}
        for revision in shown.values():
            asked.update(ref.target for ref in revision.refs or () if ref.kind == EVENT)
        self._gone = self.reader.statuses(self.namespace, asked) if asked else {}
        for record_id in [rid for rid in shown if rid in self._gone]:
            del shown[record_id]
            self._decisions[record_id] = Decision(record_id, self._gone[record_id], None)
        self._shown = shown
        return shown

    # -- invalidation (§5) -------------------------------------------------------------
    def _retracted(self, shown: dict[str, RevisionNode], position: dict[str, Position]) -> set[str]:
        """Records hidden by a retraction acting in this view (``rules.retracts``): the
        branch-scope ones shown here, and every tree-scope one."""
        branch_ids = [rid for rid, rev in shown.items() if rev.kind == RETRACTION_KIND]
        active = [
            node
            for node in (
                self.reader.retractions(self.namespace, branch_ids).values() if branch_ids else ()
            )
            if node.scope != TREE
        ]
        active.extend(self._tree_wide)
        if not active:
            return set()
        by_target: dict[str, list[RetractionNode]] = {}
        by_key: dict[tuple[str | None, str], list[RetractionNode]] = {}
        for node in active:
            for target in node.targets:
                by_target.setdefault(target, []).append(node)
            if node.key is not None:
                by_key.setdefault((node.key_scope, node.key), []).append(node)
        retracted: set[str] = set()
        gone = self._gone
        for record_id, revision in shown.items():
            covering = by_target.get(record_id, [])
            if revision.key is not None:
                covering = covering + by_key.get((revision.scope, revision.key), [])
            here = position[record_id]
            for node in covering:
                if retracts(node, revision, here, position.get(node.id), node.id in gone):
                    retracted.add(record_id)
                    break
        return retracted

    def decisions(self) -> dict[str, Decision]:
        """Decisions for every record the rule let through (and those withdrawn/erased)."""
        shown = self.shown()
        if self._decided:
            return self._decisions
        self._decided = True
        position = {rid: self.position(rev) for rid, rev in shown.items()}
        self._positions = position
        retracted = self._retracted(shown, position)
        superseders = self.reader.superseders(self.namespace, list(shown)) if shown else {}
        explicit = {
            old
            for old, news in superseders.items()
            if explicitly_superseded(news, shown.__contains__)
        }
        superseded = explicit | superseded_by_key(shown, position, retracted | explicit)
        invalid = retracted | superseded
        stale = stale_in_one_pass(shown, invalid, set(self._gone))
        decisions, missing = self._decisions, self._missing
        for record_id, revision in shown.items():
            is_retracted = record_id in retracted
            is_superseded = record_id in superseded
            is_stale = record_id in stale
            reason = (
                RETRACTED
                if is_retracted
                else SUPERSEDED
                if is_superseded
                else STALE
                if is_stale
                else VISIBLE
            )
            decisions[record_id] = Decision(
                record_id,
                reason,
                revision,
                retracted=is_retracted,
                superseded=is_superseded,
                stale=is_stale,
                missing=missing.get(record_id, ()),
            )
        return decisions

    def sort_key(self, revision: RevisionNode) -> tuple[Position, str]:
        """Path order, then arrival, then id: the order ``visible()`` returns records in."""
        known = self._positions.get(revision.record_id)
        return (known if known is not None else self.position(revision), revision.record_id)

    # -- single records ----------------------------------------------------------------
    def decide(self, record_id: str) -> Decision:
        """The decision for any record, explaining those the rule hid as well."""
        decisions = self.decisions()
        known = decisions.get(record_id)
        if known is not None:
            return known
        revisions = self.reader.get_revisions(self.namespace, record_id)
        assert revisions, record_id
        status = self.reader.statuses(self.namespace, [record_id]).get(record_id)
        if status is not None:
            return Decision(record_id, status, None)
        latest = revisions[-1]
        if self.main is None and not self.everything:
            return Decision(record_id, NO_ANCHOR, None)
        gate = self.gate_decision(latest.gate)
        fork = None
        if gate.reason == OFF_PATH and gate.source is not None:
            source = self.lookup(gate.source)
            assert source is not None
            fork = fork_point(source, set(self.paths[gate.tree].position), self.lookup)
        return Decision(record_id, gate.reason, latest, source=gate.source, fork=fork)

    def count(self, decisions: Iterable[Decision]) -> None:
        """Count the outcome of each record the caller asked about or was given."""
        for decision in decisions:
            self.counts[decision.reason] += 1
