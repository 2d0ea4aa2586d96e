"""The rule (SPEC §3–§5) evaluated for one view.

A ``View`` answers for one anchor (plus, cross-tree, each other tree's head). It reads the
frontier index over the view's paths, so its cost is O(path depth + results): records whose
frontier lies off the path are never touched. Invalidation (§5) is then decided among the
records that passed the rule, because only a visible record can supersede or retract.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from .model import (
    DETACHED,
    ERASED,
    INCONSISTENT_SOURCES,
    LEGACY,
    NO_ANCHOR,
    NO_VIEW,
    OFF_PATH,
    RETRACTED,
    RETRACTION_KIND,
    STALE,
    SUPERSEDED,
    UNKNOWN_SOURCE,
    VISIBLE,
    WITHDRAWN,
)
from .provenance import Gate, RevisionNode
from .retraction import TREE, RetractionNode
from .topology import EventNode, fork_point, walk_up

STRICT = "strict"
COMPAT = "compat"

# Decisions for missing information: hidden in strict mode, let through (and counted) in compat.
MISSING_INFORMATION = (LEGACY, UNKNOWN_SOURCE, DETACHED)

Position = tuple[int, int, int]


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


@dataclass(frozen=True, slots=True)
class GateDecision:
    reason: str  # VISIBLE or why not
    source: str | None = None
    path: ViewPath | None = None
    missing: tuple[str, ...] = ()  # missing-information reasons compat let through


VISIBLE_GATE = GateDecision(VISIBLE)


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

    def __post_init__(self) -> None:
        self.paths: dict[str | None, ViewPath] = {}
        self.main: ViewPath | None = None
        self._shown: dict[str, RevisionNode] | None = None
        self._missing: dict[str, tuple[str, ...]] = {}
        self._decisions: dict[str, Decision] = {}
        self._decided = False
        self._positions: dict[str, Position] = {}
        self.everything = self.anchor is None and self.mode == COMPAT
        if self.anchor is None:
            self.counts[NO_ANCHOR] += 1
            return
        self.main = self._view_path(self.anchor, self.anchor_path)
        self.paths[self.main.tree] = self.main
        if self.cross_tree:
            for tree, head in sorted(self.reader.heads(self.namespace).items()):
                if tree != self.main.tree:
                    self.paths[tree] = self._view_path(head)

    # -- paths -------------------------------------------------------------------------
    def lookup(self, event_id: str) -> EventNode | None:
        return self.reader.get_event(self.namespace, event_id)

    def _view_path(self, anchor: str, known: Sequence[str] | None = None) -> ViewPath:
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

    # -- the rule (§3, §4) -------------------------------------------------------------
    def gate_decision(self, gate: Gate) -> GateDecision:
        """Apply the rule to a revision's gate; precedence: positive evidence first."""
        if self.everything:
            return GateDecision(VISIBLE)
        if self.main is None:
            return GateDecision(NO_ANCHOR)
        if len(gate.frontiers) == 1 and not (gate.detached or gate.unknown or gate.legacy):
            only = gate.frontiers[0]  # the common case: one tree, nothing missing
            path = self.paths.get(only.tree)
            if only.conflict is None and path is not None and path.attached:
                return (
                    VISIBLE_GATE
                    if only.event in path.position
                    else GateDecision(OFF_PATH, only.event, path)
                )
        if not gate.consistent:
            conflict = next(f.conflict for f in gate.frontiers if f.conflict is not None)
            return GateDecision(INCONSISTENT_SOURCES, conflict)
        off: GateDecision | None = None
        no_view: GateDecision | None = None
        undecided: str | None = None
        for frontier in gate.frontiers:
            path = self.paths.get(frontier.tree)
            if path is not None and path.attached:
                if frontier.event not in path.position and off is None:
                    off = GateDecision(OFF_PATH, frontier.event, path)
            elif path is not None or self.main.tree is None:
                undecided = undecided or frontier.event
            elif no_view is None:
                no_view = GateDecision(NO_VIEW, frontier.event)
        for event_id in sorted(gate.detached):
            status, path = self._detached_status(event_id)
            if status == OFF_PATH and off is None:
                off = GateDecision(OFF_PATH, event_id, path)
            elif status == NO_VIEW and no_view is None:
                no_view = GateDecision(NO_VIEW, event_id)
            elif status == DETACHED:
                undecided = undecided or event_id
        if off is not None:
            return off
        if no_view is not None:
            return no_view
        missing: list[tuple[str, str | None]] = []
        if gate.legacy:
            missing.append((LEGACY, None))
        if gate.unknown:
            missing.append((UNKNOWN_SOURCE, min(gate.unknown)))
        if undecided is not None:
            missing.append((DETACHED, undecided))
        if missing and self.mode == STRICT:
            return GateDecision(missing[0][0], missing[0][1])
        return GateDecision(VISIBLE, missing=tuple(reason for reason, _ in missing))

    def _detached_status(self, event_id: str) -> tuple[str, ViewPath | None]:
        """ON, OFF_PATH, NO_VIEW or DETACHED (undecided) for a source whose ancestry is open."""
        node = self.lookup(event_id)
        assert node is not None
        partial = [path for path in self.paths.values() if not path.attached]
        for path in partial:  # an open chain can never meet a path that reaches a root
            if event_id in path.position:
                return VISIBLE, path
        if partial:  # on no partial path: off it if its chain meets one (sibling evidence)
            chain = {n.id for n in walk_up(node, self.lookup)}
            for path in partial:
                if not chain.isdisjoint(path.position):
                    return OFF_PATH, path
        assert self.main is not None
        if node.tree is None or node.tree in self.paths or self.main.tree is None:
            return DETACHED, None
        return NO_VIEW, None

    def position(self, revision: RevisionNode) -> Position:
        """Where a visible revision stands on the anchor's path: path order, then arrival."""
        main = self.main
        if main is None:
            return (0, 0, revision.seq)
        best = -1
        frontier = revision.gate.frontier_in(main.tree)
        if main.attached and frontier is not None and frontier.event in main.position:
            best = main.position[frontier.event]
        if not main.attached:
            for event_id in revision.gate.detached:
                best = max(best, main.position.get(event_id, -1))
        return (1, best, revision.seq) if best >= 0 else (0, 0, revision.seq)

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
        """record id -> the revision the view shows (highest revision passing the rule)."""
        if self._shown is not None:
            return self._shown
        shown: dict[str, RevisionNode] = {}
        if self.main is not None or self.everything:
            for revision in self._candidates():
                held = shown.get(revision.record_id)
                if held is not None and held.revision >= revision.revision:
                    continue
                decision = self.gate_decision(revision.gate)
                for reason in decision.missing:
                    self.counts[reason] += 1
                if decision.reason != VISIBLE:
                    self.counts[decision.reason] += 1
                else:
                    shown[revision.record_id] = revision
                    self._missing[revision.record_id] = decision.missing
        statuses = self.reader.statuses(self.namespace, list(shown))
        for record_id, status in statuses.items():
            del shown[record_id]
            self._decisions[record_id] = Decision(record_id, status, None)
        self._shown = shown
        return shown

    # -- invalidation (§5) -------------------------------------------------------------
    def _retracted(self, shown: dict[str, RevisionNode], position: dict[str, Position]) -> set[str]:
        """Records hidden by a retraction acting in this view (branch: visible here; tree:
        always), when stated at or above it on the path (branch) or before it (tree)."""
        branch_ids = [rid for rid, rev in shown.items() if rev.kind == RETRACTION_KIND]
        active = [
            node
            for node in self.reader.retractions(self.namespace, branch_ids).values()
            if node.scope != TREE
        ]
        tree_wide = self.reader.tree_retractions(self.namespace)
        gone = self.reader.statuses(self.namespace, [node.id for node in tree_wide])
        active.extend(node for node in tree_wide if node.id not in gone)
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
        for record_id, revision in shown.items():
            if revision.kind == RETRACTION_KIND:
                continue
            covering = by_target.get(record_id, [])
            if revision.key is not None:
                covering = covering + by_key.get((revision.scope, revision.key), [])
            for node in covering:
                if (node.scope == TREE and revision.seq < node.seq) or (
                    node.scope != TREE and position[record_id] <= position[node.id]
                ):
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
        explicit = {
            old
            for old, news in self.reader.superseders(self.namespace, list(shown)).items()
            if any(new in shown for new in news)
        }
        superseded = set(explicit)
        current: dict[tuple[str | None, str], str] = {}
        for record_id, revision in shown.items():
            if revision.key is None or revision.kind == RETRACTION_KIND:
                continue
            if record_id in retracted or record_id in explicit:
                continue
            group = (revision.scope, revision.key)
            held = current.get(group)
            if held is None:
                current[group] = record_id
            elif position[record_id] > position[held]:
                superseded.add(held)
                current[group] = record_id
            else:
                superseded.add(record_id)
        invalid = retracted | superseded
        event_sources = {ref.target for rev in shown.values() for ref in rev.event_refs}
        withdrawn_events = set(self.reader.statuses(self.namespace, event_sources))
        stale: dict[str, bool] = {}

        def is_stale(record_id: str) -> bool:
            """Built on something this view does not show as it was when it was built."""
            known = stale.get(record_id)
            if known is not None:
                return known
            stale[record_id] = False  # provisional; sources never cycle back (CycleError)
            revision = shown[record_id]
            found = any(ref.target in withdrawn_events for ref in revision.event_refs)
            for ref in revision.record_refs:
                if found:
                    break
                source = shown.get(ref.target)
                found = (
                    source is None
                    or source.revision != ref.revision
                    or ref.target in invalid
                    or is_stale(ref.target)
                )
            stale[record_id] = found
            return found

        for record_id, revision in shown.items():
            flags = (record_id in retracted, record_id in superseded, is_stale(record_id))
            reason = (
                RETRACTED
                if flags[0]
                else SUPERSEDED
                if flags[1]
                else STALE
                if flags[2]
                else VISIBLE
            )
            self._decisions[record_id] = Decision(
                record_id,
                reason,
                revision,
                retracted=flags[0],
                superseded=flags[1],
                stale=flags[2],
                missing=self._missing.get(record_id, ()),
            )
        return self._decisions

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
        if gate.reason == OFF_PATH and gate.path is not None and gate.source is not None:
            source = self.lookup(gate.source)
            assert source is not None
            fork = fork_point(source, set(gate.path.position), self.lookup)
        return Decision(record_id, gate.reason, latest, source=gate.source, fork=fork)

    def count(self, decisions: Iterable[Decision]) -> None:
        """Count the outcome of each record the caller asked about or was given."""
        for decision in decisions:
            self.counts[decision.reason] += 1
