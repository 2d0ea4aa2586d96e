"""Effective sources, reduced to a gate per revision (SPEC §2, §7).

A revision's effective sources are its event sources plus, transitively, the effective
sources of the record revisions it cites. Visibility only ever asks "is every one of them on
the view's path?", and within one tree that question has a compact answer: if all sources
of the tree lie on one root path, they are all ancestors-or-self of the deepest one (the
*frontier*), so they are all on the anchor's path exactly when the frontier is. The gate
therefore keeps, per tree, the frontier plus whether the sources are consistent (lie on one
path); gates of cited records merge into the citer's gate without expanding the source set.
Sources the engine cannot place yet (detached events, unknown ids) are kept by id so the
decision can be made exactly and recomputed when the missing topology arrives.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ..model import positional_constructor
from .topology import EventNode, Lookup, is_ancestor_or_self

_PIN = re.compile(r"^(?P<record>.+)@(?P<revision>[1-9][0-9]*)$")

EVENT = "event"
RECORD = "record"
UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class SourceRef:
    """One entry of a revision's ``sources``, resolved (or not yet) to an event or a revision."""

    text: str
    kind: str  # EVENT, RECORD or UNKNOWN
    target: str  # event id, record id, or the unresolved text's id part
    revision: int | None = None  # for RECORD: the pinned revision
    explicit_pin: bool = False  # the text named the revision ("id@2")


@dataclass(frozen=True, slots=True)
class TreeFrontier:
    """The deepest effective source of a revision in one tree."""

    tree: str
    event: str
    depth: int
    conflict: str | None = None  # a source in this tree that is not on the frontier's path


@dataclass(frozen=True, slots=True)
class Gate:
    """Everything visibility needs to know about a revision's effective sources."""

    frontiers: tuple[TreeFrontier, ...] = ()
    detached: frozenset[str] = field(default_factory=frozenset)
    unknown: frozenset[str] = field(default_factory=frozenset)
    legacy: bool = False

    @property
    def consistent(self) -> bool:
        # a list, not a generator: most gates have one frontier, and a generator costs more
        return all([frontier.conflict is None for frontier in self.frontiers])

    @property
    def flagged(self) -> bool:
        """True when strict mode must hide the revision for missing information."""
        return self.legacy or bool(self.unknown) or bool(self.detached)

    def frontier_in(self, tree: str | None) -> TreeFrontier | None:
        for frontier in self.frontiers:
            if frontier.tree == tree:
                return frontier
        return None


LEGACY_GATE = Gate(legacy=True)
EMPTY_GATE = Gate()
_NO_NAMES: frozenset[str] = frozenset()
# built through their slots (a frozen ``__init__`` sets each field through a guarded
# ``setattr``): every revision written builds a gate, and merging builds frontiers
_new_gate = positional_constructor(Gate)
_new_frontier = positional_constructor(TreeFrontier)


def parse_pin(text: str) -> tuple[str, int] | None:
    """``"summary-1@2"`` -> ("summary-1", 2); None when the text names no revision."""
    if "@" not in text:  # most sources: an id, asked on every source of every batch
        return None
    match = _PIN.match(text)
    if match is None:
        return None
    return match.group("record"), int(match.group("revision"))


def event_gate(node: EventNode) -> Gate:
    if node.attached:
        assert node.tree is not None and node.depth is not None
        frontier = _new_frontier(node.tree, node.id, node.depth, None)
        return _new_gate((frontier,), _NO_NAMES, _NO_NAMES, False)
    return _new_gate((), frozenset((node.id,)), _NO_NAMES, False)


def _merge_frontier(a: TreeFrontier, b: TreeFrontier, lookup: Lookup) -> TreeFrontier:
    deep, shallow = (a, b) if (a.depth, a.event) >= (b.depth, b.event) else (b, a)
    conflict = deep.conflict or shallow.conflict
    if conflict is None and shallow.event != deep.event:
        shallow_node, deep_node = lookup(shallow.event), lookup(deep.event)
        assert shallow_node is not None and deep_node is not None
        if not is_ancestor_or_self(shallow_node, deep_node, lookup):
            conflict = shallow.event
    if conflict == deep.conflict:
        return deep  # the same value: nothing new to build
    return _new_frontier(deep.tree, deep.event, deep.depth, conflict)


def merge_gates(gates: Iterable[Gate], lookup: Lookup) -> Gate:
    """The gate of the union of several source sets."""
    by_tree: dict[str, TreeFrontier] = {}
    detached: set[str] = set()
    unknown: set[str] = set()
    legacy = False
    for gate in gates:
        if gate.legacy:
            legacy = True
        if gate.detached:
            detached |= gate.detached
        if gate.unknown:
            unknown |= gate.unknown
        for frontier in gate.frontiers:
            known = by_tree.get(frontier.tree)
            by_tree[frontier.tree] = (
                frontier if known is None else _merge_frontier(known, frontier, lookup)
            )
    return _new_gate(
        tuple(by_tree[tree] for tree in sorted(by_tree)),
        frozenset(detached) if detached else _NO_NAMES,
        frozenset(unknown) if unknown else _NO_NAMES,
        legacy,
    )


def compute_gate(
    refs: tuple[SourceRef, ...] | None,
    lookup: Lookup,
    revision_gate: Callable[[str, int], Gate | None],
) -> Gate:
    """The gate of a revision from its resolved source references."""
    if refs is None:
        return LEGACY_GATE
    if len(refs) == 1 and refs[0].kind == EVENT:  # a fact's one event: nothing to merge
        node = lookup(refs[0].target)
        assert node is not None
        return event_gate(node)
    parts: list[Gate] = []
    for ref in refs:
        if ref.kind == EVENT:
            node = lookup(ref.target)
            assert node is not None
            parts.append(event_gate(node))
        elif ref.kind == RECORD:
            assert ref.revision is not None
            cited = revision_gate(ref.target, ref.revision)
            parts.append(cited if cited is not None else Gate(unknown=frozenset((ref.text,))))
        else:
            parts.append(Gate(unknown=frozenset((ref.text,))))
    return merge_gates(parts, lookup)


@dataclass(frozen=True, slots=True)
class RevisionNode:
    """A stored revision: what the caller wrote plus its resolved sources and gate."""

    record_id: str
    revision: int
    kind: str
    content: str
    sources: tuple[str, ...] | None
    refs: tuple[SourceRef, ...] | None
    key: str | None
    scope: str | None
    meta: dict[str, object]
    seq: int
    gate: Gate

    @property
    def record_refs(self) -> tuple[SourceRef, ...]:
        return tuple(ref for ref in self.refs or () if ref.kind == RECORD)

    @property
    def event_refs(self) -> tuple[SourceRef, ...]:
        return tuple(ref for ref in self.refs or () if ref.kind == EVENT)


# a revision built through its slots, its fields in order (every revision written or read
# builds one)
new_revision = positional_constructor(RevisionNode)


def path_places(tree: str | None, revisions: Iterable[RevisionNode]) -> dict[str, int | None]:
    """Where each revision's sources stand on an anchor's path in ``tree`` (SPEC §5's path
    order): the depth of its frontier there, None with none there (a record placed in
    another tree of a cross-tree view); nothing without a tree (no anchor, or a detached
    one). What a ranking orders by, asked here once so that it never needs the anchor."""
    if tree is None:
        return {}
    found: dict[str, int | None] = {}
    for revision in revisions:
        frontier = revision.gate.frontier_in(tree)
        found[revision.record_id] = None if frontier is None else frontier.depth
    return found
